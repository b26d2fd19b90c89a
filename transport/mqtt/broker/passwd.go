package broker

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Password file: mosquitto 2.0's password_file format, so that one file
// serves the embedded broker and mosquitto alike. Each line is
//
//	user:$7$<iterations>$<base64 salt>$<base64 hash>
//
// where the hash is PBKDF2-HMAC-SHA512 of the password with the 12-byte
// salt, 64 bytes long, and base64 is the standard alphabet with padding
// (mosquitto 2.0.11: src/password_mosq.c, apps/mosquitto_passwd). Lines
// of the older form user:$6$<salt>$<hash> (one SHA-512 of password and
// salt, mosquitto 1.x) are read too, never written. As in mosquitto, lines
// starting with # and lines without a colon are skipped, and blanks around
// the user name and the hash are ignored.

const (
	// DefaultPasswordIterations is the PBKDF2 iteration count
	// PasswordFile.Set uses when given 0. mosquitto_passwd 2.0 writes 101;
	// both brokers read any count, so a file may mix them.
	DefaultPasswordIterations = 10000

	// maxPasswordIterations bounds the count a file may ask for: each
	// CONNECT of that user costs that many HMAC rounds.
	maxPasswordIterations = 10_000_000

	pwSaltLen   = 12 // mosquitto's SALT_LEN
	pwHashLen   = 64 // SHA-512
	pwTypePBKDF = "7"
	pwTypeSHA   = "6"
	maxUserLen  = 65535
)

// ErrNoUser reports a user name absent from a password file.
var ErrNoUser = errors.New("broker: no such user in the password file")

// PasswordFile is a password file in memory: its users' salted hashes,
// and its other lines (comments, blank lines) kept in place. The zero
// value is an empty file. It is not safe for concurrent use; the broker
// reads its file once, at Start.
type PasswordFile struct {
	lines []pwLine
}

// pwLine is one line of the file: a user's entry, or text kept as is.
type pwLine struct {
	user string // "" for a line kept as is
	text string // the hash field, or the whole line when user is ""
	hash pwHash
}

// pwHash is a decoded hash field.
type pwHash struct {
	pbkdf      bool // $7$ (else $6$)
	iterations int
	salt, sum  []byte
}

// ReadPasswordFile reads and checks a password file. A missing file is an
// error (errors.Is(err, fs.ErrNotExist)).
func ReadPasswordFile(path string) (*PasswordFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("broker: password file: %w", err)
	}
	f, err := ParsePasswordFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParsePasswordFile parses a password file. Unlike mosquitto, which drops
// an entry it cannot decode and goes on, it fails on the first such line
// (naming the line, never the hash) and on a user named twice: a broker
// that guards access should not start with a user silently missing.
func ParsePasswordFile(data []byte) (*PasswordFile, error) {
	f := new(PasswordFile)
	seen := make(map[string]bool)
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		user, rest, ok := strings.Cut(line, ":")
		if strings.HasPrefix(line, "#") || !ok {
			f.lines = append(f.lines, pwLine{text: line})
			continue
		}
		user = trimBlanks(user)
		field, _, _ := strings.Cut(rest, ":")
		field = trimBlanks(field)
		if user == "" {
			return nil, fmt.Errorf("line %d: empty user name", i+1)
		}
		if seen[user] {
			return nil, fmt.Errorf("line %d: user %q appears twice", i+1, user)
		}
		h, err := parsePWHash(field)
		if err != nil {
			return nil, fmt.Errorf("line %d: user %q: %w", i+1, user, err)
		}
		seen[user] = true
		f.lines = append(f.lines, pwLine{user: user, text: field, hash: h})
	}
	if len(data) == 0 {
		f.lines = nil
	}
	return f, nil
}

// trimBlanks trims what mosquitto's misc__trimblanks trims.
func trimBlanks(s string) string {
	return strings.TrimFunc(s, unicode.IsSpace)
}

// parsePWHash decodes $7$<iterations>$<salt>$<hash> or $6$<salt>$<hash>.
// Its errors never quote the field.
func parsePWHash(field string) (pwHash, error) {
	parts := strings.Split(field, "$")
	if len(parts) < 1 || parts[0] != "" {
		return pwHash{}, errors.New("the hash does not start with $6$ or $7$")
	}
	var h pwHash
	switch {
	case len(parts) == 5 && parts[1] == pwTypePBKDF:
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 1 || n > maxPasswordIterations {
			return pwHash{}, fmt.Errorf("iteration count is not a number from 1 to %d", maxPasswordIterations)
		}
		h.pbkdf, h.iterations = true, n
		parts = parts[3:]
	case len(parts) == 4 && parts[1] == pwTypeSHA:
		parts = parts[2:]
	default:
		return pwHash{}, errors.New("the hash is neither $7$<iterations>$<salt>$<hash> nor $6$<salt>$<hash>")
	}
	var err error
	if h.salt, err = base64.StdEncoding.DecodeString(parts[0]); err != nil || len(h.salt) != pwSaltLen {
		return pwHash{}, fmt.Errorf("the salt is not %d bytes of base64", pwSaltLen)
	}
	if h.sum, err = base64.StdEncoding.DecodeString(parts[1]); err != nil || len(h.sum) != pwHashLen {
		return pwHash{}, fmt.Errorf("the hash is not %d bytes of base64", pwHashLen)
	}
	return h, nil
}

// hash computes the hash of password with h's salt and method.
func (h pwHash) hash(password string) []byte {
	if !h.pbkdf {
		d := sha512.New()
		d.Write([]byte(password))
		d.Write(h.salt)
		return d.Sum(nil)
	}
	// The key length is fixed and valid: Key cannot fail.
	sum, _ := pbkdf2.Key(sha512.New, password, h.salt, h.iterations, pwHashLen)
	return sum
}

// String encodes the hash field as mosquitto_passwd writes it.
func (h pwHash) String() string {
	salt, sum := base64.StdEncoding.EncodeToString(h.salt), base64.StdEncoding.EncodeToString(h.sum)
	if !h.pbkdf {
		return "$" + pwTypeSHA + "$" + salt + "$" + sum
	}
	return "$" + pwTypePBKDF + "$" + strconv.Itoa(h.iterations) + "$" + salt + "$" + sum
}

// dummyHash stands in for an unknown user, so that a wrong user name costs
// as much time as a wrong password.
var dummyHash = pwHash{pbkdf: true, iterations: DefaultPasswordIterations, salt: make([]byte, pwSaltLen), sum: make([]byte, pwHashLen)}

// CheckUsername reports whether a password file can hold user, with the
// rules of mosquitto_passwd: not empty, shorter than 65536 bytes, no colon,
// no control characters; and, since both brokers trim them, no blanks at
// either end.
func CheckUsername(user string) error {
	switch {
	case user == "":
		return errors.New("empty user name")
	case len(user) > maxUserLen:
		return errors.New("user name longer than 65535 bytes")
	case strings.Contains(user, ":"):
		return errors.New("user name with a colon")
	case strings.ContainsFunc(user, unicode.IsControl):
		return errors.New("user name with a control character")
	case trimBlanks(user) != user:
		return errors.New("user name with blanks at either end")
	}
	return nil
}

// Set adds user with password, or replaces the password of an existing
// user (in place), hashing it with PBKDF2-HMAC-SHA512, a fresh random
// 12-byte salt and the given iteration count (0 means
// DefaultPasswordIterations). The password must not be empty nor hold a
// NUL byte (mosquitto reads it as a C string).
func (f *PasswordFile) Set(user, password string, iterations int) error {
	if err := CheckUsername(user); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if password == "" {
		return errors.New("broker: empty password")
	}
	if strings.ContainsRune(password, 0) {
		return errors.New("broker: password with a NUL byte")
	}
	if iterations == 0 {
		iterations = DefaultPasswordIterations
	}
	if iterations < 1 || iterations > maxPasswordIterations {
		return fmt.Errorf("broker: iteration count %d is not from 1 to %d", iterations, maxPasswordIterations)
	}
	h := pwHash{pbkdf: true, iterations: iterations, salt: make([]byte, pwSaltLen)}
	if _, err := rand.Read(h.salt); err != nil {
		return fmt.Errorf("broker: salt: %w", err)
	}
	h.sum = h.hash(password)
	entry := pwLine{user: user, text: h.String(), hash: h}
	if i := f.index(user); i >= 0 {
		f.lines[i] = entry
	} else {
		f.lines = append(f.lines, entry)
	}
	return nil
}

// Delete removes user; it returns ErrNoUser when the file has no such
// user.
func (f *PasswordFile) Delete(user string) error {
	i := f.index(user)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrNoUser, user)
	}
	f.lines = slices.Delete(f.lines, i, i+1)
	return nil
}

func (f *PasswordFile) index(user string) int {
	return slices.IndexFunc(f.lines, func(l pwLine) bool { return l.user != "" && l.user == user })
}

// Users returns the user names, in file order.
func (f *PasswordFile) Users() []string {
	var users []string
	for _, l := range f.lines {
		if l.user != "" {
			users = append(users, l.user)
		}
	}
	return users
}

// Verify reports whether password is user's. It takes about as long for an
// unknown user as for a wrong password, and compares in constant time.
func (f *PasswordFile) Verify(user, password string) bool {
	h, known := dummyHash, false
	if i := f.index(user); i >= 0 {
		h, known = f.lines[i].hash, true
	}
	sum := h.hash(password)
	return subtle.ConstantTimeCompare(sum, h.sum) == 1 && known
}

// Bytes encodes the file: one user:hash line per user, the other lines as
// read.
func (f *PasswordFile) Bytes() []byte {
	var b bytes.Buffer
	for _, l := range f.lines {
		if l.user != "" {
			b.WriteString(l.user)
			b.WriteByte(':')
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// WriteFile writes the file to path atomically (a temporary file in the
// same directory, then a rename), keeping the permission bits of the file
// it replaces, or 0600 for a new one.
func (f *PasswordFile) WriteFile(path string) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("broker: password file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	_, err = tmp.Write(f.Bytes())
	err = errors.Join(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("broker: password file: %w", err)
	}
	return nil
}
