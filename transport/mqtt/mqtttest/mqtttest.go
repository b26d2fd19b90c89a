/*
Package mqtttest starts MQTT v5 brokers for tests: Debian's mosquitto on a
free loopback port with a generated configuration file, and the embedded
broker of transport/mqtt/broker. Each is stopped when the test ends.

End-to-end tests run against both, each broker started inside its own
subtest:

	mqtttest.ForEach(t, func(t *testing.T, b mqtttest.Broker) {
		// connect to b.URL()
	})

or, where the subtest's body should keep its place:

	for _, name := range mqtttest.BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := mqtttest.Start(t, name)
			// connect to b.URL()
		})
	}

mosquitto is mandatory: when its binary is missing the test that starts
it fails (never skips) and says how to install it (apt-get install -y
mosquitto). Since each broker starts in its own subtest, only the mosquitto
subtests fail then; the embedded broker's subtests run and pass without
it. Its
configuration sets what docs/protocol.md §12 says changes results:
set_tcp_nodelay (without it every QoS 1 request/reply stalls about 44 ms),
and raised queue and in-flight limits (at the defaults a wildcard
subscription receives 1,020 of 10,000 retained cards, silently); it bounds
packets to 1 MiB like the embedded broker. [WithPasswordFile] secures
both brokers as docs/protocol.md §13 describes. One limit
stays: mosquitto 2.0.11 never delivers a $-prefixed topic such as
$a2a/v1/request/…/pool/… to a $share subscription, so agent pools run on the
embedded broker only (a test of this package pins it).
*/
package mqtttest

import (
	"log/slog"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Broker is a broker started for a test.
type Broker interface {
	// Name is NameEmbedded or NameMosquitto, for subtest names.
	Name() string
	// URL is "mqtt://127.0.0.1:PORT".
	URL() string
	// Addr is "127.0.0.1:PORT".
	Addr() string
	// Restart stops the broker and starts it again on the same port with
	// the same persistence (see WithPersistence), failing the test on
	// error. Clients see their connection drop.
	Restart()
	// Stop stops the broker (it is also stopped when the test ends).
	Stop()
}

// Names of the brokers.
const (
	NameEmbedded  = "embedded"
	NameMosquitto = "mosquitto"
)

// Option configures a broker.
type Option func(*options)

type options struct {
	persistence   bool
	status        bool
	mosquittoBin  string
	mosquittoConf []string
	logger        *slog.Logger
	passwordFile  string
	aclFile       string
	root          mqttbind.Root
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithPersistence keeps sessions and retained messages across Restart:
// mosquitto's persistence (saved when it stops) in a temporary directory,
// the embedded broker's DataDir.
func WithPersistence() Option {
	return func(o *options) { o.persistence = true }
}

// WithBrokerStatus turns on the embedded broker's broker-managed status.
// mosquitto has none: StartMosquitto (and Brokers) fail the test when
// given it.
func WithBrokerStatus() Option {
	return func(o *options) { o.status = true }
}

// WithMosquittoBinary runs the mosquitto binary at path instead of the one
// found on PATH or in /usr/sbin.
func WithMosquittoBinary(path string) Option {
	return func(o *options) { o.mosquittoBin = path }
}

// WithMosquittoConfig appends lines to mosquitto's generated configuration
// (a later line overrides an earlier one).
func WithMosquittoConfig(lines ...string) Option {
	return func(o *options) { o.mosquittoConf = append(o.mosquittoConf, lines...) }
}

// WithLogger sends the embedded broker's log to l (it is discarded by
// default). mosquitto's log is shown when the test fails.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithPasswordFile turns on authentication and authorization with the
// users of a password file (mosquitto 2.0's password_file format, as
// broker.PasswordFile and a2a passwd write it). The embedded broker gets
// it as broker.Config.PasswordFile (its identity rules apply, see
// docs/protocol.md §13). mosquitto gets password_file, allow_anonymous
// false, use_username_as_clientid true and an acl_file holding
// broker.MosquittoACL of the file's users, followed by the lines of
// WithACLFile's file if one is given (docs/protocol.md §13.4 says what
// mosquitto can and cannot refuse).
func WithPasswordFile(path string) Option {
	return func(o *options) { o.passwordFile = path }
}

// WithACLFile adds the rules of an ACL file (mosquitto's acl_file syntax):
// broker.Config.ACLFile for the embedded broker, appended to the generated
// acl_file for mosquitto (so it must not use the embedded broker's
// clientid lines, which mosquitto refuses). It needs WithPasswordFile.
func WithACLFile(path string) Option {
	return func(o *options) { o.aclFile = path }
}

// WithRoot sets the topic root the broker's A2A rules apply under
// (docs/protocol.md §1.5): the embedded broker's Config.Root, and the
// topics of mosquitto's acl_file under WithPasswordFile
// (broker.MosquittoACLUnder). The zero Root is the profile's.
func WithRoot(root mqttbind.Root) Option {
	return func(o *options) { o.root = root }
}

// BrokerNames are the names of the brokers end-to-end tests run on, in
// the order they run: NameEmbedded, then NameMosquitto. Give each to Start
// inside the subtest of that name.
func BrokerNames() []string { return []string{NameEmbedded, NameMosquitto} }

// Start starts the broker called name (NameEmbedded or NameMosquitto) for
// t, as StartEmbedded or StartMosquitto would; an unknown name fails the
// test. Call it inside the broker's own subtest, so that a missing
// mosquitto fails that subtest alone.
func Start(t testing.TB, name string, opts ...Option) Broker {
	t.Helper()
	switch name {
	case NameEmbedded:
		return StartEmbedded(t, opts...)
	case NameMosquitto:
		return StartMosquitto(t, opts...)
	}
	t.Fatalf("mqtttest: no broker %q (want %s or %s)", name, NameEmbedded, NameMosquitto)
	return nil
}

// ForEach runs fn in one subtest per broker of BrokerNames, named after
// it, each broker started with opts inside its subtest (and stopped when
// that subtest ends). A broker that cannot start, such as a missing
// mosquitto, fails its own subtest only.
func ForEach(t *testing.T, fn func(t *testing.T, b Broker), opts ...Option) {
	t.Helper()
	for _, name := range BrokerNames() {
		t.Run(name, func(t *testing.T) { fn(t, Start(t, name, opts...)) })
	}
}
