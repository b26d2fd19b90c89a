package http

import (
	"log/slog"
	"net"
	"net/http"
	pathpkg "path"
	"strings"
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
	var handler http.Handler = mux
	if plainPath(path) {
		handler = endpointFirst{path: path, h: h, mux: mux}
	}
	s := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
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

// endpointFirst serves a request for the JSON-RPC endpoint's own path
// straight to the handler, and every other one through the mux: what the
// mux would do (a plain, clean path registered alone matches exactly that
// path, unescaped alike), without its routing for each call.
type endpointFirst struct {
	path string
	h    http.Handler
	mux  *http.ServeMux
}

func (e endpointFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == e.path && r.URL.RawPath == "" && r.Method != http.MethodConnect {
		r.Pattern = e.path // as the mux sets it
		e.h.ServeHTTP(w, r)
		return
	}
	e.mux.ServeHTTP(w, r)
}

// plainPath reports whether a path pattern is a clean path and nothing
// else (no method, host or wildcard, no trailing slash): one the mux
// matches only by being equal to the request's path.
func plainPath(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' || strings.ContainsAny(p, "{} \t%") {
		return false
	}
	return pathpkg.Clean(p) == p
}
