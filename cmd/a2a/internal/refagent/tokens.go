package refagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

// MaxTokensFileSize bounds a tokens file (LoadTokens refuses a larger one).
const MaxTokensFileSize = 1 << 20

// Tokens is an agent.Verifier that accepts the bearer tokens listed in a
// file (see LoadTokens). It keeps only their SHA-256 digests and compares
// a presented token's digest with every entry in constant time.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest  [sha256.Size]byte
	subject string
}

var _ agent.Verifier = (*Tokens)(nil)

// LoadTokens reads a tokens file: one accepted bearer token per line,
// optionally followed by white space and the caller's subject:
//
//	# comment; blank lines are skipped
//	TOKEN [SUBJECT]
//	sha256:HEX [SUBJECT]
//
// TOKEN is the token itself (an RFC 6750 b64token: letters, digits,
// "-._~+/", then "=" padding); sha256:HEX is the hex SHA-256 of the token
// (printf %s "$TOKEN" | sha256sum), so the file need not hold the token in
// clear. SUBJECT, one word, becomes the caller's subject (agent.Caller);
// without it the caller is authenticated with an empty subject. Errors
// name the file and line, never the token.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTokensFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxTokensFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxTokensFileSize)
	}
	t, err := ParseTokens(bytes.NewReader(data))
	var le *lineError
	switch {
	case errors.As(err, &le):
		return nil, fmt.Errorf("%s:%w", path, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// lineError is a parse error at a line; its message never holds the line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %s", e.line, e.msg) }

// ParseTokens reads the tokens file format of LoadTokens from r. It fails
// on a file with no token at all: such an agent would refuse every call.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	first := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxTokensFileSize)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 2 {
			return nil, &lineError{n, "want TOKEN [SUBJECT] or sha256:HEX [SUBJECT], found more than two fields"}
		}
		if strings.EqualFold(fields[0], "Bearer") {
			return nil, &lineError{n, "starts with \"Bearer\": write the token alone, without the scheme"}
		}
		var e tokenEntry
		if hexDigest, ok := strings.CutPrefix(fields[0], "sha256:"); ok {
			d, err := hex.DecodeString(hexDigest)
			if err != nil || len(d) != sha256.Size {
				return nil, &lineError{n, "sha256: is not followed by 64 hex digits"}
			}
			copy(e.digest[:], d)
		} else {
			if !ValidBearer(fields[0]) {
				return nil, &lineError{n, "the token is not an RFC 6750 bearer token (letters, digits, -._~+/ and trailing =)"}
			}
			e.digest = sha256.Sum256([]byte(fields[0]))
		}
		if len(fields) == 2 {
			e.subject = fields[1]
		}
		if m, dup := first[e.digest]; dup {
			return nil, &lineError{n, fmt.Sprintf("the same token as line %d", m)}
		}
		first[e.digest] = n
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, errors.New("no token in it (an agent with no accepted token would refuse every call)")
	}
	return t, nil
}

// Len is the number of accepted tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Verify accepts a token listed in the file, for every method, and returns
// its subject as the caller. Every entry is compared, in constant time, so
// the time taken says nothing about which entry matched or how closely.
func (t *Tokens) Verify(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
	d := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:])
		unset := subtle.ConstantTimeEq(int32(match), -1)
		match = subtle.ConstantTimeSelect(eq&unset, i, match)
	}
	if match < 0 {
		return agent.Caller{}, a2a.NewError(a2a.TokenUnauthenticated, "the bearer token is not one this agent accepts")
	}
	return agent.Caller{Subject: t.entries[match].subject}, nil
}

// ValidBearer reports whether s is an RFC 6750 §2.1 b64token: one or more
// of ALPHA, DIGIT, "-", ".", "_", "~", "+", "/", then any "=".
func ValidBearer(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
