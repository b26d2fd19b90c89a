package runtime

import (
	"strconv"
	"strings"
)

// ErrorInfoType is the type URL of a google.rpc.ErrorInfo in ProtoJSON's
// form of google.protobuf.Any.
const ErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// ErrorInfoDomain is the domain of the ErrorInfo of every A2A error.
const ErrorInfoDomain = "a2a-protocol.org"

// CheckErrorInfo checks the data (at p) of a JSON-RPC error whose code is
// code. When the code claims an A2A error (-32001 to -32099, A2A v1.0 §9.5)
// and data has the array form of the JSON-RPC binding, data must hold a
// google.rpc.ErrorInfo: an element with "@type" ErrorInfoType, whose
// "reason" is one of reasons (the upper-case tokens of the code, separated
// by spaces; any non-empty reason when the code has no token), whose
// "domain" is ErrorInfoDomain and whose "metadata", when present, maps
// strings to strings. Other data forms (the objects of the MQTT binding) and
// other codes are not checked here.
func CheckErrorInfo(v *Validator, p *Path, code int64, data any, reasons string) {
	if code > -32001 || code < -32099 {
		return
	}
	list, ok := data.([]any)
	if !ok {
		return
	}
	found := false
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok || m["@type"] != ErrorInfoType {
			continue // another detail of a google.rpc.Status
		}
		found = true
		ip := p.Index(i)
		checkErrorInfo(v, &ip, m, code, reasons)
	}
	if !found {
		v.Add(p, "errorInfo", "an A2A error ("+strconv.FormatInt(code, 10)+") must carry a google.rpc.ErrorInfo (\"@type\": \""+ErrorInfoType+"\") in its data array")
	}
}

func checkErrorInfo(v *Validator, p *Path, m map[string]any, code int64, reasons string) {
	rp := p.Key("reason")
	switch reason, ok := m["reason"].(string); {
	case m["reason"] == nil:
		v.Add(&rp, "required", `missing property "reason"`)
	case !ok:
		v.Add(&rp, "type", "want string")
	case reasons == "" && reason == "":
		v.Add(&rp, "minLength", "must not be empty")
	case reasons != "" && !hasWord(reasons, reason):
		v.Add(&rp, "enum", "code "+strconv.FormatInt(code, 10)+" wants reason "+strings.ReplaceAll(reasons, " ", " or ")+", got "+strconv.Quote(reason))
	}
	dp := p.Key("domain")
	switch domain, ok := m["domain"].(string); {
	case m["domain"] == nil:
		v.Add(&dp, "required", `missing property "domain"`)
	case !ok || domain != ErrorInfoDomain:
		v.Add(&dp, "const", `must be "`+ErrorInfoDomain+`"`)
	}
	if md, present := m["metadata"]; present && md != nil {
		mp := p.Key("metadata")
		obj, ok := md.(map[string]any)
		if !ok {
			v.Add(&mp, "type", "want object")
			return
		}
		for k, val := range obj {
			if _, ok := val.(string); !ok {
				kp := mp.Key(k)
				v.Add(&kp, "type", "metadata values are strings")
			}
		}
	}
}

// hasWord reports whether w is one of the space-separated words of list.
func hasWord(list, w string) bool {
	for list != "" {
		var word string
		word, list, _ = strings.Cut(list, " ")
		if word == w {
			return true
		}
	}
	return false
}
