package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// runStdin is runCLI with stdin.
func runStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runWith(t, nil, strings.NewReader(stdin), args...)
}

func readPasswords(t *testing.T, path string) *broker.PasswordFile {
	t.Helper()
	f, err := broker.ReadPasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPasswd: a2a passwd adds, replaces and deletes users as
// mosquitto_passwd does, taking the password from -b or a line of stdin.
func TestPasswd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.passwd")
	if r := runCLI(t, nil, "passwd", "-b", "-I", "101", path, "acme/lab/echo", "first"); r.code != 0 || !strings.Contains(r.stdout, "set the password of acme/lab/echo") {
		t.Fatalf("passwd -b: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new password file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if r := runStdin(t, "from stdin\n", "passwd", path, "acme/lab/req"); r.code != 0 {
		t.Fatalf("passwd with stdin: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	f := readPasswords(t, path)
	if !f.Verify("acme/lab/echo", "first") || !f.Verify("acme/lab/req", "from stdin") || f.Verify("acme/lab/req", "from stdin\n") {
		t.Errorf("passwords not as set:\n%s", f.Bytes())
	}
	if !strings.HasPrefix(string(f.Bytes()), "acme/lab/echo:$7$101$") || !strings.Contains(string(f.Bytes()), "acme/lab/req:$7$10000$") {
		t.Errorf("file:\n%s", f.Bytes())
	}
	r := runCLI(t, nil, "passwd", "-b", path, "admin", "x")
	if r.code != 0 || !strings.Contains(r.stderr, "not an {org_id}/{unit_id}/{agent_id} Client ID") {
		t.Errorf("a user that is not an identity: exit %d, stderr %q; want a note", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "passwd", "-D", path, "acme/lab/req"); r.code != 0 {
		t.Fatalf("passwd -D: exit %d\n%s", r.code, r.stderr)
	}
	if got := readPasswords(t, path).Users(); strings.Join(got, " ") != "acme/lab/echo admin" {
		t.Errorf("users after -D: %v", got)
	}
	if r := runCLI(t, nil, "passwd", "-c", "-b", path, "acme/lab/new", "x"); r.code != 0 {
		t.Fatalf("passwd -c: exit %d\n%s", r.code, r.stderr)
	}
	if got := readPasswords(t, path).Users(); strings.Join(got, " ") != "acme/lab/new" {
		t.Errorf("users after -c: %v", got)
	}

	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"a user with a colon", "", []string{"passwd", "-b", path, "a:b", "x"}, 2, "colon"},
		{"no user", "", []string{"passwd", path}, 2, "want FILE USER"},
		{"-b without password", "", []string{"passwd", "-b", path, "u"}, 2, "want FILE USER PASSWORD"},
		{"-D with -b", "", []string{"passwd", "-D", "-b", path, "u", "x"}, 2, "-D goes alone"},
		{"deleting an unknown user", "", []string{"passwd", "-D", path, "acme/lab/ghost"}, 1, "no such user"},
		{"deleting from a missing file", "", []string{"passwd", "-D", path + ".missing", "u"}, 1, "no such file"},
		{"an empty stdin", "", []string{"passwd", path, "u"}, 1, "no password on stdin"},
		{"a corrupt file", "", []string{"passwd", "-b", writeFile(t, t.TempDir(), "corrupt", "u:plain\n"), "u", "x"}, 1, "line 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runStdin(t, c.stdin, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, c.code, c.want)
			}
			if strings.Contains(r.stderr, "x\n") && c.code != 0 {
				t.Errorf("stderr quotes the password: %q", r.stderr)
			}
		})
	}
}

// TestPasswdFileInteroperates: Debian's mosquitto accepts a file written
// by a2a passwd, and a2a broker one written by mosquitto_passwd.
func TestPasswdFileInteroperates(t *testing.T) {
	ours := filepath.Join(t.TempDir(), "ours.passwd")
	if r := runCLI(t, nil, "passwd", "-b", ours, "acme/lab/echo", "s3cret"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	m := mqtttest.StartMosquitto(t, mqtttest.WithPasswordFile(ours))
	if got := connackOf(t, m.Addr(), "acme/lab/echo", "s3cret"); got != 0 {
		t.Errorf("mosquitto with a2a passwd's file: CONNACK %#x, want success", got)
	}
	if got := connackOf(t, m.Addr(), "acme/lab/echo", "wrong"); got < 0x80 {
		t.Errorf("mosquitto with a wrong password: CONNACK %#x, want a refusal", got)
	}

	theirs := filepath.Join(t.TempDir(), "theirs.passwd")
	mp, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		mp = "/usr/bin/mosquitto_passwd"
	}
	if out, err := exec.Command(mp, "-c", "-b", theirs, "acme/lab/echo", "s3cret").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd (apt-get install -y mosquitto): %v\n%s", err, out)
	}
	addr := freeAddr(t)
	br := start(t, "broker", "--listen", addr, "--password-file", theirs)
	br.waitFor(t, "authentication: password file")
	if got := connackOf(t, addr, "acme/lab/echo", "s3cret"); got != 0 {
		t.Errorf("a2a broker with mosquitto_passwd's file: CONNACK %#x, want success", got)
	}
	if got := connackOf(t, addr, "acme/lab/echo", "wrong"); got != 0x86 {
		t.Errorf("a2a broker with a wrong password: CONNACK %#x, want 0x86", got)
	}
}

// connackOf connects as user with password (Client ID user) and returns
// the CONNACK's reason code.
func connackOf(t *testing.T, addr, user, password string) byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pc := paho.NewClient(paho.ClientConfig{Conn: conn})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca, err := pc.Connect(ctx, &paho.Connect{ClientID: user, CleanStart: true, KeepAlive: 30,
		Username: user, UsernameFlag: true, Password: []byte(password), PasswordFlag: true})
	if ca == nil {
		t.Fatalf("no CONNACK: %v", err)
	}
	if err == nil {
		_ = pc.Disconnect(&paho.Disconnect{})
	}
	<-pc.Done()
	return ca.ReasonCode
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestSecuredBroker: a2a broker --password-file serves the reference
// agent and a2a send logged in as their identities, and refuses an agent
// without credentials or under another user's name; without a password
// file it warns that it is open.
func TestSecuredBroker(t *testing.T) {
	dir := t.TempDir()
	passwd := filepath.Join(dir, "broker.passwd")
	for _, u := range []string{"acme/lab/echo", "acme/lab/alice"} {
		if r := runCLI(t, nil, "passwd", "-b", "-I", "101", passwd, u, "pw-"+u[len("acme/lab/"):]); r.code != 0 {
			t.Fatalf("passwd: %s", r.stderr)
		}
	}
	echoPW, alicePW := writeFile(t, t.TempDir(), "echo.pw", "pw-echo\n"), writeFile(t, t.TempDir(), "alice.pw", "pw-alice\n")
	addr := freeAddr(t)
	url := "mqtt://" + addr
	// The reference agent also connects echo-c1 (its handover target)
	// with the same credentials: the ACL file lets the user have it.
	acl := writeFile(t, dir, "broker.acl", "user acme/lab/echo\nclientid acme/lab/echo-c1\n")
	br := start(t, "broker", "--listen", addr, "--status", "--password-file", passwd, "--acl-file", acl)
	br.waitFor(t, "authentication: password file "+passwd+" (2 users)")

	ag := start(t, "agent", "--broker", url, "--org", "acme", "--unit", "lab", "--id", "echo",
		"--username", "acme/lab/echo", "--password-file", echoPW)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker output:\n%s", br.output())
		}
	})
	ag.waitFor(t, "online")
	r := runCLI(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "send", "--broker", url, "--org", "acme", "--unit", "lab", "--to", "echo",
		"--username", "acme/lab/alice", "--password-file", alicePW, "--as", "alice", "--json", "hello secured")
	if r.code != 0 || !strings.Contains(r.stdout, "hello secured") {
		t.Fatalf("send: exit %d\n%s%s\nbroker:\n%s", r.code, r.stdout, r.stderr, br.output())
	}

	for _, c := range []struct {
		name string
		args []string
	}{
		{"an agent without credentials", nil},
		{"an agent under another user's name", []string{"--username", "acme/lab/alice", "--password-file", alicePW}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"agent", "--broker", url, "--org", "acme", "--unit", "lab", "--id", "mallory"}, c.args...)
			if r := runCLI(t, nil, args...); r.code != 1 {
				t.Errorf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	if strings.Contains(br.output(), "pw-") {
		t.Errorf("the broker's output shows a password:\n%s", br.output())
	}

	open := start(t, "broker", "--listen", freeAddr(t))
	open.waitFor(t, "WARNING: no authentication")
}

// TestBrokerFlagErrors: inconsistent security flags are usage errors.
func TestBrokerFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"broker", "--acl-file", "x"}, 2, "--acl-file needs"},
		{[]string{"broker", "--tls-cert", "x"}, 2, "go together"},
		{[]string{"broker", "--tls-client-ca", "x"}, 2, "needs --tls-cert"},
		{[]string{"broker", "--card-rate", "0"}, 2, "must be positive"},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--password-file", "/nonexistent/passwd"}, 1, "no such file"},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/c", "--tls-key", "/nonexistent/k"}, 1, "--tls-cert"},
	} {
		r := runCLI(t, nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}
