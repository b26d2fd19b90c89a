package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// Each test gets a database of its own on the shared node, which listens
// on loopback with the settings of a test node; a database is gone once
// its test ended.
func TestNewDatabaseIsFreshAndDroppedWhenTheTestEnds(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("first", func(t *testing.T) {
		first = NewDatabase(t)
		conn := connect(t, first)
		if _, err := conn.Exec(ctx, "CREATE TABLE mine (x int)"); err != nil {
			t.Fatal(err)
		}
		for setting, want := range map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
			"listen_addresses": "127.0.0.1", "server_encoding": "UTF8"} {
			if got := queryString(t, conn, "SELECT current_setting($1)", setting); got != want {
				t.Errorf("%s = %s, want %s", setting, got, want)
			}
		}
		if got := queryString(t, conn, "SELECT current_user"); got != Superuser {
			t.Errorf("connected as %s", got)
		}
		if got := queryString(t, conn, "SELECT host(inet_server_addr())"); got != "127.0.0.1" {
			t.Errorf("server address %s", got)
		}
		if got := queryString(t, conn, "SELECT current_setting('unix_socket_directories')"); got != Shared(t).Dir() {
			t.Errorf("sockets in %s, want the node's directory %s", got, Shared(t).Dir())
		}
		second := connect(t, NewDatabase(t))
		var n int
		if err := second.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'mine'").Scan(&n); err != nil || n != 0 {
			t.Fatalf("a second database sees the first's table: %d %v", n, err)
		}
	})
	name := strings.TrimPrefix(first[strings.LastIndex(first, "/"):strings.Index(first, "?")], "/")
	admin := connect(t, Shared(t).DSN("postgres"))
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s of an ended test: %d %v", name, n, err)
	}
}

// A node of a test's own runs as the postgres user when the test runs as
// root (as ourselves otherwise), and stopping it leaves no process and
// no directory behind.
func TestStartAndStopLeaveNoProcess(t *testing.T) {
	s := Start(t)
	conn := connect(t, s.NewDatabase(t))
	pid := s.Pid()
	if pid == 0 {
		t.Fatal("no postmaster")
	}
	wantUID := os.Getuid()
	if wantUID == 0 {
		u, err := user.Lookup(Superuser)
		if err != nil {
			t.Fatal(err)
		}
		wantUID, _ = strconv.Atoi(u.Uid)
	}
	if uid := processUID(t, pid); uid != wantUID {
		t.Fatalf("postmaster runs as uid %d, want %d", uid, wantUID)
	}
	var backend int
	if err := conn.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	children := childrenOf(t, pid)
	if !containsInt(children, backend) {
		t.Fatalf("backend %d is not among the postmaster's children %v", backend, children)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(children, pid) {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d of the node is left after Stop: %v", p, err)
		}
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("the node's directory is left: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

// processUID reads the real uid of a process from /proc.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return -1
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Missing binaries are an error saying how to install them, which Start
// and NewDatabase turn into a failure (never a skip).
func TestMissingBinariesSayHowToInstall(t *testing.T) {
	empty := t.TempDir()
	_, err := binaries(empty, filepath.Join(empty, "nowhere", "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("no binaries: %v", err)
	}
	if _, err := start(false, empty, filepath.Join(empty, "nowhere")); err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Fatalf("start without binaries: %v", err)
	}
	// Found on PATH or under the glob, newest version first.
	for _, v := range []string{"13", "15"} {
		bin := filepath.Join(empty, "lib", v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := binaries("", filepath.Join(empty, "lib", "*", "bin"))
	if err != nil || got != filepath.Join(empty, "lib", "15", "bin") {
		t.Fatalf("from the glob: %s %v", got, err)
	}
	onPath := filepath.Join(empty, "lib", "13", "bin")
	if got, err := binaries(onPath, filepath.Join(empty, "lib", "*", "bin")); err != nil || got != onPath {
		t.Fatalf("from PATH: %s %v", got, err)
	}
}

// A test binary killed outright (SIGKILL, no cleanup) takes its node with
// it: the postmaster gets the parent death signal, and its backends
// follow it.
func TestANodeDiesWithItsTestBinary(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		s := Start(t)
		conn := connect(t, s.NewDatabase(t))
		var backend int
		if err := conn.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&backend); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("node " + strconv.Itoa(s.Pid()) + " " + strconv.Itoa(backend) + " " + s.Dir() + "\n")
		select {} // until killed
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestANodeDiesWithItsTestBinary$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child test printed no node: %v", err)
	}
	var pid, backend int
	var dir string
	if _, err := fmt.Sscanf(line, "node %d %d %s", &pid, &backend, &dir); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// Until they are gone (the test's own timeout bounds the wait).
	for _, p := range []int{pid, backend} {
		for alive(p) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// A schema of its own is where a test's tables go; another test's
// schema does not see them, and it is dropped once its test ended.
func TestNewSchemaIsFreshAndDroppedWhenTheTestEnds(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("first", func(t *testing.T) {
		conn := connect(t, NewSchema(t))
		if _, err := conn.Exec(ctx, "CREATE TABLE mine (x int)"); err != nil {
			t.Fatal(err)
		}
		name = queryString(t, conn, "SELECT schemaname FROM pg_tables WHERE tablename = 'mine'")
		if got := queryString(t, conn, "SELECT current_schema()"); got != name {
			t.Fatalf("current schema %s, table in %s", got, name)
		}
		second := connect(t, NewSchema(t))
		if _, err := second.Exec(ctx, "SELECT * FROM mine"); err == nil {
			t.Fatal("a second schema sees the first's table")
		}
	})
	admin := connect(t, Shared(t).DSN("postgres"))
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", name).Scan(&n); err != nil || n != 0 || name == "" {
		t.Fatalf("schema %q of an ended test: %d %v", name, n, err)
	}
}

// A test node trades durability for speed; a durable one keeps
// PostgreSQL's defaults.
func TestDurability(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) *Server
		want  string // fsync, synchronous_commit, full_page_writes
	}{
		{"Start", Start, "off off off"},
		{"StartDurable", StartDurable, "on on on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.start(t)
			conn, err := pgx.Connect(context.Background(), s.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var fsync, sync, fpw string
			if err := conn.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')").
				Scan(&fsync, &sync, &fpw); err != nil {
				t.Fatal(err)
			}
			if got := fsync + " " + sync + " " + fpw; got != tc.want {
				t.Fatalf("fsync, synchronous_commit, full_page_writes: %s, want %s", got, tc.want)
			}
		})
	}
}
