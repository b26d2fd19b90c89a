package mqtt

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// urlPassword is the password of the users of TestBrokerURLCredentials:
// every character RFC 3986 §3.2.1 reserves in a userinfo, a "%2F" that
// must be decoded once only, and a non-ASCII letter.
const urlPassword = "p@ss:w/rd%2F?#[]+é"

// credentialsURL is brokerURL with user and password in its userinfo,
// percent-encoded (RFC 3986 §2.1).
func credentialsURL(t *testing.T, brokerURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// syncBuffer is a log destination shared by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRedactBrokerURL(t *testing.T) {
	for in, want := range map[string]string{
		"mqtt://127.0.0.1:1883":                     "mqtt://127.0.0.1:1883",
		"mqtt://alice@127.0.0.1:1883":               "mqtt://alice@127.0.0.1:1883",
		"mqtt://alice:secret@127.0.0.1:1883":        "mqtt://alice:xxxxx@127.0.0.1:1883",
		"mqtts://acme%2Flab%2Fecho:s%40c@h:8883/x":  "mqtts://acme%2Flab%2Fecho:xxxxx@h:8883/x",
		"mqtt://:secret@h":                          "mqtt://:xxxxx@h",
		"mqtt://alice:se%zzcret@h:1883":             "mqtt://alice:xxxxx@h:1883", // does not parse
		"mqtt://alice:se@cret@h:1883":               "mqtt://alice:xxxxx@h:1883",
		"alice:secret@h:1883":                       "alice:xxxxx@h:1883", // no scheme: alice would be one
		"mqtt://alice:se%zzcret@h:1883/p@th?q=a:b@": "mqtt://alice:xxxxx@h:1883/p@th?q=a:b@",
	} {
		if got := RedactBrokerURL(in); got != want {
			t.Errorf("RedactBrokerURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBrokerURLCredentials: on the embedded broker and mosquitto, both
// with a password file, an agent and a client whose Broker URL carries
// user:password (percent-encoded) connect and talk; the fields fill in
// what the URL leaves out and a password field wins over the URL's; a
// wrong password in the URL is refused with the named reason
// (*ConnectError, 0x86 or 0x87); a user name that differs from Username is
// an error before any connection. No error and no log line quotes the
// password; errors quote the URL redacted.
func TestBrokerURLCredentials(t *testing.T) {
	t.Parallel()
	var f broker.PasswordFile
	for _, u := range []string{stopAgent, stopClient, stopWatch} {
		if err := f.Set(u, urlPassword, 101); err != nil {
			t.Fatal(err)
		}
	}
	pw := filepath.Join(t.TempDir(), "passwd")
	if err := f.WriteFile(pw); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	noSecret := func(t *testing.T, what string) {
		t.Helper()
		for _, secret := range []string{urlPassword, "p@ss", "p%40ss", "not-the-password", "wrong@pw", "wrong%40pw"} {
			if strings.Contains(what, secret) {
				t.Errorf("a password is quoted: %s", what)
			}
		}
	}
	for _, sb := range securedBrokers(t, pw, "") {
		t.Run(sb.name, func(t *testing.T) {
			t.Parallel()
			b := sb.start(t)
			agentURL := credentialsURL(t, b.url, stopAgent, urlPassword)
			if !strings.Contains(agentURL, "acme%2Flab%2Fecho:") || !strings.Contains(agentURL, "%252F") {
				t.Fatalf("the URL is not percent-encoded: %s", agentURL)
			}
			t.Run("user and password in the URL", func(t *testing.T) {
				startAgent(t, AgentConfig{Connection: Connection{Broker: agentURL}, Org: "acme", Unit: "lab", ID: "echo",
					Card: testCard("Echo"), Server: echoServer(t), Logger: log})
				c := startClient(t, credentialsURL(t, b.url, stopClient, urlPassword), "req", func(cfg *ClientConfig) {
					cfg.Requester.Logger = log
				})
				res, err := c.SendMessage(testCtx(t), requester.TextMessage("hello", "", ""), requester.ToAgent("echo"))
				if err != nil || res.Task == nil {
					t.Fatalf("%v %+v", err, res)
				}
			})
			t.Run("fields fill in the URL", func(t *testing.T) {
				// The user name in the URL, the password in the field.
				u, _ := url.Parse(b.url)
				u.User = url.User(stopWatch)
				w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: u.String(), Password: []byte(urlPassword)},
					Org: "acme", Unit: "lab", ClientID: stopWatch, Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				w.Close(testCtx(t))
				// The same user name in both; the password field wins over
				// a wrong one in the URL.
				wrongURL := credentialsURL(t, b.url, stopWatch, "wrong@pw")
				w, err = Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: wrongURL, Username: stopWatch, Password: []byte(urlPassword)},
					Org: "acme", Unit: "lab", ClientID: stopWatch, Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				w.Close(testCtx(t))
			})
			t.Run("a wrong password in the URL", func(t *testing.T) {
				wrongURL := credentialsURL(t, b.url, stopClient, "not-the-password")
				_, err := NewClient(testCtx(t), ClientConfig{Connection: Connection{Broker: wrongURL, ConnectTimeout: time.Hour},
					Org: "acme", Unit: "lab", ID: "req", Requester: requester.Config{Logger: log}})
				var ce *ConnectError
				if !errors.As(err, &ce) || (ce.ReasonCode != 0x86 && ce.ReasonCode != 0x87) {
					t.Fatalf("err = %v, want a *ConnectError 0x86 or 0x87", err)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("0x%02x %s", ce.ReasonCode, ReasonName(ce.ReasonCode))) {
					t.Errorf("%q does not name the reason code", err)
				}
				redacted := strings.Replace(b.url, "mqtt://", "mqtt://acme%2Flab%2Freq:xxxxx@", 1)
				if ce.Broker != redacted || !strings.Contains(err.Error(), redacted) {
					t.Errorf("%q: the broker is %q, want %q", err, ce.Broker, redacted)
				}
				noSecret(t, err.Error())
			})
			t.Run("user names that differ", func(t *testing.T) {
				for _, start := range []func() error{
					func() error {
						_, err := NewClient(testCtx(t), ClientConfig{Connection: Connection{Broker: credentialsURL(t, b.url, stopClient, urlPassword),
							Username: stopAgent}, Org: "acme", Unit: "lab", ID: "req"})
						return err
					},
					func() error {
						_, err := NewAgent(testCtx(t), AgentConfig{Connection: Connection{Broker: agentURL, Username: stopClient},
							Org: "acme", Unit: "lab", ID: "echo", Card: testCard("Echo"), Server: echoServer(t)})
						return err
					},
				} {
					err := start()
					var ce *ConnectError
					if err == nil || errors.As(err, &ce) || errors.Is(err, ErrBrokerUnreachable) ||
						!strings.Contains(err.Error(), "conflicts with Connection.Username") || !strings.Contains(err.Error(), ":xxxxx@") {
						t.Fatalf("err = %v, want the user names' conflict", err)
					}
					noSecret(t, err.Error())
				}
			})
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		var own syncBuffer
		_, err := NewClient(testCtx(t), ClientConfig{Connection: Connection{Broker: "mqtt://alice:not-the-password@127.0.0.1:1", ConnectTimeout: 500 * time.Millisecond},
			Org: "acme", Unit: "lab", ID: "req",
			Requester: requester.Config{Logger: slog.New(slog.NewTextHandler(&own, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
		if !errors.Is(err, ErrBrokerUnreachable) || !strings.Contains(err.Error(), "mqtt://alice:xxxxx@127.0.0.1:1") {
			t.Fatalf("err = %v, want ErrBrokerUnreachable with the URL redacted", err)
		}
		noSecret(t, err.Error())
		noSecret(t, own.String())
		if !strings.Contains(own.String(), "connect attempt failed") {
			t.Errorf("no attempt logged:\n%s", own.String())
		}
	})
	t.Run("a URL that does not parse", func(t *testing.T) {
		t.Parallel()
		_, err := NewClient(testCtx(t), ClientConfig{Connection: Connection{Broker: "mqtt://alice:wrong%40pw%zz@127.0.0.1:1"}, Org: "acme", Unit: "lab", ID: "req"})
		if err == nil || !strings.Contains(err.Error(), "mqtt://alice:xxxxx@127.0.0.1:1") {
			t.Fatalf("err = %v, want the URL redacted", err)
		}
		noSecret(t, err.Error())
	})
	t.Cleanup(func() { noSecret(t, logs.String()) })
}
