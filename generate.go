// Package a2abind is the root of the a2abind module: A2A (Agent2Agent)
// protocol v1.0 over MQTT v5 and HTTP. Its generated code comes from schema/
// through cmd/a2agen; run `go generate` at the module root (or `make
// generate`) after changing a schema.
package a2abind

//go:generate go run ./cmd/a2agen -schema schema -out generated
