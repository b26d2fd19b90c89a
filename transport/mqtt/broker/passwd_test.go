package broker

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mosquittoPasswd returns Debian's mosquitto_passwd (package mosquitto),
// failing the test when it is missing: the interoperability tests are
// mandatory.
func mosquittoPasswd(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto_passwd"); err == nil {
		return p
	}
	const debian = "/usr/bin/mosquitto_passwd"
	if _, err := os.Stat(debian); err != nil {
		t.Fatalf("mosquitto_passwd not found on PATH nor at %s; install it: apt-get install -y mosquitto", debian)
	}
	return debian
}

func runMosquittoPasswd(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(mosquittoPasswd(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mosquitto_passwd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestPasswordFileFormat: Set writes mosquitto 2.0's $7$ line: the
// iteration count, 12 bytes of salt and 64 bytes of PBKDF2-HMAC-SHA512, in
// standard base64 with padding; Verify accepts the password only.
func TestPasswordFileFormat(t *testing.T) {
	var f PasswordFile
	if err := f.Set("acme/lab/echo", "s3cret", 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("acme/lab/fast", "quick", 101); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^acme/lab/echo:\$7\$10000\$[A-Za-z0-9+/]{16}\$[A-Za-z0-9+/]{86}==\nacme/lab/fast:\$7\$101\$[A-Za-z0-9+/]{16}\$[A-Za-z0-9+/]{86}==\n$`)
	if got := string(f.Bytes()); !line.MatchString(got) {
		t.Errorf("file:\n%s\ndoes not match %s", got, line)
	}
	g, err := ParsePasswordFile(f.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, password string
		want           bool
	}{
		{"acme/lab/echo", "s3cret", true},
		{"acme/lab/echo", "s3cret ", false},
		{"acme/lab/echo", "", false},
		{"acme/lab/fast", "quick", true},
		{"acme/lab/fast", "s3cret", false},
		{"acme/lab/nobody", "s3cret", false},
	} {
		if got := g.Verify(c.user, c.password); got != c.want {
			t.Errorf("Verify(%q, %q) = %v, want %v", c.user, c.password, got, c.want)
		}
	}
	// A new password replaces the old one in place, with a new salt.
	before := string(g.Bytes())
	if err := g.Set("acme/lab/echo", "other", 101); err != nil {
		t.Fatal(err)
	}
	if g.Verify("acme/lab/echo", "s3cret") || !g.Verify("acme/lab/echo", "other") {
		t.Errorf("after Set, the old password still works or the new one does not")
	}
	if got := g.Users(); len(got) != 2 || got[0] != "acme/lab/echo" || got[1] != "acme/lab/fast" {
		t.Errorf("Users() = %v after replacing a password", got)
	}
	if string(g.Bytes()) == before {
		t.Errorf("the file did not change")
	}
}

// TestPasswordFileFromMosquittoPasswd: files written by Debian's
// mosquitto_passwd, both $7$ (its default) and $6$ (-H sha512), are read
// and verified.
func TestPasswordFileFromMosquittoPasswd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	runMosquittoPasswd(t, "-c", "-b", path, "acme/lab/echo", "pbkdf2-secret")
	runMosquittoPasswd(t, "-H", "sha512", "-b", path, "acme/lab/old", "sha512-secret")
	f, err := ReadPasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Verify("acme/lab/echo", "pbkdf2-secret") || f.Verify("acme/lab/echo", "pbkdf2-secreT") {
		t.Errorf("the $7$ entry of mosquitto_passwd is not verified right")
	}
	if !f.Verify("acme/lab/old", "sha512-secret") || f.Verify("acme/lab/old", "pbkdf2-secret") {
		t.Errorf("the $6$ entry of mosquitto_passwd is not verified right")
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "acme/lab/echo:$7$101$") {
		t.Errorf("mosquitto_passwd wrote %q; expected its default $7$101$", data)
	}
}

// TestMosquittoPasswdReadsOurFile: mosquitto_passwd adds a user to a file
// written here and deletes one from it, keeping the other entries as
// they were (its parser reads ours).
func TestMosquittoPasswdReadsOurFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	var f PasswordFile
	for _, u := range []string{"acme/lab/a", "acme/lab/b"} {
		if err := f.Set(u, "pw-"+u, 101); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	runMosquittoPasswd(t, "-b", path, "acme/lab/c", "pw-c")
	runMosquittoPasswd(t, "-D", path, "acme/lab/a")
	g, err := ReadPasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Users(); strings.Join(got, " ") != "acme/lab/b acme/lab/c" {
		t.Errorf("users after mosquitto_passwd: %v", got)
	}
	if !g.Verify("acme/lab/b", "pw-acme/lab/b") || !g.Verify("acme/lab/c", "pw-c") {
		t.Errorf("an entry does not verify after mosquitto_passwd rewrote the file")
	}
}

func TestParsePasswordFile(t *testing.T) {
	var f PasswordFile
	if err := f.Set("u", "p", 101); err != nil {
		t.Fatal(err)
	}
	good := strings.TrimSuffix(string(f.Bytes()), "\n")
	hash := strings.TrimPrefix(good, "u:")
	for _, c := range []struct {
		name, file string
		wantErr    string
		users      []string
	}{
		{"empty", "", "", nil},
		{"comments and lines without a colon are kept", "# users\n\n" + good + "\nnot an entry\n", "", []string{"u"}},
		{"blanks around the fields", "  u \t:  " + hash + " \r\n", "", []string{"u"}},
		{"a user twice", good + "\n" + good + "\n", "appears twice", nil},
		{"no user name", ":" + hash + "\n", "empty user name", nil},
		{"plain text password", "u:secret\n", "does not start with", nil},
		{"unknown hash type", "u:$5$abc$def\n", "neither", nil},
		{"iterations not a number", "u:$7$x$" + strings.SplitN(hash, "$", 4)[3] + "\n", "iteration count", nil},
		{"zero iterations", "u:$7$0$" + strings.SplitN(hash, "$", 4)[3] + "\n", "iteration count", nil},
		{"salt not base64", strings.Replace(good, "$101$", "$101$!", 1) + "\n", "salt", nil},
		{"short hash", good[:len(good)-8] + "\n", "hash is not 64 bytes", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := ParsePasswordFile([]byte(c.file))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), hash[10:30]) {
					t.Errorf("the error quotes the hash: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Users(); strings.Join(got, ",") != strings.Join(c.users, ",") {
				t.Errorf("Users() = %v, want %v", got, c.users)
			}
			if string(g.Bytes()) != c.file && !strings.Contains(c.name, "blanks") {
				t.Errorf("Bytes() = %q, want the file as read %q", g.Bytes(), c.file)
			}
		})
	}
}

func TestPasswordFileSetDeleteWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "passwd")
	if _, err := ReadPasswordFile(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPasswordFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	f, err := ParsePasswordFile([]byte("# keep me\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ user, password, wantErr string }{
		{"", "p", "empty user name"},
		{"a:b", "p", "colon"},
		{"a\tb", "p", "control"},
		{" a", "p", "blanks"},
		{"a", "", "empty password"},
		{"a", "p\x00q", "NUL"},
	} {
		if err := f.Set(c.user, c.password, 101); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Set(%q, %q): %v, want an error containing %q", c.user, c.password, err, c.wantErr)
		}
	}
	if err := f.Set("a", "p", -1); err == nil {
		t.Errorf("Set with -1 iterations: no error")
	}
	for _, u := range []string{"acme/lab/a", "acme/lab/b"} {
		if err := f.Set(u, "p", 101); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Delete("acme/lab/zz"); !errors.Is(err, ErrNoUser) {
		t.Errorf("Delete of an unknown user: %v, want ErrNoUser", err)
	}
	if err := f.Delete("acme/lab/a"); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("rewritten file mode %v, want the old 0640", fi.Mode().Perm())
	}
	g, err := ReadPasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(g.Bytes()); !strings.HasPrefix(got, "# keep me\nacme/lab/b:$7$101$") || strings.Count(got, "\n") != 2 {
		t.Errorf("file after delete and write:\n%s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left in %s: %v", dir, entries)
	}
}
