// Package http will hold the A2A v1.0 JSON-RPC over HTTP binding of
// a2abind, with the offline store-and-forward profile and the
// push-notification binding, on the same agent runtime (package agent) as
// transport/mqtt: Server-made task ids (tasklife.ResponderIDs), the A2A
// ErrorInfo error shape (jsonrpc.BindingHTTP), a go-retryablehttp
// client whose retry policy comes from the generated error-token table.
//
// It is not implemented yet: the package has no API. The protocol rules it
// will need already live below it (statemachines/reach, statemachines/pushbind,
// generated/offline).
package http
