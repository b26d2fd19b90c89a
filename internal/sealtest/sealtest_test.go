package sealtest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/a2abind/a2abind/agent/sealed"
)

// recorder is a testing.TB that records its failures instead of ending
// the test.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

const secret = "tok-0f6e2a91-do-not-store-in-clear"

// AssertAbsent finds a secret as itself, in base64 (whole, or at another
// offset of a longer base64), and in hex, within other bytes; it passes a
// dump holding none, and AssertPresent does the reverse.
func TestAssertFindsEachForm(t *testing.T) {
	other := base64.StdEncoding.EncodeToString([]byte("x" + secret))[:40] // base64 at another offset: the prefix does not match
	b64 := base64.StdEncoding.EncodeToString([]byte(secret + "-and-more"))
	for name, form := range map[string]string{
		"itself":                    secret,
		"base64":                    base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 of a longer string": b64,
		"hex":                       "\\x" + hexOf(secret),
	} {
		dump := []byte("before " + form + " after")
		r := &recorder{TB: t}
		AssertAbsent(r, "the dump", dump, "unrelated", secret)
		if len(r.failed) != 1 || !bytes.Contains([]byte(r.failed[0]), []byte(secret)) {
			t.Errorf("%s: AssertAbsent reported %q", name, r.failed)
		}
		r = &recorder{TB: t}
		AssertPresent(r, "the dump", dump, secret)
		if len(r.failed) != 0 {
			t.Errorf("%s: AssertPresent reported %q", name, r.failed)
		}
	}
	r := &recorder{TB: t}
	AssertAbsent(r, "the dump", []byte("before "+other+" after"), secret)
	if len(r.failed) != 0 {
		t.Errorf("a dump without the secret: AssertAbsent reported %q", r.failed)
	}
	AssertPresent(r, "the dump", []byte("nothing"), secret, "unrelated")
	if len(r.failed) != 2 {
		t.Errorf("a dump without the secrets: AssertPresent reported %q", r.failed)
	}
	if f := Forms("hi"); len(f) != 4 || f[2] != "aGk=" || f[3] != "6869" {
		t.Errorf("the forms of a short secret: %q", f)
	}
}

// NewRing's first key is current; RingOf keeps the keys it is given, so
// that a rotation can put one key in several rings.
func TestRings(t *testing.T) {
	k1 := NewKey(t, "k1")
	for _, r := range []*sealed.Ring{NewRing(t, "k2", "k1"), RingOf(t, NewKey(t, "k2"), k1)} {
		v, err := r.Seal([]byte("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := sealed.KeyID(v); id != "k2" || err != nil {
			t.Fatalf("sealed with %q %v", id, err)
		}
	}
	v, err := RingOf(t, k1).Seal([]byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := RingOf(t, NewKey(t, "k2"), k1).Open(v, nil); err != nil || string(got) != "x" {
		t.Fatalf("a ring holding k1 opens what k1 sealed: %q %v", got, err)
	}
}
