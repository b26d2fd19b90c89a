package broker

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// The users of the security tests; each one's password is "pw-" + name.
const (
	userEcho    = "acme/lab/echo"    // the victim agent
	userMallory = "acme/lab/mallory" // a hostile client of the same unit
	userReq     = "acme/lab/req"     // a requester
	userMember  = "acme/lab/member"  // a pool member
	userEve     = "other/unit/eve"   // a hostile client of another unit
	userAdmin   = "admin"            // not an A2A identity: only the ACL file grants it anything
)

var secureUsers = []string{userEcho, userMallory, userReq, userMember, userEve, userAdmin}

func password(user string) string { return "pw-" + user }

// writeTestFile writes content to a new file of the test's temporary
// directory and returns its path.
func writeTestFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writePasswordFile writes a password file for users (101 iterations, to
// keep the tests quick).
func writePasswordFile(t testing.TB, users ...string) string {
	t.Helper()
	var f PasswordFile
	for _, u := range users {
		if err := f.Set(u, password(u), 101); err != nil {
			t.Fatal(err)
		}
	}
	return writeTestFile(t, "passwd", string(f.Bytes()))
}

// startSecure starts a broker with broker-managed status, the password file
// of secureUsers (unless cfg has one) and, when aclLines are given, an ACL
// file of them.
func startSecure(t testing.TB, cfg Config, aclLines ...string) *Broker {
	t.Helper()
	cfg.Status = true
	if cfg.PasswordFile == "" {
		cfg.PasswordFile = writePasswordFile(t, secureUsers...)
	}
	if len(aclLines) > 0 {
		cfg.ACLFile = writeTestFile(t, "acl", strings.Join(aclLines, "\n")+"\n")
	}
	return startBroker(t, cfg)
}

// loginAs returns the CONNECT of user with its password and Client ID.
func loginAs(user string) *paho.Connect {
	return &paho.Connect{ClientID: user, CleanStart: true, Username: user, UsernameFlag: true,
		Password: []byte(password(user)), PasswordFlag: true}
}

// connectAs connects user, with its password, as Client ID user.
func connectAs(t testing.TB, addr, user string) *client {
	t.Helper()
	return dial(t, addr, loginAs(user), nil)
}

// tryConnect sends cp on a new connection and returns the CONNACK, or the
// error when none came. A connection that succeeded is closed when the
// test ends.
func tryConnect(t testing.TB, addr string, cp *paho.Connect) (*paho.Connack, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	pc := paho.NewClient(paho.ClientConfig{Conn: conn})
	if cp.KeepAlive == 0 {
		cp.KeepAlive = 30
	}
	ca, err := pc.Connect(testContext(t), cp)
	if err != nil {
		_ = conn.Close()
		<-pc.Done()
		return ca, err
	}
	t.Cleanup(func() {
		_ = pc.Disconnect(&paho.Disconnect{})
		<-pc.Done()
	})
	return ca, nil
}

// connackCode returns the reason code of the CONNACK cp gets, failing the
// test when none comes.
func connackCode(t testing.TB, addr string, cp *paho.Connect) byte {
	t.Helper()
	ca, err := tryConnect(t, addr, cp)
	if ca == nil {
		t.Fatalf("%s: no CONNACK: %v", cp.ClientID, err)
	}
	return ca.ReasonCode
}

// subscribeCode subscribes to filter at QoS 1 and returns the SUBACK's
// reason code.
func (c *client) subscribeCode(filter string) byte {
	c.t.Helper()
	sa, err := c.pc.Subscribe(testContext(c.t), &paho.Subscribe{
		Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}},
	})
	if sa == nil || len(sa.Reasons) != 1 {
		c.t.Fatalf("%s: subscribe %s: %v (SUBACK %+v)", c.id, filter, err, sa)
	}
	return sa.Reasons[0]
}

// publishCode publishes p at QoS 1 and returns the PUBACK's reason code.
func (c *client) publishCode(p *paho.Publish) byte {
	c.t.Helper()
	p.QoS = 1
	resp, err := c.pc.Publish(testContext(c.t), p)
	if resp == nil {
		c.t.Fatalf("%s: publish %s: no PUBACK: %v", c.id, p.Topic, err)
	}
	return resp.ReasonCode
}

// cardOf publishes user's retained card (online / agent) and fails unless
// the broker accepts it.
func cardOf(t testing.TB, c *client, user, version string) []byte {
	t.Helper()
	id, _ := parseIdentity(user)
	body := card(id.agent, version)
	if code := c.publishCode(&paho.Publish{Topic: discoveryTopic(t, id.org, id.unit, id.agent), Retain: true, Payload: body,
		Properties: &paho.PublishProperties{User: statusProps(mqttbind.StatusOnline, mqttbind.StatusSourceAgent)}}); code != 0 {
		t.Fatalf("%s: own card refused with %#x", user, code)
	}
	return body
}

// retained returns the payload a fresh subscriber (user) receives as the
// retained message of topic, or nil when there is none. It subscribes to
// topic and then to a sentinel, a retained message on member's event
// topic: the sentinel arrives after topic's retained message (mochi sends
// them in SUBSCRIBE order), so its arrival proves whether topic had one.
func retained(t testing.TB, addr, user, topic string) []byte {
	t.Helper()
	const sentinel = "$a2a/v1/event/acme/lab/member"
	mark := []byte("sentinel " + time.Now().Format(time.RFC3339Nano))
	owner := connectAs(t, addr, userMember)
	if code := owner.publishCode(&paho.Publish{Topic: sentinel, Retain: true, Payload: mark}); code != 0 {
		t.Fatalf("sentinel refused with %#x", code)
	}
	owner.disconnect()

	c := connectAs(t, addr, user)
	defer c.disconnect()
	c.subscribe(topic, 1)
	c.subscribe(sentinel, 1)
	var got []byte
	for {
		m := c.await("retained messages", func(m *paho.Publish) bool { return m.Retain })
		if m.Topic == sentinel {
			if string(m.Payload) != string(mark) {
				t.Fatalf("sentinel %q, want %q", m.Payload, mark)
			}
			return got
		}
		if m.Topic == topic {
			got = m.Payload
		}
	}
}

// logBuffer is an io.Writer for a test logger, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeClock is a settable clock for the rate limits.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newTestLogger logs everything, DEBUG included, as text to w.
func newTestLogger(w *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
