package http

import (
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Register mounts the handler on mux: the JSON-RPC endpoint at path (for
// example "/a2a", the path of the card's JSONRPC interface URL) and the
// Agent Card at WellKnownCardPath. Like mux.Handle, it panics when a path
// is already registered or invalid.
func (h *Handler) Register(mux *http.ServeMux, path string) {
	mux.Handle(path, h)
	mux.Handle(WellKnownCardPath, h.CardHandler())
}

// Serve accepts connections on ln and serves the handler on them, mounted
// as Register mounts it, until Close. It always returns a non-nil error:
// http.ErrServerClosed after Close. The http.Server it runs has
// ReadHeaderTimeout 10 s and IdleTimeout 2 min and no read or write
// timeout (event streams last as long as their task; EventWriteTimeout
// bounds each event). For other settings, or TLS, mount the handler with
// Register on a server of your own.
func (h *Handler) Serve(ln net.Listener, path string) error {
	mux := http.NewServeMux()
	h.Register(mux, path)
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = ln.Close()
		return http.ErrServerClosed
	}
	h.servers = append(h.servers, s)
	h.mu.Unlock()
	return s.Serve(ln)
}
