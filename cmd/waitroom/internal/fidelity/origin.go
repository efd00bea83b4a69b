package fidelity

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// VisitorHeader names the visitor on every request of the crowd; the room
// passes it through, so the origin knows whom it serves without reading the
// room's sealed cookie.
const VisitorHeader = "X-Fidelity-Visitor"

// originHeader marks the origin's answers, so that a visitor can tell them
// from the room's own pages.
const originHeader = "X-Fidelity-Origin"

// origin is the instrumented site behind the ring: it answers every request
// with a small page and records who asked, and when.
type origin struct {
	url string
	srv *http.Server
	// hold, when set before the ring starts, is called with each request
	// before it is answered: a test holds a request in flight with it.
	hold func(*http.Request)

	mu   sync.Mutex
	hits []Hit
}

func startOrigin() (*origin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	o := &origin{url: "http://" + ln.Addr().String()}
	o.srv = &http.Server{Handler: o, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := Hit{Visitor: r.Header.Get(VisitorHeader), At: time.Now()}
	o.mu.Lock()
	o.hits = append(o.hits, h)
	o.mu.Unlock()
	if o.hold != nil {
		o.hold(r)
	}
	w.Header().Set(originHeader, "1")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte("<!doctype html><title>In</title><p>You are on the origin.</p>\n"))
}

// log is a copy of what the origin saw so far.
func (o *origin) log() []Hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.hits)
}

func (o *origin) close() { _ = o.srv.Close() }
