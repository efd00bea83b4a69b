package edgetest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Origin is the one fake origin, the site every harness puts behind its
// nodes: the edge tests, the demo, the bench and the real-process fidelity
// run. It answers 200 with "origin: <path>", and obeys a few paths:
// /revoke-cf and /revoke-own answer with the revoke command under
// Cloudflare's header and waitroom's own; /stream answers as streamAnswer;
// /upload reads the whole request body and answers with its length. Options
// give it another site to serve (Serving), name the header that tells it who
// asks (VisitorHeader) or stop it recording (Unrecorded). It logs every
// request, when and from whom, unless told not to: what a run is judged by
// is what the origin saw.
type Origin struct {
	*httptest.Server
	site    http.Handler // what it serves, when not its own paths
	silent  bool         // records nothing
	visitor string       // the header naming the visitor, "" when none
	mu      sync.Mutex
	log     []Hit
}

// Hit is one request the origin got: when, for what, and from whom.
type Hit struct {
	At  time.Time
	URI string // the path and query, as the origin saw them
	// Visitor is the value of the header VisitorHeader names; "" when the
	// origin was given none, or the request did not carry it.
	Visitor string
}

// Option adjusts the origin.
type Option func(*Origin)

// Serving makes the origin answer with site (an http.FileServer, a site
// that counts sessions, one that stalls, a page for a browser…) instead of
// its own paths, still recording every request.
func Serving(site http.Handler) Option { return func(o *Origin) { o.site = site } }

// Unrecorded makes the origin record nothing: for benchmarks, measurements
// and the demo, which send millions of requests or run for hours and
// measure the proxy, not the origin's bookkeeping.
func Unrecorded() Option { return func(o *Origin) { o.silent = true } }

// VisitorHeader makes the origin note, with each request it records, the
// value of the header name: a crowd that names its visitors in a header the
// room passes through lets the origin tell whom it serves without reading
// the room's sealed cookie.
func VisitorHeader(name string) Option { return func(o *Origin) { o.visitor = name } }

// StartOrigin starts the origin on loopback; Close stops it. It is for
// tools; a test calls NewOrigin.
func StartOrigin(opts ...Option) (*Origin, error) {
	o := &Origin{}
	for _, opt := range opts {
		opt(o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	o.Server = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: http.HandlerFunc(o.serve), ReadHeaderTimeout: 5 * time.Second},
	}
	o.Start()
	return o, nil
}

// NewOrigin starts the origin on loopback until the test ends.
func NewOrigin(tb testing.TB, opts ...Option) *Origin {
	tb.Helper()
	o, err := StartOrigin(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(o.Close)
	return o
}

func (o *Origin) serve(w http.ResponseWriter, r *http.Request) {
	if !o.silent {
		h := Hit{At: time.Now(), URI: r.URL.RequestURI()}
		if o.visitor != "" {
			h.Visitor = r.Header.Get(o.visitor)
		}
		o.mu.Lock()
		o.log = append(o.log, h)
		o.mu.Unlock()
	}
	if o.site != nil {
		o.site.ServeHTTP(w, r)
		return
	}
	switch r.URL.Path {
	case "/stream":
		streamAnswer(w, r)
		return
	case "/upload":
		// Reads the whole body before answering, as an upload form.
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "origin: /upload %d bytes", n)
		return
	case "/revoke-cf":
		w.Header().Set("Cf-Waiting-Room-Command", "revoke")
	case "/revoke-own":
		w.Header().Set("Waitroom-Command", "Revoke")
	}
	w.Header().Set("X-Origin", "yes")
	_, _ = io.WriteString(w, "origin: "+r.URL.Path)
}

// streamAnswer is the origin's /stream: a large or slow answer of chunks
// chunks of size bytes, each after a pause (a slow origin is what it
// plays, so it waits for real), with a Content-Length so that a client can
// tell a cut answer from a whole one.
func streamAnswer(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	chunks, _ := strconv.Atoi(q.Get("chunks"))
	size, _ := strconv.Atoi(q.Get("size"))
	pause, _ := time.ParseDuration(q.Get("pause"))
	w.Header().Set("Content-Length", strconv.Itoa(chunks*size))
	w.Header().Set("X-Origin", "yes")
	buf := []byte(strings.Repeat("x", size))
	rc := http.NewResponseController(w)
	for i := 0; i < chunks; i++ {
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-r.Context().Done():
				return
			}
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// Hits returns how many requests the origin got.
func (o *Origin) Hits() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.log)
}

// URIs returns the path and query of every request the origin got.
func (o *Origin) URIs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	uris := make([]string, len(o.log))
	for i, h := range o.log {
		uris[i] = h.URI
	}
	return uris
}

// Log returns every request the origin got, in the order it got them.
func (o *Origin) Log() []Hit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.log)
}
