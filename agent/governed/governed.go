package governed

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
)

// MetadataKey is the key of the envelope in Message.metadata.
const MetadataKey = "https://a2abind.dev/extensions/governed-object/v1"

// MaxObjectBytes bounds the decoded object (a larger one is refused).
const MaxObjectBytes = 16 << 10

// Object is the signed content of a governed object.
type Object struct {
	// ID identifies the object: its replay key.
	ID string `json:"id"`
	// Purpose is what the object is for; the agent serves a set of them.
	Purpose string `json:"purpose"`
	// Expires is the object's own expiry (RFC 3339 on the wire).
	Expires time.Time `json:"exp"`
	// MessageID is the messageId of the message that carries it.
	MessageID string `json:"messageId"`
	// PartsSHA256 is the hex SHA-256 of the message's parts (PartsDigest).
	PartsSHA256 string `json:"partsSha256"`
}

// envelope is the metadata member.
type envelope struct {
	Object string `json:"object"`
	KID    string `json:"kid"`
	Sig    string `json:"sig"`
}

// PartsDigest returns the hex SHA-256 of the message's parts array as the
// generated encoder writes it: "[" part "," part … "]".
func PartsDigest(m *a2a.Message) (string, error) {
	h := sha256.New()
	h.Write([]byte{'['})
	for i := range m.Parts {
		if i > 0 {
			h.Write([]byte{','})
		}
		b, err := m.Parts[i].MarshalJSON()
		if err != nil {
			return "", fmt.Errorf("governed: part %d: %w", i, err)
		}
		h.Write(b)
	}
	h.Write([]byte{']'})
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Sign binds m to a new governed object (id, purpose, expiry) signed with
// key under kid, and puts the envelope in m's metadata. m's messageId and
// parts must be final: changing them afterwards breaks the signature.
func Sign(m *a2a.Message, id, purpose string, expires time.Time, kid string, key ed25519.PrivateKey) error {
	if m.MessageID == "" || id == "" || purpose == "" {
		return errors.New("governed: the messageId, the object id and the purpose are required")
	}
	digest, err := PartsDigest(m)
	if err != nil {
		return err
	}
	obj, err := json.Marshal(Object{ID: id, Purpose: purpose, Expires: expires.UTC(), MessageID: m.MessageID, PartsSHA256: digest})
	if err != nil {
		return err
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[MetadataKey] = map[string]any{
		"object": base64.RawURLEncoding.EncodeToString(obj),
		"kid":    kid,
		"sig":    base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, obj)),
	}
	return nil
}

// Validator checks governed objects at dequeue; it is an agent.Validator.
type Validator struct {
	// Keys are the trusted public keys by key id.
	Keys map[string]ed25519.PublicKey
	// Purposes are the purposes the agent serves; empty allows any.
	Purposes []string
}

// Validate checks m's governed object against now and returns its id as the
// replay key, kept until the object expires.
func (v Validator) Validate(_ context.Context, m agent.QueuedMessage, now time.Time) (string, time.Time, error) {
	obj, err := v.Check(m.Message, now)
	if err != nil {
		return "", time.Time{}, err
	}
	return "obj:" + obj.ID, obj.Expires, nil
}

// Check verifies the governed object of m at now and returns it.
func (v Validator) Check(m *a2a.Message, now time.Time) (Object, error) {
	var env envelope
	raw, ok := m.Metadata[MetadataKey]
	if !ok {
		return Object{}, errors.New("no governed object in the message metadata (" + MetadataKey + ")")
	}
	mm, ok := raw.(map[string]any)
	if !ok {
		return Object{}, errors.New("the governed object is not a JSON object")
	}
	env.Object, _ = mm["object"].(string)
	env.KID, _ = mm["kid"].(string)
	env.Sig, _ = mm["sig"].(string)
	key, ok := v.Keys[env.KID]
	if !ok {
		return Object{}, fmt.Errorf("governed object signed with unknown key %q", env.KID)
	}
	if base64.RawURLEncoding.DecodedLen(len(env.Object)) > MaxObjectBytes {
		return Object{}, fmt.Errorf("governed object larger than %d bytes", MaxObjectBytes)
	}
	objBytes, err := base64.RawURLEncoding.DecodeString(env.Object)
	if err != nil {
		return Object{}, errors.New("governed object: the object is not base64url")
	}
	sig, err := base64.RawURLEncoding.DecodeString(env.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(key, objBytes, sig) {
		return Object{}, errors.New("governed object: bad signature")
	}
	var obj Object
	if err := json.Unmarshal(objBytes, &obj); err != nil {
		return Object{}, errors.New("governed object: the object is not valid JSON: " + err.Error())
	}
	switch {
	case obj.ID == "":
		return Object{}, errors.New("governed object: no id")
	case !now.Before(obj.Expires):
		return Object{}, fmt.Errorf("governed object %s expired at %s", obj.ID, obj.Expires.Format(time.RFC3339))
	case obj.MessageID != m.MessageID:
		return Object{}, fmt.Errorf("governed object %s was signed for message %q, not %q", obj.ID, obj.MessageID, m.MessageID)
	case !v.allows(obj.Purpose):
		return Object{}, fmt.Errorf("governed object %s: purpose %q is not served here", obj.ID, obj.Purpose)
	}
	digest, err := PartsDigest(m)
	if err != nil {
		return Object{}, err
	}
	if digest != obj.PartsSHA256 {
		return Object{}, fmt.Errorf("governed object %s: the message's parts are not the ones signed", obj.ID)
	}
	return obj, nil
}

func (v Validator) allows(purpose string) bool {
	if len(v.Purposes) == 0 {
		return true
	}
	for _, p := range v.Purposes {
		if p == purpose {
			return true
		}
	}
	return false
}
