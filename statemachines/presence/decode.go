package presence

import "github.com/a2abind/a2abind/generated/a2a"

// CardDecoder turns a non-empty discovery payload into an Agent Card, or
// fails. A failed payload is not a presence event.
type CardDecoder func(payload []byte) (*a2a.AgentCard, error)

// DecodeCard is the default CardDecoder: the payload must decode as an A2A
// v1.0 Agent Card and pass its generated Validate (every REQUIRED member
// present, enums known, and so on), so that what the table offers as a
// routing target is usable.
func DecodeCard(payload []byte) (*a2a.AgentCard, error) {
	card := new(a2a.AgentCard)
	if err := card.UnmarshalJSON(payload); err != nil {
		return nil, err
	}
	if err := card.Validate(); err != nil {
		return nil, err
	}
	return card, nil
}

// DecodeCardLenient is a CardDecoder that only requires the payload to decode
// as an Agent Card, without checking the schema's other rules. Use it to keep
// the liveness of peers whose cards are not quite valid.
func DecodeCardLenient(payload []byte) (*a2a.AgentCard, error) {
	card := new(a2a.AgentCard)
	if err := card.UnmarshalJSON(payload); err != nil {
		return nil, err
	}
	return card, nil
}
