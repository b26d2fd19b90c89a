package jsonrpc

import (
	"encoding/json"

	"github.com/a2abind/a2abind/generated/a2a"
)

// methodSpec binds a method to its params and result types.
type methodSpec struct {
	parse     func([]byte) (any, error)
	streaming bool
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

var methods = map[a2a.Method]methodSpec{
	a2a.MethodSendMessage:                      {parser(a2a.ParseSendMessageRequestJSON), false},
	a2a.MethodSendStreamingMessage:             {parser(a2a.ParseSendMessageRequestJSON), true},
	a2a.MethodGetTask:                          {parser(a2a.ParseGetTaskRequestJSON), false},
	a2a.MethodListTasks:                        {parser(a2a.ParseListTasksRequestJSON), false},
	a2a.MethodCancelTask:                       {parser(a2a.ParseCancelTaskRequestJSON), false},
	a2a.MethodSubscribeToTask:                  {parser(a2a.ParseSubscribeToTaskRequestJSON), true},
	a2a.MethodCreateTaskPushNotificationConfig: {parser(a2a.ParseTaskPushNotificationConfigJSON), false},
	a2a.MethodGetTaskPushNotificationConfig:    {parser(a2a.ParseGetTaskPushNotificationConfigRequestJSON), false},
	a2a.MethodListTaskPushNotificationConfigs:  {parser(a2a.ParseListTaskPushNotificationConfigsRequestJSON), false},
	a2a.MethodDeleteTaskPushNotificationConfig: {parser(a2a.ParseDeleteTaskPushNotificationConfigRequestJSON), false},
	a2a.MethodGetExtendedAgentCard:             {parser(a2a.ParseGetExtendedAgentCardRequestJSON), false},
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
