/*
Package pgtest starts PostgreSQL for tests: Debian's `postgresql` package
(initdb and postgres from PATH or /usr/lib/postgresql/VERSION/bin),
initialised into a temporary directory and listening on a free loopback
port, with its unix sockets in that directory. When the test binary runs
as root, initdb and postgres run as the unprivileged `postgres` user, as
PostgreSQL requires.

PostgreSQL is mandatory: when its binaries are missing the test fails
(never skips) and says how to install them (apt-get install -y
postgresql; .ci/run does).

A node takes a second or two to initialise, so a test binary shares one:
its TestMain calls Main, and each test asks for a database of its own, or,
for a quarter of a second less, a schema of its own.

	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

	func TestSomething(t *testing.T) {
		dsn := pgtest.NewDatabase(t) // a fresh database, dropped when t ends
		dsn = pgtest.NewSchema(t)    // a fresh schema (search_path), dropped when t ends
		...
	}

The shared node starts on the first NewDatabase and stops when Main
returns, taking its directory with it. Start gives a test a node of its
own instead, stopped when that test ends.

A node is tuned for tests, not for keeping data: fsync, synchronous_commit
and full_page_writes are off (PostgreSQL's documentation, "Non-Durable
Settings"; StartDurable leaves them on, for benchmarks), authentication is trust, on 127.0.0.1 only. Whatever happens
to the test binary, the postmaster gets SIGQUIT when it exits (the parent
death signal), so no node outlives its tests.
*/
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// InstallHint ends the failure when the binaries are missing.
	InstallHint = "install PostgreSQL: apt-get install -y postgresql " +
		"(the PostgreSQL tests are mandatory; .ci/run installs it)"
	// Superuser is the role a node is initialised with; DSNs connect as
	// it.
	Superuser = "postgres"

	// debianBinGlob is where Debian's packages put the server binaries
	// (only a few client programs are on PATH).
	debianBinGlob = "/usr/lib/postgresql/*/bin"
	// readyTimeout bounds the wait for a node to accept connections.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds the wait for a node to exit after SIGINT (fast
	// shutdown); it is then sent SIGQUIT (immediate shutdown).
	stopTimeout = 30 * time.Second
	// bindAttempts is how many free ports a start tries (another process
	// may take the port between probing and binding).
	bindAttempts = 5
)

// Server is a PostgreSQL node started for tests.
type Server struct {
	bin     string // directory of initdb and postgres
	dir     string // the node's own: data/, the sockets, postgres.log
	logPath string
	lastLog string // the log, once Stop removed it
	port    int
	cred    *syscall.Credential // nil: run as ourselves
	durable bool                // PostgreSQL's defaults for fsync and the like (StartDurable)

	mu      sync.Mutex
	cmd     *exec.Cmd     // postgres; nil once stopped
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd's exit, valid once exited is closed
	admin   *pgx.Conn     // to the postgres database, for CREATE DATABASE
	dbs     int           // databases created so far, for their names
	schemas int           // schemas created so far, for their names
}

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the node's directory (its data directory is Dir()/data).
func (s *Server) Dir() string { return s.dir }

// Pid is the postmaster's process id, 0 once stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// DSN is the URL connecting to database db on the node as Superuser.
func (s *Server) DSN(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Host: s.Addr(), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Log returns what the node logged so far (all it logged, once stopped).
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lastLog != "" {
			return s.lastLog
		}
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// binaries finds the directory holding initdb and postgres: that of the
// initdb on path (a PATH list), else the newest of the directories globs
// match. The error says how to install them.
func binaries(path string, globs ...string) (string, error) {
	var dirs []string
	for _, d := range filepath.SplitList(path) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, g := range globs {
		matches, _ := filepath.Glob(g)
		// Newest version first: /usr/lib/postgresql/16/bin before 15.
		slices.SortFunc(matches, func(a, b string) int { return versionOf(b) - versionOf(a) })
		dirs = append(dirs, matches...)
	}
	for _, d := range dirs {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL's initdb and postgres not found on PATH nor in %s; %s", strings.Join(globs, ", "), InstallHint)
}

// versionOf reads the major version of a directory /usr/lib/postgresql/V/bin.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// credential is who runs initdb and postgres: nil (ourselves) unless we are
// root, which PostgreSQL refuses; then the postgres user Debian's package
// creates.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(Superuser)
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the user %s, which is missing (%v); %s", Superuser, err, InstallHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s: uid %q gid %q", Superuser, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// Start starts a node of the test's own, stopped (and its directory
// removed) when the test ends; its log is shown if the test failed. Most
// tests share one node instead (NewDatabase).
func Start(t testing.TB) *Server {
	t.Helper()
	return startFor(t, false)
}

// StartDurable is Start with a node that keeps its data as PostgreSQL does
// by default: fsync, synchronous_commit and full_page_writes on, each
// commit flushed to disk before it is acknowledged. Benchmarks use it to
// measure what a production node pays; tests need not.
func StartDurable(t testing.TB) *Server {
	t.Helper()
	return startFor(t, true)
}

func startFor(t testing.TB, durable bool) *Server {
	t.Helper()
	s, err := start(durable, os.Getenv("PATH"), debianBinGlob)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PostgreSQL log (%s):\n%s", s.logPath, s.Log())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s
}

// start initialises and starts a node with the binaries found on path or
// globs.
func start(durable bool, path string, globs ...string) (*Server, error) {
	bin, err := binaries(path, globs...)
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: the postgres user must reach it, and a root test's
	// temporary directories are root's alone.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, logPath: filepath.Join(dir, "postgres.log"), cred: cred, durable: durable}
	if err := s.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		err = s.run()
		if err == nil || !errors.Is(err, errAddrInUse) || attempt == bindAttempts {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("%w\nPostgreSQL log:\n%s", err, s.Log())
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// init runs initdb into dir/data.
func (s *Server) init() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "--pgdata", filepath.Join(s.dir, "data"),
		"--username", Superuser, "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir = s.dir
	cmd.Env = s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", cmd, err, out)
	}
	return nil
}

// env is the environment of initdb and postgres: no PG* variable of ours.
func (s *Server) env() []string {
	return []string{"PATH=" + s.bin + ":/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=" + s.dir}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

var (
	errAddrInUse = errors.New("address already in use")
	errStopped   = errors.New("the node is stopped")
)

// run starts postgres on s.port and waits until it accepts connections.
func (s *Server) run() error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	args := []string{"-D", filepath.Join(s.dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-c", "port=" + strconv.Itoa(s.port),
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "max_connections=200", "-c", "shared_buffers=64MB"}
	if !s.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Dir = s.dir
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// SIGQUIT is PostgreSQL's immediate shutdown: its backends go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()

	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-exited:
			s.mu.Lock()
			err := s.waitErr
			s.cmd = nil
			s.mu.Unlock()
			if strings.Contains(s.Log(), "Address already in use") {
				return fmt.Errorf("postgres on %s: %w", s.Addr(), errAddrInUse)
			}
			return fmt.Errorf("postgres exited before accepting connections: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		cancel()
		if err == nil {
			s.mu.Lock()
			s.admin = conn
			s.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			<-exited
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("postgres did not accept connections on %s within %v: %v", s.Addr(), readyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the node (fast shutdown: sessions are ended) and removes its
// directory. It returns once the postmaster has exited, which it does
// after its backends. Stopping a stopped node does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, exited, admin := s.cmd, s.exited, s.admin
	s.cmd, s.admin = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = admin.Close(ctx)
		cancel()
	}
	var errs []error
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		errs = append(errs, fmt.Errorf("SIGINT to postgres: %w", err))
	}
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		errs = append(errs, fmt.Errorf("postgres did not exit within %v of SIGINT and was sent SIGQUIT", stopTimeout))
	}
	s.mu.Lock()
	err := s.waitErr
	s.mu.Unlock()
	if err != nil {
		errs = append(errs, fmt.Errorf("postgres exited with %v\n%s", err, s.Log()))
	}
	log := s.Log()
	s.mu.Lock()
	s.lastLog = log
	s.mu.Unlock()
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NewDatabase creates an empty database on the node for the test and
// returns its DSN (see DSN). It is dropped when the test ends, its
// sessions ended (DROP DATABASE ... WITH (FORCE)).
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name, err := s.createDatabase()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// A stopped node took its databases with it.
		if err := s.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil && !errors.Is(err, errStopped) {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s.DSN(name)
}

// NewSchema creates an empty schema for the test in the node's postgres
// database and returns a DSN whose search_path is that schema alone (a
// run-time parameter pgx sends when it connects): what the test's
// connections create goes there. It is dropped, with all it holds, when
// the test ends. A schema costs a few milliseconds where a database costs
// a quarter of a second, but the tests share one database: its roles,
// extensions and advisory locks.
func (s *Server) NewSchema(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.schemas++
	name := "test_" + strconv.Itoa(s.schemas)
	s.mu.Unlock()
	if err := s.exec("CREATE SCHEMA " + name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.exec("DROP SCHEMA IF EXISTS " + name + " CASCADE"); err != nil && !errors.Is(err, errStopped) {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s.DSN("postgres") + "&search_path=" + name
}

func (s *Server) createDatabase() (string, error) {
	s.mu.Lock()
	s.dbs++
	name := "test_" + strconv.Itoa(s.dbs)
	s.mu.Unlock()
	// template0 holds nothing a test could have added to template1.
	return name, s.exec("CREATE DATABASE " + name + " TEMPLATE template0")
}

// exec runs a statement on the node's postgres database.
func (s *Server) exec(sql string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		return errStopped
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// The node the tests of a binary share (NewDatabase), started on first use
// and stopped by Main.
var (
	mainRunning atomic.Bool
	sharedMu    sync.Mutex
	shared      *Server
	sharedErr   error
)

// Main runs the tests of m, then stops the shared node if one was started;
// a test binary using NewDatabase calls it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// A node that fails to stop fails the run.
func Main(m *testing.M) int {
	mainRunning.Store(true)
	code := m.Run()
	mainRunning.Store(false)
	sharedMu.Lock()
	s := shared
	shared, sharedErr = nil, errors.New("pgtest: the shared node was stopped (Main returned)")
	sharedMu.Unlock()
	if s != nil {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the node the tests of the binary share, starting it on
// the first call. It fails the test when the node cannot start (as every
// later call does), or when TestMain does not call Main.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatalf("pgtest: the shared node is stopped by Main: add func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }")
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = start(false, os.Getenv("PATH"), debianBinGlob)
	}
	if sharedErr != nil {
		t.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// NewDatabase creates an empty database on the shared node for the test
// and returns its DSN; it is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return Shared(t).NewDatabase(t)
}

// NewSchema creates an empty schema on the shared node for the test and
// returns a DSN using it (Server.NewSchema); it is dropped when the test
// ends.
func NewSchema(t testing.TB) string {
	t.Helper()
	return Shared(t).NewSchema(t)
}
