package mqtt

import (
	"encoding/json"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Output names of the handover table the client acts on.
const (
	fsmPersistRoute  = fsm.HandoverOutputPersistRoute
	fsmFallBack      = fsm.HandoverOutputFallBackToCardAgent
	fsmProtocolError = fsm.HandoverOutputProtocolError
)

// streamFinal reports whether a raw stream item ends its correlation; the
// rule is tasklife.StreamItemFinal.
func streamFinal(raw json.RawMessage) bool {
	var item a2a.StreamResponse
	if err := item.UnmarshalJSON(raw); err != nil {
		return false
	}
	return tasklife.StreamItemFinal(&item)
}
