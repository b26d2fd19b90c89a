package sealed

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// key returns a fixed key of id id whose bytes pass checkKey: 32 distinct
// bytes, not all printable.
func key(id string, seed byte) Key {
	b := make([]byte, KeyLen)
	for i := range b {
		b[i] = seed + byte(i)*7 + 0x80
	}
	return Key{ID: id, Secret: b}
}

func ring(t *testing.T, current Key, older ...Key) *Ring {
	t.Helper()
	r, err := New(current, older...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func line(k Key) string { return k.ID + " " + base64.StdEncoding.EncodeToString(k.Secret) }

func TestSealOpensWithTheSameAAD(t *testing.T) {
	r := ring(t, key("k1", 1))
	for _, tc := range []struct {
		name       string
		plain, aad []byte
	}{
		{"a token", []byte("tok-123"), AAD("push", "task-1", "cfg-1")},
		{"empty plaintext", []byte{}, AAD("push", "task-1", "cfg-1")},
		{"no aad", []byte("x"), nil},
		{"a large value", bytes.Repeat([]byte("abc"), 100_000), AAD("inbox")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := r.Seal(tc.plain, tc.aad)
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != len(tc.plain)+r.Overhead() {
				t.Fatalf("sealed %d bytes into %d, want %d more", len(tc.plain), len(v), r.Overhead())
			}
			if len(tc.plain) >= 4 && bytes.Contains(v, tc.plain) {
				t.Fatal("the plaintext shows in the sealed value")
			}
			if n, err := PlainLen(v); err != nil || n != len(tc.plain) {
				t.Fatalf("PlainLen %d %v, want %d", n, err, len(tc.plain))
			}
			if id, err := KeyID(v); err != nil || id != "k1" {
				t.Fatalf("KeyID %q %v", id, err)
			}
			got, err := r.Open(v, tc.aad)
			if err != nil || !bytes.Equal(got, tc.plain) {
				t.Fatalf("Open: %v", err)
			}
		})
	}
}

// Each value has its own nonce: the same plaintext seals differently.
func TestSealingTwiceDiffers(t *testing.T) {
	r := ring(t, key("k1", 1))
	a, _ := r.Seal([]byte("same"), nil)
	b, _ := r.Seal([]byte("same"), nil)
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one plaintext are equal")
	}
}

// A value changed in any byte, given another place's AAD, sealed by a key
// the ring lacks, or not a sealed value at all, does not open, with an
// error saying which; nothing panics.
func TestWhatDoesNotOpen(t *testing.T) {
	r := ring(t, key("k1", 1))
	aad := AAD("push", "task-1", "cfg-1")
	v, err := r.Seal([]byte("secret credentials"), aad)
	if err != nil {
		t.Fatal(err)
	}
	other := ring(t, key("k2", 2))
	fromOther, _ := other.Seal([]byte("secret credentials"), aad)
	sameIDOtherBytes := ring(t, key("k1", 9))
	flip := func(i int) []byte {
		b := bytes.Clone(v)
		b[i] ^= 0x01
		return b
	}
	renamed := bytes.Clone(v)
	renamed[3] = '2' // k1 to k2
	for _, tc := range []struct {
		name  string
		value []byte
		aad   []byte
		open  *Ring
		want  error
	}{
		{"a byte of the ciphertext changed", flip(len(v) - tagLen - 1), aad, r, ErrOpen},
		{"a byte of the tag changed", flip(len(v) - 1), aad, r, ErrOpen},
		{"a byte of the nonce changed", flip(2 + 2), aad, r, ErrOpen},
		{"the key id changed", renamed, aad, ring(t, key("k1", 1), key("k2", 2)), ErrOpen},
		{"the version changed", flip(0), aad, r, ErrFormat},
		{"truncated", v[:len(v)-1], aad, r, ErrOpen},
		{"truncated to its header", v[:4], aad, r, ErrFormat},
		{"empty", nil, aad, r, ErrFormat},
		{"a key id length past the value", []byte{version, 200, 'k'}, aad, r, ErrFormat},
		{"another task's AAD", v, AAD("push", "task-2", "cfg-1"), r, ErrOpen},
		{"another config's AAD", v, AAD("push", "task-1", "cfg-2"), r, ErrOpen},
		{"the same parts joined otherwise", v, AAD("push", "task-1cfg-1"), r, ErrOpen},
		{"no AAD", v, nil, r, ErrOpen},
		{"sealed with a key the ring lacks", fromOther, aad, r, ErrUnknownKey},
		{"a key of the same id but other bytes", v, aad, sameIDOtherBytes, ErrOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.open.Open(tc.value, tc.aad)
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Open: %v, %q; want %v", err, got, tc.want)
			}
		})
	}
	if _, err := r.Open(fromOther, aad); !strings.Contains(err.Error(), `"k2"`) || !strings.Contains(err.Error(), "k1") {
		t.Fatalf("the unknown key's error names neither key: %v", err)
	}
}

// Rotation: a ring with a new current key seals with it and still opens
// what the old key sealed; without the old key, that fails.
func TestRotation(t *testing.T) {
	k1, k2 := key("k1", 1), key("k2", 2)
	aad := AAD("x")
	old, _ := ring(t, k1).Seal([]byte("v"), aad)
	rotated := ring(t, k2, k1)
	if rotated.Current() != "k2" || strings.Join(rotated.IDs(), ",") != "k2,k1" || !rotated.Has("k1") {
		t.Fatalf("ring %v", rotated)
	}
	if got, err := rotated.Open(old, aad); err != nil || string(got) != "v" {
		t.Fatalf("the old value: %v", err)
	}
	fresh, _ := rotated.Seal([]byte("v"), aad)
	if id, _ := KeyID(fresh); id != "k2" {
		t.Fatalf("sealed with %s", id)
	}
	if _, err := ring(t, k2).Open(old, aad); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the old value without its key: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	zero := Key{ID: "z", Secret: make([]byte, KeyLen)}
	pass := Key{ID: "p", Secret: []byte("Correct-Horse/Battery+Staple#42!")}
	for _, tc := range []struct {
		name string
		keys []Key
		says string
	}{
		{"a short key", []Key{{ID: "k", Secret: key("k", 1).Secret[:16]}}, "is 32 bytes, not 16"},
		{"a long key", []Key{{ID: "k", Secret: append(key("k", 1).Secret, 1)}}, "not 33"},
		{"a zero key", []Key{zero}, "weak"},
		{"a passphrase", []Key{pass}, "printable"},
		{"an empty id", []Key{key("", 1)}, "1 to 64"},
		{"an id with a space", []Key{key("a b", 1)}, "only letters"},
		{"a long id", []Key{key(strings.Repeat("k", 65), 1)}, "not 65"},
		{"an id twice", []Key{key("k", 1), key("k", 2)}, "given twice"},
		{"one key under two ids", []Key{key("a", 1), key("b", 1)}, "same bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.keys[0], tc.keys[1:]...)
			if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v, want ErrKey saying %q", err, tc.says)
			}
		})
	}
}

func TestParse(t *testing.T) {
	k1, k2 := key("k1", 1), key("k2", 2)
	raw := k2.ID + "\t" + base64.RawStdEncoding.EncodeToString(k2.Secret)
	good := "# the agent's keys\n\n" + line(k1) + "\n  " + raw + "  \n# end\n"
	r, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if r.Current() != "k1" || strings.Join(r.IDs(), ",") != "k1,k2" {
		t.Fatalf("ring %v", r)
	}
	v, _ := ring(t, k2).Seal([]byte("x"), nil)
	if got, err := r.Open(v, nil); err != nil || string(got) != "x" {
		t.Fatalf("a value of the second key: %v", err)
	}
	for _, tc := range []struct {
		name, file, says string
	}{
		{"empty", "", "no key"},
		{"comments only", "# nothing\n", "no key"},
		{"three fields", line(k1) + " extra\n", "line 1"},
		{"a key alone", "\n" + base64.StdEncoding.EncodeToString(k1.Secret), "line 2"},
		{"not base64", "k1 !!!!\n", "not standard base64"},
		{"a short key", "k1 " + base64.StdEncoding.EncodeToString(k1.Secret[:31]), "not 31"},
		{"a weak key", "k1 " + base64.StdEncoding.EncodeToString(make([]byte, 32)), "weak"},
		{"a bad id", "k/1 " + base64.StdEncoding.EncodeToString(k1.Secret), "only letters"},
		{"an id twice", line(k1) + "\n" + "k1 " + base64.StdEncoding.EncodeToString(k2.Secret), "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.file)); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v, want ErrKey saying %q", err, tc.says)
			}
		})
	}
}

// LoadFile reads a key file; one others may read is used, with a
// warning.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{
		{"owner only", 0o600, false},
		{"group readable", 0o640, true},
		{"world readable", 0o604, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(line(key("k1", 1))+"\n"), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			var logged bytes.Buffer
			r, err := LoadFile(path, slog.New(slog.NewTextHandler(&logged, nil)))
			if err != nil || r.Current() != "k1" {
				t.Fatalf("LoadFile: %v", err)
			}
			if warned := strings.Contains(logged.String(), "chmod 600"); warned != tc.warn {
				t.Fatalf("warned %v, want %v: %s", warned, tc.warn, logged.String())
			}
			if strings.Contains(logged.String(), base64.StdEncoding.EncodeToString(key("k1", 1).Secret)) {
				t.Fatal("the key was logged")
			}
		})
	}
	if _, err := LoadFile(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := LoadFile(dir, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("k1 short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(bad, nil); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a bad file: %v", err)
	}
}

// Neither a Key nor a Ring prints its bytes.
func TestKeysDoNotPrint(t *testing.T) {
	k := key("k1", 1)
	r := ring(t, k)
	secret := fmt.Sprintf("%x", k.Secret[:8])
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v", k, k, k), fmt.Sprint(r), fmt.Sprintf("%v %+v", r, r)} {
		if strings.Contains(s, secret) || strings.Contains(s, string(k.Secret[:8])) {
			t.Fatalf("printed the key: %s", s)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey("a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey("b")
	if len(a.Secret) != KeyLen || bytes.Equal(a.Secret, b.Secret) {
		t.Fatalf("keys %v %v", a, b)
	}
	if _, err := New(a, b); err != nil {
		t.Fatalf("generated keys refused: %v", err)
	}
	if _, err := GenerateKey("a b"); !errors.Is(err, ErrKey) {
		t.Fatalf("a bad id: %v", err)
	}
}

func TestAADIsUnambiguous(t *testing.T) {
	seen := map[string][]string{}
	for _, parts := range [][]string{{}, {""}, {"", ""}, {"a"}, {"ab"}, {"a", "b"}, {"ab", ""}, {"", "ab"}, {"a", "", "b"}} {
		k := string(AAD(parts...))
		if other, ok := seen[k]; ok {
			t.Fatalf("%q and %q give the same AAD", parts, other)
		}
		seen[k] = parts
	}
}
