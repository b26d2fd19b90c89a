package jsonrpc

import "encoding/json"

// resultHead is the start of a success response, up to its id.
const resultHead = `{"jsonrpc":"2.0","id":`

// resultMember is what comes between a success response's id and its
// result.
const resultMember = `,"result":`

// ResultTail ends a success response after its result: EncodeResult(id, v)
// is AppendResultHead(nil, id), v's encoding, then ResultTail.
const ResultTail = "}"

// ResultHeadLen is the length of AppendResultHead(nil, id).
func ResultHeadLen(id json.RawMessage) int {
	return len(resultHead) + len(nullID(id)) + len(resultMember)
}

// AppendResultHead appends the head of a success response with id, up to
// its result (see ResultTail): a caller that has its result encoded
// already can lay the envelope around it without copying it.
func AppendResultHead(b []byte, id json.RawMessage) []byte {
	b = append(b, resultHead...)
	b = append(b, nullID(id)...)
	return append(b, resultMember...)
}

// EncodeResultSized is EncodeResult with room for size bytes of result in
// the buffer it allocates (size is the result's encoded length, or an
// estimate of it): a large result is encoded without the buffer growing.
func EncodeResultSized(id json.RawMessage, result any, size int) ([]byte, error) {
	b := make([]byte, 0, ResultHeadLen(id)+max(size, 0)+len(ResultTail))
	b = AppendResultHead(b, id)
	b, err := appendValue(b, result)
	if err != nil {
		return nil, err
	}
	return append(b, ResultTail...), nil
}
