// Package jsonrpc is the JSON-RPC 2.0 envelope of A2A v1.0, shared by every
// transport: it decodes and checks requests (method bound to its params
// type by the generated validators), encodes results and errors, and maps
// errors to and from the wire per binding.
//
// Errors are identified by token, never by code alone (docs/protocol.md
// §6.1; §11, "JSON-RPC codes -32003 to -32005"). On the wire:
//
//   - MQTT binding: tokens of the MQTT profile (request_expired,
//     responder_unavailable, transport_protocol_error) carry the profile's
//     object {"a2a_error": token}; the offline profile's tokens
//     (agent_asleep, asleep_queue_full) carry the offline object
//     {"error": token, "queued", "retryAfterSec"?, "kind"?, "taskId"?,
//     "contextId"?} (docs/protocol.md §7); every other error carries the
//     A2A v1.0 form, an array holding a google.rpc.ErrorInfo whose reason is
//     the token in upper case, so the same code (-32003, -32004, -32005) is
//     told apart by its data;
//   - HTTP binding: the A2A v1.0 ErrorInfo array for every error, so that
//     official clients decode it; the offline tokens' details travel as its
//     metadata, in strings ({"queued": "true", "retryAfterSec": "1800"}).
//
// OfflineDetails reads an offline token's details from either form.
package jsonrpc
