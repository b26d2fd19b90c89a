package jsonrpc

import (
	"encoding/json"

	"github.com/a2abind/a2abind/generated/a2a"
)

// methodSpec binds a method to its params and result types.
type methodSpec struct {
	params    func() any
	validate  func([]byte) error
	streaming bool
}

var methods = map[a2a.Method]methodSpec{
	a2a.MethodSendMessage:          {func() any { return new(a2a.SendMessageRequest) }, a2a.ValidateSendMessageRequestJSON, false},
	a2a.MethodSendStreamingMessage: {func() any { return new(a2a.SendMessageRequest) }, a2a.ValidateSendMessageRequestJSON, true},
	a2a.MethodGetTask:              {func() any { return new(a2a.GetTaskRequest) }, a2a.ValidateGetTaskRequestJSON, false},
	a2a.MethodListTasks:            {func() any { return new(a2a.ListTasksRequest) }, a2a.ValidateListTasksRequestJSON, false},
	a2a.MethodCancelTask:           {func() any { return new(a2a.CancelTaskRequest) }, a2a.ValidateCancelTaskRequestJSON, false},
	a2a.MethodSubscribeToTask:      {func() any { return new(a2a.SubscribeToTaskRequest) }, a2a.ValidateSubscribeToTaskRequestJSON, true},
	a2a.MethodCreateTaskPushNotificationConfig: {func() any { return new(a2a.TaskPushNotificationConfig) },
		a2a.ValidateTaskPushNotificationConfigJSON, false},
	a2a.MethodGetTaskPushNotificationConfig: {func() any { return new(a2a.GetTaskPushNotificationConfigRequest) },
		a2a.ValidateGetTaskPushNotificationConfigRequestJSON, false},
	a2a.MethodListTaskPushNotificationConfigs: {func() any { return new(a2a.ListTaskPushNotificationConfigsRequest) },
		a2a.ValidateListTaskPushNotificationConfigsRequestJSON, false},
	a2a.MethodDeleteTaskPushNotificationConfig: {func() any { return new(a2a.DeleteTaskPushNotificationConfigRequest) },
		a2a.ValidateDeleteTaskPushNotificationConfigRequestJSON, false},
	a2a.MethodGetExtendedAgentCard: {func() any { return new(a2a.GetExtendedAgentCardRequest) },
		a2a.ValidateGetExtendedAgentCardRequestJSON, false},
}

// Streaming reports whether a method answers with a stream of
// StreamResponse items rather than one result.
func Streaming(m a2a.Method) bool { return methods[m].streaming }

// decodeParams checks raw params against the method's schema and decodes
// them into the method's params type.
func decodeParams(m a2a.Method, raw json.RawMessage) (any, error) {
	spec := methods[m]
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := spec.validate(raw); err != nil {
		return nil, err
	}
	p := spec.params()
	if err := p.(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return p, nil
}
