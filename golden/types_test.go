package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/a2abind/a2abind/gen/runtime"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/schemaerr"
)

// goType is what the tests need of one generated object type.
type goType struct {
	// validate is the generated ValidateXxxJSON.
	validate func([]byte) error
	// parse decodes data into a kept value and checks it afterwards, as
	// ParseXxxJSON does: the path that does not check as it reads.
	parse func([]byte) error
	// roundTrip decodes data with json.Unmarshal, encodes the value with
	// json.Marshal and decodes the result again; it reports when the two
	// decoded values differ and returns the re-encoded bytes.
	roundTrip func(tb testing.TB, data []byte) []byte
}

// goTypes is the dispatch table: every object type of schema/a2a and
// schema/offline, by its schema (and Go) name. TestDispatchTableComplete
// checks that it lists every object type the schema defines.
var goTypes = map[string]goType{
	"APIKeySecurityScheme":                    typeOf[a2a.APIKeySecurityScheme](a2a.ValidateAPIKeySecuritySchemeJSON),
	"AgentCapabilities":                       typeOf[a2a.AgentCapabilities](a2a.ValidateAgentCapabilitiesJSON),
	"AgentCard":                               typeOf[a2a.AgentCard](a2a.ValidateAgentCardJSON),
	"AgentCardSignature":                      typeOf[a2a.AgentCardSignature](a2a.ValidateAgentCardSignatureJSON),
	"AgentExtension":                          typeOf[a2a.AgentExtension](a2a.ValidateAgentExtensionJSON),
	"AgentInterface":                          typeOf[a2a.AgentInterface](a2a.ValidateAgentInterfaceJSON),
	"AgentProvider":                           typeOf[a2a.AgentProvider](a2a.ValidateAgentProviderJSON),
	"AgentSkill":                              typeOf[a2a.AgentSkill](a2a.ValidateAgentSkillJSON),
	"Artifact":                                typeOf[a2a.Artifact](a2a.ValidateArtifactJSON),
	"AuthenticationInfo":                      typeOf[a2a.AuthenticationInfo](a2a.ValidateAuthenticationInfoJSON),
	"AuthorizationCodeOAuthFlow":              typeOf[a2a.AuthorizationCodeOAuthFlow](a2a.ValidateAuthorizationCodeOAuthFlowJSON),
	"CancelTaskRequest":                       typeOf[a2a.CancelTaskRequest](a2a.ValidateCancelTaskRequestJSON),
	"ClientCredentialsOAuthFlow":              typeOf[a2a.ClientCredentialsOAuthFlow](a2a.ValidateClientCredentialsOAuthFlowJSON),
	"DeleteTaskPushNotificationConfigRequest": typeOf[a2a.DeleteTaskPushNotificationConfigRequest](a2a.ValidateDeleteTaskPushNotificationConfigRequestJSON),
	"DeviceCodeOAuthFlow":                     typeOf[a2a.DeviceCodeOAuthFlow](a2a.ValidateDeviceCodeOAuthFlowJSON),
	"Empty":                                   typeOf[a2a.Empty](a2a.ValidateEmptyJSON),
	"GetExtendedAgentCardRequest":             typeOf[a2a.GetExtendedAgentCardRequest](a2a.ValidateGetExtendedAgentCardRequestJSON),
	"GetTaskPushNotificationConfigRequest":    typeOf[a2a.GetTaskPushNotificationConfigRequest](a2a.ValidateGetTaskPushNotificationConfigRequestJSON),
	"GetTaskRequest":                          typeOf[a2a.GetTaskRequest](a2a.ValidateGetTaskRequestJSON),
	"HTTPAuthSecurityScheme":                  typeOf[a2a.HTTPAuthSecurityScheme](a2a.ValidateHTTPAuthSecuritySchemeJSON),
	"ImplicitOAuthFlow":                       typeOf[a2a.ImplicitOAuthFlow](a2a.ValidateImplicitOAuthFlowJSON),
	"JSONRPCError":                            typeOf[a2a.JSONRPCError](a2a.ValidateJSONRPCErrorJSON),
	"JSONRPCRequest":                          typeOf[a2a.JSONRPCRequest](a2a.ValidateJSONRPCRequestJSON),
	"JSONRPCResponse":                         typeOf[a2a.JSONRPCResponse](a2a.ValidateJSONRPCResponseJSON),
	"ListTaskPushNotificationConfigsRequest":  typeOf[a2a.ListTaskPushNotificationConfigsRequest](a2a.ValidateListTaskPushNotificationConfigsRequestJSON),
	"ListTaskPushNotificationConfigsResponse": typeOf[a2a.ListTaskPushNotificationConfigsResponse](a2a.ValidateListTaskPushNotificationConfigsResponseJSON),
	"ListTasksRequest":                        typeOf[a2a.ListTasksRequest](a2a.ValidateListTasksRequestJSON),
	"ListTasksResponse":                       typeOf[a2a.ListTasksResponse](a2a.ValidateListTasksResponseJSON),
	"Message":                                 typeOf[a2a.Message](a2a.ValidateMessageJSON),
	"MutualTlsSecurityScheme":                 typeOf[a2a.MutualTlsSecurityScheme](a2a.ValidateMutualTlsSecuritySchemeJSON),
	"OAuth2SecurityScheme":                    typeOf[a2a.OAuth2SecurityScheme](a2a.ValidateOAuth2SecuritySchemeJSON),
	"OAuthFlows":                              typeOf[a2a.OAuthFlows](a2a.ValidateOAuthFlowsJSON),
	"OpenIdConnectSecurityScheme":             typeOf[a2a.OpenIdConnectSecurityScheme](a2a.ValidateOpenIdConnectSecuritySchemeJSON),
	"Part":                                    typeOf[a2a.Part](a2a.ValidatePartJSON),
	"PasswordOAuthFlow":                       typeOf[a2a.PasswordOAuthFlow](a2a.ValidatePasswordOAuthFlowJSON),
	"SecurityRequirement":                     typeOf[a2a.SecurityRequirement](a2a.ValidateSecurityRequirementJSON),
	"SecurityScheme":                          typeOf[a2a.SecurityScheme](a2a.ValidateSecuritySchemeJSON),
	"SendMessageConfiguration":                typeOf[a2a.SendMessageConfiguration](a2a.ValidateSendMessageConfigurationJSON),
	"SendMessageRequest":                      typeOf[a2a.SendMessageRequest](a2a.ValidateSendMessageRequestJSON),
	"SendMessageResponse":                     typeOf[a2a.SendMessageResponse](a2a.ValidateSendMessageResponseJSON),
	"StreamResponse":                          typeOf[a2a.StreamResponse](a2a.ValidateStreamResponseJSON),
	"StringList":                              typeOf[a2a.StringList](a2a.ValidateStringListJSON),
	"SubscribeToTaskRequest":                  typeOf[a2a.SubscribeToTaskRequest](a2a.ValidateSubscribeToTaskRequestJSON),
	"Task":                                    typeOf[a2a.Task](a2a.ValidateTaskJSON),
	"TaskArtifactUpdateEvent":                 typeOf[a2a.TaskArtifactUpdateEvent](a2a.ValidateTaskArtifactUpdateEventJSON),
	"TaskPushNotificationConfig":              typeOf[a2a.TaskPushNotificationConfig](a2a.ValidateTaskPushNotificationConfigJSON),
	"TaskStatus":                              typeOf[a2a.TaskStatus](a2a.ValidateTaskStatusJSON),
	"TaskStatusUpdateEvent":                   typeOf[a2a.TaskStatusUpdateEvent](a2a.ValidateTaskStatusUpdateEventJSON),
	"AsleepResponse":                          typeOf[offline.AsleepResponse](offline.ValidateAsleepResponseJSON),
	"OfflineErrorData":                        typeOf[offline.OfflineErrorData](offline.ValidateOfflineErrorDataJSON),
	"QueueFullResponse":                       typeOf[offline.QueueFullResponse](offline.ValidateQueueFullResponseJSON),
	"PublishedBounds":                         typeOf[offline.PublishedBounds](offline.ValidatePublishedBoundsJSON),
	"ReachabilityParams":                      typeOf[offline.ReachabilityParams](offline.ValidateReachabilityParamsJSON),
	"Schedule":                                typeOf[offline.Schedule](offline.ValidateScheduleJSON),
}

func typeOf[T any](validate func([]byte) error) goType {
	return goType{validate: validate, parse: parseOf[T], roundTrip: roundTripOf[T]}
}

// generatedValue is what every generated object type has.
type generatedValue interface {
	DecodeJSONAt(d *runtime.Decoder, p *runtime.Path)
	ValidateAt(v *runtime.Validator, p *runtime.Path)
}

// parseOf is ParseXxxJSON for type T, built from its generated methods.
func parseOf[T any](data []byte) error {
	x := new(T)
	g := any(x).(generatedValue)
	_, err := runtime.Parse(data, x, func(d *runtime.Decoder) {
		*x = *new(T)
		g.DecodeJSONAt(d, nil)
	}, g.ValidateAt)
	return err
}

func roundTripOf[T any](tb testing.TB, data []byte) []byte {
	tb.Helper()
	var first, second T
	if err := json.Unmarshal(data, &first); err != nil {
		tb.Fatalf("json.Unmarshal of a valid payload: %v", err)
	}
	out, err := json.Marshal(first)
	if err != nil {
		tb.Fatalf("json.Marshal: %v", err)
	}
	if err := json.Unmarshal(out, &second); err != nil {
		tb.Fatalf("json.Unmarshal of the re-encoded payload: %v\n%s", err, out)
	}
	// The generated Clone copies the value exactly.
	if clone := reflect.ValueOf(&first).MethodByName("Clone"); clone.IsValid() {
		c := clone.Call(nil)[0].Elem().Interface()
		if !reflect.DeepEqual(c, any(first)) {
			tb.Errorf("Clone differs from the value:\n%s", cmp.Diff(any(first), c, rawJSONEqual))
		}
	} else {
		tb.Errorf("%T has no Clone method", first)
	}
	// reflect.DeepEqual first: cmp is far slower on deeply nested values.
	if !reflect.DeepEqual(first, second) && !cmp.Equal(first, second, rawJSONEqual) {
		tb.Errorf("decode(encode(decode(p))) differs from decode(p) (-first +second):\n%s\nre-encoded: %s", cmp.Diff(first, second, rawJSONEqual), out)
	}
	return out
}

// rawJSONEqual compares raw JSON fields (JSON-RPC id, params and result) by
// the JSON they hold. The generated decoder keeps raw values byte for byte
// and MarshalJSON writes them back unchanged, but json.Marshal compacts and
// HTML-escapes whatever a MarshalJSON method returns, so after a round trip
// through encoding/json the bytes of pretty-printed params differ while the
// JSON is the same. Every other field is compared exactly (as
// reflect.DeepEqual would).
var rawJSONEqual = cmp.Options{
	cmp.Comparer(sameJSON[json.RawMessage]),
	cmp.Comparer(sameJSON[a2a.JSONRPCResponseResult]),
}

func sameJSON[T ~[]byte](a, b T) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, errA := decodeAny(a)
	vb, errB := decodeAny(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// checkGenerated runs the generated validator of a type and turns its answer
// into a verdict; an error of any type other than *SyntaxError or a
// *ValidationError with at least one violation is reported as such.
func checkGenerated(typeName string, data []byte) (verdict, error) {
	gt, ok := goTypes[typeName]
	if !ok {
		return verdict{}, errors.New("no generated type " + typeName)
	}
	return classify(gt.validate(data))
}

func classify(err error) (verdict, error) {
	// One errors.As per kind covers every generated package: their error
	// types are aliases of schemaerr's.
	var (
		syn *schemaerr.SyntaxError
		val *schemaerr.ValidationError
	)
	switch {
	case err == nil:
		return verdict{valid: true}, nil
	case errors.As(err, &syn):
		return verdict{syntax: true, detail: err.Error()}, nil
	case errors.As(err, &val):
		if len(val.Violations) == 0 {
			return verdict{}, errors.New("ValidationError without violations")
		}
		return verdict{detail: joinViolations(val.Violations)}, nil
	}
	return verdict{}, errors.New("unexpected error type: " + reflect.TypeOf(err).String() + ": " + err.Error())
}

// joinViolations lists violations on one line.
func joinViolations[V fmt.Stringer](vs []V) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// The errors of every generated package are one set of types (aliases of
// package schemaerr): an errors.As written for one package's errors
// recognises another's.
func TestEveryGeneratedPackageReturnsTheSameErrorTypes(t *testing.T) {
	_, fromA2A := a2a.ParseTaskJSON([]byte(`{"id":"t1"}`))
	_, fromOffline := offline.ParseAsleepResponseJSON([]byte(`{}`))
	_, syntax := offline.ParseAsleepResponseJSON([]byte(`{`))
	for name, err := range map[string]error{"a2a": fromA2A, "offline": fromOffline} {
		var shared *schemaerr.ValidationError
		var viaA2A *a2a.ValidationError
		var viaOffline *offline.ValidationError
		if !errors.As(err, &shared) || !errors.As(err, &viaA2A) || !errors.As(err, &viaOffline) || len(shared.Violations) == 0 {
			t.Errorf("%s: %T (%v) is not recognised by every package's ValidationError", name, err, err)
		}
	}
	var syn *a2a.SyntaxError
	if !errors.As(syntax, &syn) || syn.Offset != 1 {
		t.Errorf("offline syntax error %T (%v) not recognised as a2a.SyntaxError", syntax, syntax)
	}
}
