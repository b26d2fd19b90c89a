package jsonrpc

import (
	"encoding/json"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// methodSpec binds a method to its params type.
type methodSpec struct {
	// parse decodes and checks raw params (Parse<Type>JSON).
	parse func([]byte) (any, error)
	// fresh returns a new value of the params type, for decoding the params
	// where they stand in the envelope (decodeFast), and the Request that
	// will hold it, allocated with it.
	fresh     func() (paramsValue, *Request)
	streaming bool
}

// paramsValue is what every generated params type implements: its decoder,
// which reads it from a runtime.Decoder, and its checks.
type paramsValue interface {
	DecodeJSONAt(d *runtime.Decoder, p *runtime.Path)
	ValidateAt(v *runtime.Validator, p *runtime.Path)
}

// parser adapts a generated Parse<Type>JSON (decode and check in one pass).
func parser[T any](parse func([]byte) (*T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		v, err := parse(b)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

// fresh returns a new *T as a paramsValue, and a Request allocated with it.
func fresh[T any, P interface {
	*T
	paramsValue
}]() (paramsValue, *Request) {
	both := new(struct {
		req    Request
		params T
	})
	return P(&both.params), &both.req
}

var methods = map[a2a.Method]methodSpec{
	a2a.MethodSendMessage:                      {parser(a2a.ParseSendMessageRequestJSON), fresh[a2a.SendMessageRequest], false},
	a2a.MethodSendStreamingMessage:             {parser(a2a.ParseSendMessageRequestJSON), fresh[a2a.SendMessageRequest], true},
	a2a.MethodGetTask:                          {parser(a2a.ParseGetTaskRequestJSON), fresh[a2a.GetTaskRequest], false},
	a2a.MethodListTasks:                        {parser(a2a.ParseListTasksRequestJSON), fresh[a2a.ListTasksRequest], false},
	a2a.MethodCancelTask:                       {parser(a2a.ParseCancelTaskRequestJSON), fresh[a2a.CancelTaskRequest], false},
	a2a.MethodSubscribeToTask:                  {parser(a2a.ParseSubscribeToTaskRequestJSON), fresh[a2a.SubscribeToTaskRequest], true},
	a2a.MethodCreateTaskPushNotificationConfig: {parser(a2a.ParseTaskPushNotificationConfigJSON), fresh[a2a.TaskPushNotificationConfig], false},
	a2a.MethodGetTaskPushNotificationConfig:    {parser(a2a.ParseGetTaskPushNotificationConfigRequestJSON), fresh[a2a.GetTaskPushNotificationConfigRequest], false},
	a2a.MethodListTaskPushNotificationConfigs:  {parser(a2a.ParseListTaskPushNotificationConfigsRequestJSON), fresh[a2a.ListTaskPushNotificationConfigsRequest], false},
	a2a.MethodDeleteTaskPushNotificationConfig: {parser(a2a.ParseDeleteTaskPushNotificationConfigRequestJSON), fresh[a2a.DeleteTaskPushNotificationConfigRequest], false},
	a2a.MethodGetExtendedAgentCard:             {parser(a2a.ParseGetExtendedAgentCardRequestJSON), fresh[a2a.GetExtendedAgentCardRequest], false},
}

// Streaming reports whether a method answers with a stream of
// StreamResponse items rather than one result.
func Streaming(m a2a.Method) bool { return methods[m].streaming }

// decodeParams checks raw params against the method's schema and decodes
// them into the method's params type.
func decodeParams(m a2a.Method, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	return methods[m].parse(raw)
}
