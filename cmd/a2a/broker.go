package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("broker", "[--listen 127.0.0.1:1883] [--status] [--data DIR] "+
		"[--password-file FILE [--acl-file FILE]] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--trusted-jku PREFIX]... [--topic-root ROOT] [--json]",
		"a2a broker --listen 127.0.0.1:1883 --status --password-file broker.passwd", stderr)
	listen := fs.String("listen", "127.0.0.1:1883", "TCP address to listen on")
	status := fs.Bool("status", false, "broker-managed status: set a2a-status from each agent's connection state")
	data := fs.String("data", "", "directory that keeps sessions and retained messages across restarts")
	passwordFile := fs.String("password-file", "", "authenticate clients with this mosquitto 2.0 password file (see a2a passwd); "+
		"anonymous clients are refused, a user's Client ID is its user name, and it may publish and subscribe as its A2A identity allows")
	aclFile := fs.String("acl-file", "", "extra rules (mosquitto acl_file syntax: user, topic, pattern, deny; and clientid), with --password-file or --tls-client-ca")
	tlsCert := fs.String("tls-cert", "", "serve MQTT over TLS with this PEM certificate (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "verify client certificates against these PEM CA certificates: a certificate's Common Name is its user name "+
		"(required of every client without --password-file)")
	var trustedJKU stringList
	fs.Var(&trustedJKU, "trusted-jku", "require every card to carry a signature whose protected header's jku starts with this prefix (repeatable)")
	validate := fs.Bool("validate-cards", false, "validate cards without authentication (always on with it)")
	maxCard := fs.Int("max-card-size", broker.DefaultMaxCardSize, "largest card in bytes")
	cardRate := fs.Int("card-rate", broker.DefaultCardUpdatesPerMinute, "card updates per minute per agent (-1: no limit)")
	maxPacket := fs.Uint("max-packet-size", broker.DefaultMaxPacketSize, "largest packet a client may send, in bytes")
	maxPending := fs.Int("max-pending-bytes", 0, "bytes the broker holds for a client that has not read them; past it the client is disconnected (0x97) "+
		"(0: 134217728, or twice --max-packet-size when more)")
	connRate := fs.Float64("conn-rate", broker.DefaultConnectionRate, "new connections per second per source address, on average (-1: no limit)")
	connBurst := fs.Int("conn-burst", broker.DefaultConnectionBurst, "new connections a source address may open at once")
	connMax := fs.Int("conn-max", broker.DefaultMaxConnectionsPerAddress, "open connections per source address (-1: no limit)")
	rootf := addRootFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per line on stdout instead of the text lines (see below); errors as {\"error\":{...}}")
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), brokerJSONHelp+jsonHelp) }
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	switch {
	case (*tlsCert == "") != (*tlsKey == ""):
		return fail(exitUsage, "--tls-cert and --tls-key go together")
	case *tlsClientCA != "" && *tlsCert == "":
		return fail(exitUsage, "--tls-client-ca needs --tls-cert and --tls-key")
	case *aclFile != "" && *passwordFile == "" && *tlsClientCA == "":
		return fail(exitUsage, "--acl-file needs --password-file or --tls-client-ca (an ACL is only as good as the identities it names)")
	case *maxCard < 1 || *maxPacket < 1 || *maxPacket > 1<<28 || *cardRate == 0 || *connRate == 0 || *connBurst < 1 || *connMax == 0:
		return fail(exitUsage, "--max-card-size, --max-packet-size (at most 268435456), --card-rate, --conn-rate, --conn-burst and --conn-max must be positive (-1 turns a limit off)")
	}
	// The root of the topics the broker knows as A2A's: broker-managed
	// status, the card registry and the identity rules read it.
	root, err := rootf.root(stderr)
	if err != nil {
		return err
	}
	cfg := broker.Config{Addr: *listen, Status: *status, DataDir: *data, Root: root,
		PasswordFile: *passwordFile, ACLFile: *aclFile, TrustedJKU: trustedJKU, ValidateCards: *validate,
		MaxCardSize: *maxCard, CardUpdatesPerMinute: *cardRate, MaxPacketSize: uint32(*maxPacket), MaxPendingBytes: *maxPending,
		ConnectionRate: *connRate, ConnectionBurst: *connBurst, MaxConnectionsPerAddress: *connMax,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if *tlsCert != "" {
		if cfg.TLS, err = serverTLS(*tlsCert, *tlsKey, *tlsClientCA, *passwordFile != ""); err != nil {
			return err
		}
	}
	b, err := broker.Start(ctx, cfg)
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	out := &lineOut{w: stdout, json: *asJSON}
	listening := brokerEvent{Event: "listening", URL: b.URL(), Status: status, TopicRoot: root.String()}
	if root.IsDefault() {
		out.emit(fmt.Sprintf("a2a broker listening on %s (status %v)", b.URL(), *status), listening)
	} else {
		out.emit(fmt.Sprintf("a2a broker listening on %s (status %v, topic root %s)", b.URL(), *status, root), listening)
	}
	out.emit(securitySummary(cfg), securityEvent(cfg))
	<-ctx.Done()
	if err := b.Close(); err != nil {
		return fail(exitFailed, "%v", err)
	}
	out.emit("a2a broker stopped", brokerEvent{Event: "stopped"})
	return nil
}

// brokerJSONHelp documents a2a broker --json.
const brokerJSONHelp = `
--json prints, instead of the text lines:
  {"event":"listening","url":URL,"status":BOOL,"topicRoot":ROOT}
  {"event":"security","authentication":BOOL[,"passwordFile":F,"users":N][,"clientCertificates":true][,"aclFile":F][,"trustedJku":[...]]}
  {"event":"stopped"}   (after SIGINT or SIGTERM)
`

// brokerEvent is one line of a2a broker --json (brokerJSONHelp).
type brokerEvent struct {
	Event     string `json:"event"`
	URL       string `json:"url,omitempty"`
	Status    *bool  `json:"status,omitempty"`
	TopicRoot string `json:"topicRoot,omitempty"`
	// security: whether clients must authenticate, and how.
	Authentication     *bool    `json:"authentication,omitempty"`
	PasswordFile       string   `json:"passwordFile,omitempty"`
	Users              *int     `json:"users,omitempty"`
	ClientCertificates bool     `json:"clientCertificates,omitempty"`
	ACLFile            string   `json:"aclFile,omitempty"`
	TrustedJKU         []string `json:"trustedJku,omitempty"`
}

// securityEvent is securitySummary as a --json line.
func securityEvent(cfg broker.Config) brokerEvent {
	e := brokerEvent{Event: "security", ACLFile: cfg.ACLFile, TrustedJKU: cfg.TrustedJKU}
	if cfg.PasswordFile != "" {
		n := 0
		if f, err := broker.ReadPasswordFile(cfg.PasswordFile); err == nil {
			n = len(f.Users())
		}
		e.PasswordFile, e.Users = cfg.PasswordFile, &n
	}
	e.ClientCertificates = cfg.TLS != nil && cfg.TLS.ClientCAs != nil
	auth := e.PasswordFile != "" || e.ClientCertificates
	e.Authentication = &auth
	return e
}

// serverTLS loads the broker's certificate and, with clientCA, the
// authorities of client certificates: required of every client, or of
// those without a password when there is a password file.
func serverTLS(certFile, keyFile, clientCA string, passwords bool) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fail(exitFailed, "--tls-cert, --tls-key: %v", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA == "" {
		return c, nil
	}
	pem, err := os.ReadFile(clientCA)
	if err != nil {
		return nil, fail(exitFailed, "--tls-client-ca: %v", err)
	}
	c.ClientCAs = x509.NewCertPool()
	if !c.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, fail(exitFailed, "--tls-client-ca: no PEM certificate in %s", clientCA)
	}
	c.ClientAuth = tls.RequireAndVerifyClientCert
	if passwords {
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, nil
}

// securitySummary says how the broker authenticates, or that it does not.
func securitySummary(cfg broker.Config) string {
	var how []string
	if cfg.PasswordFile != "" {
		n := 0
		if f, err := broker.ReadPasswordFile(cfg.PasswordFile); err == nil {
			n = len(f.Users())
		}
		how = append(how, fmt.Sprintf("password file %s (%d users)", cfg.PasswordFile, n))
	}
	if cfg.TLS != nil && cfg.TLS.ClientCAs != nil {
		how = append(how, "client certificates (the Common Name is the user name)")
	}
	if len(how) == 0 {
		return "WARNING: no authentication: any client may connect with any Client ID, replace or delete any agent's card " +
			"and read every request, bearer tokens included; run with --password-file (see a2a passwd) or --tls-client-ca"
	}
	s := "authentication: " + strings.Join(how, " or ") + "; anonymous clients refused; authorization by A2A identity"
	if cfg.ACLFile != "" {
		s += " and " + cfg.ACLFile
	}
	if len(cfg.TrustedJKU) > 0 {
		s += "; cards must be signed under " + strings.Join(cfg.TrustedJKU, ", ")
	}
	return s
}
