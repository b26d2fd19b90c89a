package refagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

func sha(tok string) string {
	d := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(d[:])
}

func TestTokensFile(t *testing.T) {
	file := strings.Join([]string{
		"# accepted tokens",
		"",
		"alice-token-1 alice",
		"  " + sha("bob.token_2~+/==") + "\tbob  ",
		"anonymous-token",
		"sha256:" + strings.ToUpper(strings.TrimPrefix(sha("upper-hex"), "sha256:")),
	}, "\n")
	tokens, err := ParseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if tokens.Len() != 4 {
		t.Fatalf("%d tokens, want 4", tokens.Len())
	}
	for _, tc := range []struct{ token, subject string }{
		{"alice-token-1", "alice"},
		{"bob.token_2~+/==", "bob"},
		{"anonymous-token", ""},
		{"upper-hex", ""},
	} {
		c, err := tokens.Verify(context.Background(), tc.token, a2a.MethodSendMessage)
		if err != nil || c.Subject != tc.subject {
			t.Errorf("%s: caller %+v, err %v; want subject %q", tc.token, c, err, tc.subject)
		}
	}
	for _, bad := range []string{"", "alice-token", "alice-token-1 ", "alice", "bob.token_2~+/=", sha("alice-token-1")} {
		_, err := tokens.Verify(context.Background(), bad, a2a.MethodSendMessage)
		var e *a2a.Error
		if !errors.As(err, &e) || e.Token != a2a.TokenUnauthenticated {
			t.Errorf("%q: err %v, want unauthenticated", bad, err)
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
}

// TestTokensFileErrors: errors name the line, never its token.
func TestTokensFileErrors(t *testing.T) {
	const secret = "Sup3rSecret"
	cases := []struct{ name, file, want string }{
		{"empty", "", "no token"},
		{"comments only", "# nothing\n\n", "no token"},
		{"three fields", secret + " alice extra", "1: want TOKEN [SUBJECT]"},
		{"Bearer prefix", "# x\nBearer " + secret, "2: starts with \"Bearer\""},
		{"not a b64token", secret + "\"!", "1: the token is not an RFC 6750 bearer token"},
		{"short digest", "sha256:abcd", "1: sha256: is not followed by 64 hex digits"},
		{"bad hex", "sha256:" + strings.Repeat("zz", 32), "1: sha256: is not followed"},
		{"duplicate", secret + " a\n" + sha(secret) + " b", "2: the same token as line 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
}

func TestLoadTokensNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "tokens")
	if err := os.WriteFile(bad, []byte("ok-token\nsha256:12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Fatalf("err %v, want it to start %s:2:", err, bad)
	}
	if _, err := LoadTokens(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", MaxTokensFileSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err %v", err)
	}
}

func TestValidBearer(t *testing.T) {
	for s, want := range map[string]bool{
		"abc": true, "a-b.c_d~e+f/g": true, "abc==": true, "A1": true,
		"": false, "=": false, "==abc": false, "a b": false, "a:b": false, "a=b": false, "é": false, "a\n": false,
	} {
		if got := ValidBearer(s); got != want {
			t.Errorf("ValidBearer(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestVerifierOverHTTP: with a verifier the card requires a bearer token
// (and is still served without one), and calls need an accepted token.
func TestVerifierOverHTTP(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader("good-token carol\n"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ra, err := Start(ctx, Config{ID: "guarded", HTTP: ln, Verifier: tokens})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close(ctx)
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: strings.TrimSuffix(ra.HTTPURL(), HTTPPath)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	card := c.Card()
	if card == nil || len(card.SecurityRequirements) != 1 || card.SecuritySchemes[BearerScheme].Scheme == nil {
		t.Fatalf("card: %+v", card)
	}
	if h, ok := card.SecuritySchemes[BearerScheme].Scheme.(*a2a.HTTPAuthSecurityScheme); !ok || h.Scheme != "Bearer" {
		t.Fatalf("scheme: %+v", card.SecuritySchemes[BearerScheme].Scheme)
	}
}
