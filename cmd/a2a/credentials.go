package main

// Credentials: the broker connection's user name, password and TLS
// configuration (a2a agent, send, watch, demo --broker), and the bearer
// token of a2a send. Secrets come from files or the environment, never
// from a flag value, which any user on the machine can read in ps, except
// a password in the broker URL (mqtt://user:pass@host, as mosquitto_pub -L
// takes it), which is accepted with a warning; they are never printed, and
// no error message quotes them: the broker URL is printed, logged and put
// in a card without its userinfo.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/mqttbind"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// The environment variables of the credentials; a flag takes precedence.
const (
	envUsername = "A2A_USERNAME"
	envPassword = "A2A_PASSWORD"
	envToken    = "A2A_TOKEN"
)

// maxSecretFile bounds what is read of a password or token file.
const maxSecretFile = 64 << 10

// connFlags are the flags of a broker connection's credentials and TLS.
type connFlags struct {
	// cmd names the command in warnings ("a2a send").
	cmd                       string
	username, passwordFile    *string
	caFile, certFile, keyFile *string
	// connectTimeout is --connect-timeout.
	connectTimeout *time.Duration
	// brokerFrom says where the broker URL comes from ("--broker",
	// "$A2A_BROKER", brokerOf), for its errors.
	brokerFrom string
}

// defaultConnectTimeout is --connect-timeout's default: how long a
// command tries to connect to the broker before it gives up, exit status
// 3 (a2a agent: 10 s, as the library's default).
const defaultConnectTimeout = 5 * time.Second

// credentialFlags are the names of the flags that authenticate to a broker;
// tlsFlags those that configure TLS.
var (
	credentialFlags = []string{"username", "password-file"}
	tlsFlags        = []string{"ca-file", "cert-file", "key-file", "cafile", "cert", "key"}
)

func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{
		cmd: fs.Name(),
		username: fs.String("username", "", "MQTT user name (default: the broker URL's, mqtt://USER@host:port, else $"+envUsername+
			"; a different user name in the URL is an error)"),
		passwordFile: fs.String("password-file", "", "read the MQTT password from the first line of this file (default: the broker URL's, "+
			"mqtt://USER:PASSWORD@host:port, shown in ps and kept in the shell's history, else $"+envPassword+"; a different password in the URL is an error)"),
		caFile:   fs.String("ca-file", "", "TLS: PEM certificates of the authorities that sign the server's certificate (default: the system's)"),
		certFile: fs.String("cert-file", "", "TLS: PEM client certificate, with --key-file"),
		keyFile:  fs.String("key-file", "", "TLS: PEM private key of --cert-file"),
		connectTimeout: fs.Duration("connect-timeout", defaultConnectTimeout, "give up connecting to the broker after this long (exit status 3), "+
			"naming it; it also bounds the subscriptions after each reconnect"),
		brokerFrom: "--broker",
	}
	// mosquitto_pub's names of the TLS flags.
	fs.StringVar(c.caFile, "cafile", "", "the same as --ca-file")
	fs.StringVar(c.certFile, "cert", "", "the same as --cert-file")
	fs.StringVar(c.keyFile, "key", "", "the same as --key-file")
	return c
}

// brokerUserinfo splits a broker URL's credentials off: it returns the
// URL without its userinfo (what is printed, logged and put in a card),
// and the user name and password the userinfo held (RFC 3986 §3.2.1,
// percent-decoded; hasPassword is false for none or an empty one). A URL
// that does not parse is returned as it is, with no credentials.
func brokerUserinfo(brokerURL string) (bare, user string, password []byte, hasPassword bool) {
	u, err := url.Parse(brokerURL)
	if err != nil || u.User == nil {
		return brokerURL, "", nil, false
	}
	user = u.User.Username()
	p, ok := u.User.Password()
	u.User = nil
	return u.String(), user, []byte(p), ok && p != ""
}

// user returns the user name and where it comes from: --username, else
// the user name in brokerURL ("" for none), else $A2A_USERNAME. A
// --username that differs from the URL's is a usage error (exit 2).
func (c *connFlags) user(brokerURL string) (name, from string, err error) {
	_, inURL, _, _ := brokerUserinfo(brokerURL)
	switch {
	case *c.username != "" && inURL != "" && inURL != *c.username:
		return "", "", fail(exitUsage, "--username %s and the user name %s in the --broker URL differ: give the user name once", *c.username, inURL)
	case *c.username != "":
		return *c.username, "--username", nil
	case inURL != "":
		return inURL, "the --broker URL", nil
	}
	return os.Getenv(envUsername), "$" + envUsername, nil
}

// identityOf splits a user name that is an A2A Client ID
// {org_id}/{unit_id}/{agent_id} (docs/protocol.md §1.1); ok is false for
// any other user name.
func identityOf(user string) (org, unit, id string, ok bool) {
	org, rest, ok1 := strings.Cut(user, "/")
	unit, id, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || !mqttbind.ValidIdentifier(org) || !mqttbind.ValidIdentifier(unit) || !mqttbind.ValidIdentifier(id) {
		return "", "", "", false
	}
	return org, unit, id, true
}

// fromUsername fills in what a user name of the form {org}/{unit}/{id}
// implies: a broker with a password file admits a user under one Client
// ID, its user name (docs/protocol.md §13.1), so the client's org, unit and
// own id are the user name's. Flags left empty are filled in; a flag given
// with another value is a usage error (exit 2). from says where the user
// name comes from (connFlags.user); names are the flags of org, unit and
// id ("" for one the command does not derive); a user name of another form
// changes nothing.
func fromUsername(user, from string, names [3]string, values [3]*string) error {
	org, unit, id, ok := identityOf(user)
	if !ok {
		return nil
	}
	for i, implied := range [3]string{org, unit, id} {
		switch v := values[i]; {
		case names[i] == "":
		case *v == "":
			*v = implied
		case *v != implied:
			return fail(exitUsage, "--%s %s conflicts with the user name %s (from %s): a broker with a password file admits a user only under its own Client ID, so that user is %s %s here; leave --%s out, or log in as the user you mean",
				names[i], *v, user, from, names[i], implied, names[i])
		}
	}
	return nil
}

// connection returns the connection to brokerURL with the user name
// (--username, else the URL's, else $A2A_USERNAME), the password
// (--password-file, else the URL's, else $A2A_PASSWORD) and TLS
// (--ca-file, --cert-file, --key-file) configured. Its Broker is the URL
// without its userinfo: the credentials go in Username and Password only,
// so nothing that prints, logs or publishes the URL (brokerError, the
// agent's card) shows them. A password in the URL is taken with a warning
// on stderr: any user of the machine can read it in ps. Errors are exit
// status 2 for the command line (a user name or password in both a flag
// and the URL that differ), 1 for a URL that is no broker URL or a file
// that cannot be read; none quotes a secret.
func (c *connFlags) connection(brokerURL string, stderr io.Writer) (a2amqtt.Connection, error) {
	if _, err := a2amqtt.ParseBrokerURL(brokerURL); err != nil {
		// The message quotes the URL redacted.
		return a2amqtt.Connection{Broker: a2amqtt.RedactBrokerURL(brokerURL)}, fail(exitUsage, "%s: %s", c.brokerFrom, strings.TrimPrefix(err.Error(), "mqtt: "))
	}
	if *c.connectTimeout <= 0 {
		return a2amqtt.Connection{Broker: a2amqtt.RedactBrokerURL(brokerURL)}, fail(exitUsage, "--connect-timeout must be positive")
	}
	bare, _, urlPassword, inURL := brokerUserinfo(brokerURL)
	conn := a2amqtt.Connection{Broker: bare, ConnectTimeout: *c.connectTimeout}
	user, _, err := c.user(brokerURL)
	if err != nil {
		return conn, err
	}
	u, err := url.Parse(bare)
	tlsURL := err == nil && isTLSScheme(u.Scheme)
	if c.tlsSet() && !tlsURL {
		return conn, fail(exitUsage, "--%s goes with an mqtts:// (or ssl://, tls://) broker URL", c.firstTLSFlag())
	}
	if conn.TLS, err = c.tlsConfig(); err != nil {
		return conn, err
	}
	conn.Username = user
	switch {
	case *c.passwordFile != "":
		p, err := firstLine("password-file", *c.passwordFile)
		if err != nil {
			return conn, err
		}
		if inURL && !bytes.Equal(p, urlPassword) {
			return conn, fail(exitUsage, "--password-file %s and the --broker URL give different passwords: give the password once, with --password-file", *c.passwordFile)
		}
		conn.Password = p
	case inURL:
		conn.Password = urlPassword
	default:
		if p := os.Getenv(envPassword); p != "" {
			conn.Password = []byte(p)
		}
	}
	if inURL {
		warnPasswordIn(stderr, c.cmd, "the --broker URL", "--password-file FILE (or $"+envPassword+")")
	}
	return conn, nil
}

// warnPasswordIn prints the one-line warning of a password given in a
// flag's value (what: "the --broker URL"), which any user of the machine
// can read in ps and which the shell's history keeps; instead says how to
// give it.
func warnPasswordIn(stderr io.Writer, cmd, what, instead string) {
	fmt.Fprintf(stderr, "%s: warning: %s holds a password, which every user of this machine can read in ps and which stays in the shell's history: give it with %s instead\n",
		cmd, what, instead)
}

// httpClient returns an HTTP client with the TLS flags applied, nil (the
// transport's default client) when none is set. rawURL must then be
// https://.
func (c *connFlags) httpClient(rawURL string) (*http.Client, error) {
	if !c.tlsSet() {
		return nil, nil
	}
	if u, err := url.Parse(rawURL); err != nil || u.Scheme != "https" {
		return nil, fail(exitUsage, "--%s goes with an https:// URL", c.firstTLSFlag())
	}
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}

func (c *connFlags) tlsSet() bool {
	return *c.caFile != "" || *c.certFile != "" || *c.keyFile != ""
}

func (c *connFlags) firstTLSFlag() string {
	for i, v := range []string{*c.caFile, *c.certFile, *c.keyFile} {
		if v != "" {
			return tlsFlags[i]
		}
	}
	return tlsFlags[0]
}

// tlsConfig builds the TLS configuration of the flags, nil when none is
// set (a TLS URL then uses the system's authorities and no client
// certificate).
func (c *connFlags) tlsConfig() (*tls.Config, error) {
	if !c.tlsSet() {
		return nil, nil
	}
	if (*c.certFile == "") != (*c.keyFile == "") {
		return nil, fail(exitUsage, "give --cert-file and --key-file together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if *c.caFile != "" {
		pem, err := os.ReadFile(*c.caFile)
		if err != nil {
			return nil, fail(exitFailed, "--ca-file: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fail(exitFailed, "--ca-file %s: no PEM certificate in it", *c.caFile)
		}
	}
	if *c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(*c.certFile, *c.keyFile)
		if err != nil {
			return nil, fail(exitFailed, "--cert-file %s, --key-file %s: %v", *c.certFile, *c.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func isTLSScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "mqtts", "ssl", "tls", "https":
		return true
	}
	return false
}

// noUserinfo refuses an agent URL (a2a send --url) with a user name or
// password in it: over HTTP the caller authenticates with a bearer token
// only, and the URL shows in ps and in messages. The URL is not quoted.
// (A broker URL takes credentials: see connFlags.connection.)
func noUserinfo(flagName, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return nil
	}
	return fail(exitUsage, "--%s: the URL holds credentials (user@ or user:password@): an agent takes a bearer token, not a user name or password, and a URL shows in ps and in messages; give the token with --token-file (or $%s)", flagName, envToken)
}

// plainRemote reports whether rawURL is neither TLS nor on a loopback
// host: a secret sent there crosses the network in clear.
func plainRemote(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || isTLSScheme(u.Scheme) {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// firstLine reads the first line of the file a flag names (without its
// line end). The error names the flag and the file, never the content.
func firstLine(flagName, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(exitFailed, "--%s: %v", flagName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile))
	if err != nil {
		return nil, fail(exitFailed, "--%s: %v", flagName, err)
	}
	line, _, found := bytes.Cut(data, []byte("\n"))
	if !found && len(data) == maxSecretFile {
		return nil, fail(exitFailed, "--%s %s: the first line is longer than %d bytes", flagName, path, maxSecretFile)
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) == 0 {
		return nil, fail(exitFailed, "--%s %s: the first line is empty", flagName, path)
	}
	return line, nil
}

// tokenFlags are a2a send's bearer token flags.
type tokenFlags struct {
	token, tokenFile *string
}

func addTokenFlags(fs *flag.FlagSet) *tokenFlags {
	return &tokenFlags{
		token: fs.String("token", "", "OAuth 2.0 bearer token (a2a-authorization over MQTT, Authorization: Bearer over HTTP); "+
			"visible to every user in ps: prefer --token-file or $"+envToken),
		tokenFile: fs.String("token-file", "", "read the bearer token from the first line of this file (default: $"+envToken+")"),
	}
}

// bearer returns the token: --token, else --token-file, else $A2A_TOKEN;
// "" for none. The token must be an RFC 6750 b64token; an error never
// quotes it.
func (t *tokenFlags) bearer() (string, error) {
	var tok, from string
	switch {
	case *t.token != "" && *t.tokenFile != "":
		return "", fail(exitUsage, "give at most one of --token and --token-file")
	case *t.token != "":
		tok, from = *t.token, "--token"
	case *t.tokenFile != "":
		b, err := firstLine("token-file", *t.tokenFile)
		if err != nil {
			return "", err
		}
		tok, from = strings.TrimSpace(string(b)), "--token-file "+*t.tokenFile
	default:
		tok, from = os.Getenv(envToken), "$"+envToken
	}
	if tok != "" && !refagent.ValidBearer(tok) {
		code := 2
		if *t.tokenFile != "" {
			code = 1
		}
		return "", fail(code, "%s: not a bearer token (RFC 6750: letters, digits, -._~+/ and trailing =; without the \"Bearer \" prefix)", from)
	}
	return tok, nil
}

// brokerError is the message of a failed broker connection. A broker
// that refused the credentials (CONNACK 0x86 bad user name or password,
// 0x87 not authorized, MQTT v5 §3.2.2.2) is said so, with the flags that
// give them, and, for 0x87, the first of the connection's Client IDs
// (clientIDs) that is not its user name; a TLS failure names the flag that
// may cure it.
func brokerError(err error, conn a2amqtt.Connection, clientIDs ...string) error {
	code := -1
	var ce *a2amqtt.ConnectError
	if errors.As(err, &ce) {
		code = int(ce.ReasonCode)
	}
	if code != 0x86 && code != 0x87 {
		msg, status := err.Error(), exitFailed
		if errors.Is(err, a2amqtt.ErrBrokerUnreachable) {
			msg, status = unreachableBroker(msg, conn.Broker), exitUnreachable
		}
		if u, perr := url.Parse(conn.Broker); perr == nil && isTLSScheme(u.Scheme) && (conn.TLS == nil || len(conn.TLS.Certificates) == 0) &&
			(strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "certificate required") || strings.HasSuffix(msg, "EOF")) {
			msg += " (does the broker require a client certificate? give --cert-file and --key-file)"
		}
		if strings.Contains(msg, "certificate signed by unknown authority") && (conn.TLS == nil || conn.TLS.RootCAs == nil) {
			msg += " (give the authority that signs the broker's certificate with --ca-file)"
		}
		return fail(status, "%s", msg)
	}
	what := a2amqtt.ReasonName(byte(code))
	hint := "no credentials were given: give --username (or $" + envUsername + ") and --password-file (or $" + envPassword + ")"
	switch {
	case conn.Username != "" && conn.Password != nil:
		hint = "user " + conn.Username + " with a password was given: check them"
	case conn.Username != "":
		hint = "user " + conn.Username + " without a password was given: give --password-file (or $" + envPassword + ")"
	case conn.Password != nil:
		hint = "a password without a user name was given: give --username (or $" + envUsername + ")"
	}
	if code == 0x87 && conn.Username != "" {
		for _, id := range clientIDs {
			if id != conn.Username {
				hint += "; the Client ID " + id + " is not the user name, and a broker with a password file admits a user only under its own (docs/protocol.md §13.1)"
				break
			}
		}
	}
	return fail(exitFailed, "the broker %s refused the connection: %s (%s)", conn.Broker, what, hint)
}

// connectFailure drops what repeats the broker URL from the message of
// a2amqtt.ErrBrokerUnreachable ("mqtt: broker unreachable: URL: failed to
// connect to URL: dial tcp ...").
var connectFailure = regexp.MustCompile(`^failed to connect to \S+: `)

// unreachableBroker is the message of a broker that could not be reached
// (msg, a2amqtt.ErrBrokerUnreachable's): "broker URL unreachable: why",
// the URL named once.
func unreachableBroker(msg, broker string) string {
	why := msg
	if i := strings.Index(msg, a2amqtt.ErrBrokerUnreachable.Error()); i >= 0 {
		why = msg[i+len(a2amqtt.ErrBrokerUnreachable.Error()):]
	}
	why = strings.TrimPrefix(strings.TrimPrefix(why, ": "), broker)
	why = connectFailure.ReplaceAllString(strings.TrimPrefix(why, ": "), "")
	if why == "" {
		return "broker " + broker + " unreachable"
	}
	return "broker " + broker + " unreachable: " + why
}

// addLogLevel adds --log-level with a default level.
func addLogLevel(fs *flag.FlagSet, def slog.Level) *string {
	return fs.String("log-level", strings.ToLower(def.String()), "log on stderr at this level and above: debug, info, warn or error (secrets are never logged)")
}

// logger returns a text logger on w at the level named.
func logger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fail(exitUsage, "--log-level: %q is not debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
