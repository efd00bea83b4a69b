// Package edgetest is test support for the tests of the edge and of the
// packages around it: the one fake origin that every test puts behind its
// nodes. The in-process cluster that uses it is the edge tests' harness
// (edge/harness_test.go); the origin lives here so that tests outside the
// edge package, such as the real-browser tests, use the same one.
package edgetest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Origin is the test origin, the one every edge test puts behind its
// nodes. It answers 200 with "origin: <path>", and obeys a few paths:
// /revoke-cf and /revoke-own answer with the revoke command under
// Cloudflare's header and waitroom's own; /stream answers as streamAnswer;
// /upload reads the whole request body and answers with its length. Options
// give it another site to serve (Serving) or stop it recording (Unrecorded).
// It counts and records every request either way.
type Origin struct {
	*httptest.Server
	site   http.Handler // what it serves, when not its own paths
	silent bool         // neither counts nor records requests
	mu     sync.Mutex
	hits   int
	uris   []string // every request's path and query, as the origin saw it
}

// Option adjusts the test origin.
type Option func(*Origin)

// Serving makes the origin answer with site (an http.FileServer, a site
// that counts sessions, one that stalls, a page for a browser…) instead of
// its own paths, still counting and recording every request.
func Serving(site http.Handler) Option { return func(o *Origin) { o.site = site } }

// Unrecorded makes the origin neither count nor record requests: for
// benchmarks and measurements, which send millions of them and measure the
// proxy, not the origin's bookkeeping.
func Unrecorded() Option { return func(o *Origin) { o.silent = true } }

// NewOrigin starts the test origin on loopback until the test ends.
func NewOrigin(tb testing.TB, opts ...Option) *Origin {
	tb.Helper()
	o := &Origin{}
	for _, opt := range opts {
		opt(o)
	}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	tb.Cleanup(o.Close)
	return o
}

func (o *Origin) serve(w http.ResponseWriter, r *http.Request) {
	if !o.silent {
		o.mu.Lock()
		o.hits++
		o.uris = append(o.uris, r.URL.RequestURI())
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
	return o.hits
}

// URIs returns the path and query of every request the origin got.
func (o *Origin) URIs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.uris)
}
