// Package sealtest holds what the tests of the stores that seal secrets at
// rest (agent/taskstore, agent/inbox and their PostgreSQL stores) share:
// key rings, the scan of what a store wrote for the forms a secret would
// take there, and the readers of what a PostgreSQL node holds.
package sealtest

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/a2abind/a2abind/agent/sealed"
)

// NewKey generates the key id, failing t when it cannot.
func NewKey(t testing.TB, id string) sealed.Key {
	t.Helper()
	k, err := sealed.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// RingOf returns the ring of keys, the first current.
func RingOf(t testing.TB, keys ...sealed.Key) *sealed.Ring {
	t.Helper()
	r, err := sealed.New(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NewRing returns a ring of keys generated for ids, the first current.
func NewRing(t testing.TB, ids ...string) *sealed.Ring {
	t.Helper()
	keys := make([]sealed.Key, len(ids))
	for i, id := range ids {
		keys[i] = NewKey(t, id)
	}
	return RingOf(t, keys...)
}

// Forms are the forms secret would take in a dump: itself, its base64 (and
// a prefix of it, for base64 at another offset) and its hex (bytea in
// text).
func Forms(secret string) []string {
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	return []string{secret, b64, b64[:min(20, len(b64))], hexOf(secret)}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 2*len(s))
	for _, c := range []byte(s) {
		b = append(b, digits[c>>4], digits[c&15])
	}
	return string(b)
}

// Find returns the first of the Forms of secret that dump holds, or "".
func Find(dump []byte, secret string) string {
	for _, f := range Forms(secret) {
		if bytes.Contains(dump, []byte(f)) {
			return f
		}
	}
	return ""
}

// AssertAbsent fails t when dump (what is named what) holds one of
// secrets in one of its Forms.
func AssertAbsent(t testing.TB, what string, dump []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if f := Find(dump, s); f != "" {
			t.Fatalf("%s holds the secret %q (as %q)", what, s, f)
		}
	}
}

// AssertPresent fails t unless dump (what is named what) holds each of
// secrets in one of its Forms: written in clear, what AssertAbsent looks
// for is there to be found, so that its passing means something.
func AssertPresent(t testing.TB, what string, dump []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if Find(dump, s) == "" {
			t.Fatalf("%s does not hold %q, written in clear: the check would find nothing", what, s)
		}
	}
}
