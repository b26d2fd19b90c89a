// Package sealed encrypts the secrets an agent's stores keep at rest (the
// tokens and credentials of push-notification configs, the queued
// requests of the offline queue) with AES-256-GCM (NIST SP 800-38D) under
// a key ring: several keys, each with an id, one of them current. Values
// are sealed with the current key and opened with whichever key of the
// ring sealed them, so keys are rotated by adding a new current key,
// letting the stores re-seal what they write, and removing the old key
// once nothing sealed with it is left (docs/guide.md, "Secrets at rest").
//
// A sealed value is
//
//	byte      format version (1)
//	byte      length of the key id, 1 to MaxKeyIDLen
//	...       the key id
//	12 bytes  the nonce, random (crypto/rand) for each value
//	...       the ciphertext, as long as the plaintext
//	16 bytes  the authentication tag
//
// The version and key id are authenticated with the caller's associated
// data, which binds a value to where it belongs (a task and a config id,
// say: AAD builds it from such parts): a value moved to another record,
// or changed in any byte, fails to open with ErrOpen.
//
// With random 96-bit nonces, NIST SP 800-38D §8.3 bounds the values
// sealed under one key to 2^32; a store seals a value per write of a
// secret, so rotate the current key long before that.
package sealed

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// KeyLen is the length of a key: AES-256.
const KeyLen = 32

// MaxKeyIDLen is the longest key id.
const MaxKeyIDLen = 64

// version is the format version of the values this package seals.
const version = 1

// nonceLen and tagLen are those of the GCM mode this package uses
// (cipher.NewGCMWithRandomNonce): a 96-bit nonce, a 128-bit tag.
const (
	nonceLen = 12
	tagLen   = 16
)

var (
	// ErrUnknownKey is matched (errors.Is) by the error of Open for a
	// value sealed with a key the ring does not hold.
	ErrUnknownKey = errors.New("sealed: sealed with a key the ring does not hold")
	// ErrOpen is matched by the error of Open for a value that does not
	// authenticate: changed, truncated, or given the wrong associated
	// data (moved from where it was sealed).
	ErrOpen = errors.New("sealed: the value does not authenticate (changed, or not sealed for this place)")
	// ErrFormat is matched by the error of Open for a value that is not a
	// sealed value of a format this version reads.
	ErrFormat = errors.New("sealed: not a sealed value of a format this version reads")
	// ErrKey is matched by the error of New, Parse and LoadFile for a key
	// or key id that is refused.
	ErrKey = errors.New("sealed: bad key")
)

// Key is one key of a ring: its id, stored in each value it seals, and its
// 32 bytes. Its String and GoString do not show the bytes.
type Key struct {
	ID     string
	Secret []byte
}

// String names the key without its bytes.
func (k Key) String() string { return fmt.Sprintf("sealed.Key(%q, %d bytes)", k.ID, len(k.Secret)) }

// GoString is String: %#v does not show the bytes either.
func (k Key) GoString() string { return k.String() }

// GenerateKey returns a new key of id id, its bytes from crypto/rand.
func GenerateKey(id string) (Key, error) {
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	b := make([]byte, KeyLen)
	if _, err := rand.Read(b); err != nil {
		return Key{}, fmt.Errorf("sealed: %w", err)
	}
	return Key{ID: id, Secret: b}, nil
}

// Ring is a set of keys by id, one of them current: Seal uses the current
// key, Open the key whose id the value names. A Ring is immutable and safe
// for concurrent use; to rotate, make a new one and open the stores with
// it.
type Ring struct {
	current *ringKey
	byID    map[string]*ringKey
	ids     []string
}

type ringKey struct {
	id   string
	aead cipher.AEAD
}

// String names the ring's keys, the current one first, without their
// bytes.
func (r *Ring) String() string {
	if r == nil {
		return "sealed.Ring(nil)"
	}
	return "sealed.Ring(" + strings.Join(r.ids, ", ") + ")"
}

// New returns a ring of the keys given, the first of them current. Each
// must have an id of 1 to MaxKeyIDLen bytes of letters, digits, '.', '_'
// and '-', and 32 bytes that are not a weak key (see Parse); ids and keys
// may not repeat. The ring keeps its own copy of the bytes.
func New(current Key, older ...Key) (*Ring, error) {
	keys := append([]Key{current}, older...)
	r := &Ring{byID: make(map[string]*ringKey, len(keys))}
	seen := map[string]string{}
	for i, k := range keys {
		if err := checkID(k.ID); err != nil {
			return nil, err
		}
		if err := checkKey(k.Secret); err != nil {
			return nil, fmt.Errorf("%w (key %q)", err, k.ID)
		}
		if _, ok := r.byID[k.ID]; ok {
			return nil, fmt.Errorf("%w: key id %q given twice", ErrKey, k.ID)
		}
		if other, ok := seen[string(k.Secret)]; ok {
			return nil, fmt.Errorf("%w: keys %q and %q are the same bytes", ErrKey, other, k.ID)
		}
		seen[string(k.Secret)] = k.ID
		block, err := aes.NewCipher(bytes.Clone(k.Secret))
		if err != nil {
			return nil, fmt.Errorf("sealed: %w", err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("sealed: %w", err)
		}
		rk := &ringKey{id: k.ID, aead: aead}
		r.byID[k.ID] = rk
		r.ids = append(r.ids, k.ID)
		if i == 0 {
			r.current = rk
		}
	}
	return r, nil
}

// Current is the id of the key Seal uses.
func (r *Ring) Current() string { return r.current.id }

// IDs are the ids of the ring's keys, the current one first.
func (r *Ring) IDs() []string { return append([]string(nil), r.ids...) }

// Has reports whether the ring holds the key of id id.
func (r *Ring) Has(id string) bool { _, ok := r.byID[id]; return ok }

// Overhead is how many bytes a value sealed with the current key is longer
// than its plaintext.
func (r *Ring) Overhead() int { return 2 + len(r.current.id) + nonceLen + tagLen }

// Seal encrypts plain with the current key, binding it to aad (which
// Open must be given again), and returns the sealed value.
func (r *Ring) Seal(plain, aad []byte) ([]byte, error) {
	k := r.current
	out := make([]byte, 0, r.Overhead()+len(plain))
	out = append(out, version, byte(len(k.id)))
	out = append(out, k.id...)
	header := len(out)
	// The header is authenticated with aad: it is self-delimiting, so
	// header || aad is never ambiguous.
	out = k.aead.Seal(out, nil, plain, append(out[:header:header], aad...))
	if len(out) != r.Overhead()+len(plain) {
		return nil, errors.New("sealed: unexpected ciphertext length")
	}
	return out, nil
}

// Open decrypts a value Seal made with any key of the ring, given the aad
// it was sealed with. It returns an error matching ErrFormat, ErrUnknownKey
// or ErrOpen when it cannot.
func (r *Ring) Open(value, aad []byte) ([]byte, error) {
	id, header, err := parseHeader(value)
	if err != nil {
		return nil, err
	}
	k, ok := r.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: key %q (the ring holds %s)", ErrUnknownKey, id, strings.Join(r.ids, ", "))
	}
	plain, err := k.aead.Open(nil, nil, value[header:], append(value[:header:header], aad...))
	if err != nil {
		return nil, fmt.Errorf("%w (key %q)", ErrOpen, id)
	}
	return plain, nil
}

// KeyID returns the id of the key a value was sealed with, without
// opening it: a store re-seals a value whose key is not the current one.
func KeyID(value []byte) (string, error) {
	id, _, err := parseHeader(value)
	return id, err
}

// PlainLen returns the length of a sealed value's plaintext, without
// opening it.
func PlainLen(value []byte) (int, error) {
	_, header, err := parseHeader(value)
	if err != nil {
		return 0, err
	}
	return len(value) - header - nonceLen - tagLen, nil
}

// parseHeader reads the version and key id of a sealed value, and returns
// the id and the length of the header.
func parseHeader(value []byte) (string, int, error) {
	if len(value) < 2 {
		return "", 0, fmt.Errorf("%w: %d bytes", ErrFormat, len(value))
	}
	if value[0] != version {
		return "", 0, fmt.Errorf("%w: version %d", ErrFormat, value[0])
	}
	n := int(value[1])
	header := 2 + n
	if n == 0 || n > MaxKeyIDLen || len(value) < header+nonceLen+tagLen {
		return "", 0, fmt.Errorf("%w: %d bytes with a key id of %d", ErrFormat, len(value), n)
	}
	return string(value[2:header]), header, nil
}

// AAD returns associated data naming where a value belongs, from parts
// (a label, then ids): each part is preceded by its length, so that no
// two lists of parts give the same bytes.
func AAD(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += binary.MaxVarintLen64 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// checkID checks a key id: 1 to MaxKeyIDLen letters, digits, '.', '_' or
// '-'.
func checkID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen {
		return fmt.Errorf("%w: a key id has 1 to %d characters, not %d", ErrKey, MaxKeyIDLen, len(id))
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: key id %q: only letters, digits, '.', '_' and '-'", ErrKey, id)
		}
	}
	return nil
}

// checkKey refuses a key of the wrong length, and keys no random source
// gives: fewer than 16 distinct bytes (a repeated pattern; 32 random bytes
// have about 30), or only printable ASCII (a passphrase; 32 random bytes
// are all printable once in about 6·10^13).
func checkKey(b []byte) error {
	if len(b) != KeyLen {
		return fmt.Errorf("%w: a key is %d bytes, not %d", ErrKey, KeyLen, len(b))
	}
	var seen [256]bool
	distinct, printable := 0, true
	for _, c := range b {
		if !seen[c] {
			seen[c] = true
			distinct++
		}
		if c < 0x20 || c > 0x7e {
			printable = false
		}
	}
	switch {
	case distinct < 16:
		return fmt.Errorf("%w: a weak key (%d distinct bytes): make one from a random source (head -c 32 /dev/urandom | base64)", ErrKey, distinct)
	case printable:
		return fmt.Errorf("%w: a weak key (all printable: a passphrase?): make one from a random source (head -c 32 /dev/urandom | base64)", ErrKey)
	}
	return nil
}

// Parse reads a key file:
//
//	# comments and blank lines are skipped
//	2026-06 q1Xv0cJ3...base64 of 32 bytes...=
//	2026-01 Zm9vYmFy...base64 of 32 bytes...=
//
// One key a line: its id, white space, and its 32 bytes in standard
// base64 (RFC 4648 §4, padded or not). The first key is current; the
// others only open what they sealed. Keys that are not 32 bytes, weak keys
// (a repeated pattern, or printable text rather than random bytes), and
// repeated ids or keys are refused, naming the line.
func Parse(data []byte) (*Ring, error) {
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: line %d: want a key id and its base64, %d fields", ErrKey, line, len(fields))
		}
		if err := checkID(fields[0]); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		secret, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil {
			secret, err = base64.RawStdEncoding.DecodeString(fields[1])
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: key %q is not standard base64", ErrKey, line, fields[0])
		}
		if err := checkKey(secret); err != nil {
			return nil, fmt.Errorf("line %d: %w (key %q)", line, err, fields[0])
		}
		keys = append(keys, Key{ID: fields[0], Secret: secret})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key in the file", ErrKey)
	}
	return New(keys[0], keys[1:]...)
}

// LoadFile reads the key file at path (see Parse). A file that group or
// others may read or write is used all the same, with a Warn to logger
// (nil: none), saying to chmod 600 it.
func LoadFile(path string, logger *slog.Logger) (*Ring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("sealed: key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && logger != nil {
		logger.Warn("sealed: the key file may be read or written by others than its owner: chmod 600 it",
			"path", path, "mode", perm.String())
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	r, err := Parse(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
