package edgetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// Visitor is one browser that calls a node's handler in this process
// (through an httptest recorder, no listener) and keeps the cookies the
// answers set, by name: a test decides what the visitor does and when,
// moving a fake clock in between. A visitor that speaks HTTP to a real
// listener and follows the refresh by itself is crowd.Visitor.
type Visitor struct {
	Cookies map[string]*http.Cookie
}

// NewVisitor returns a visitor without cookies: a new visitor to every
// room.
func NewVisitor() *Visitor { return &Visitor{Cookies: map[string]*http.Cookie{}} }

// Req builds a request to url (host taken from it) carrying the visitor's
// cookies and the headers hdr names, as name, value pairs.
func (v *Visitor) Req(method, url string, hdr ...string) *http.Request {
	r := httptest.NewRequest(method, url, nil)
	for _, c := range v.Cookies {
		r.AddCookie(c)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

// Do sends a request through h and keeps the cookies the answer sets, as a
// browser would (Max-Age 0 deletes).
func (v *Visitor) Do(h http.Handler, r *http.Request) *http.Response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r // as http.Client does: what a Refresh url resolves against
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(v.Cookies, c.Name)
			continue
		}
		v.Cookies[c.Name] = c
	}
	return resp
}

// Get is Do with a GET to url.
func (v *Visitor) Get(h http.Handler, url string, hdr ...string) *http.Response {
	return v.Do(h, v.Req(http.MethodGet, url, hdr...))
}

// Prove brings a new visitor that was just queued back for its proof, as
// its browser (or app) would: its first queue page refreshes after
// policy.ProofRefresh (a page to the cookie check's address), and only
// that request, with the cookie, counts it as waiting. The clock moves on
// by the proof interval first; answers other than a new visitor's first
// queue page are returned as they are.
func (v *Visitor) Prove(tb testing.TB, h http.Handler, clock *testkit.Clock, first *http.Response, hdr ...string) *http.Response {
	tb.Helper()
	if n, err := RefreshSeconds(first); err != nil || n != policy.ProofRefresh || len(first.Cookies()) == 0 {
		return first
	}
	clock.Advance(policy.ProofRefresh * time.Second)
	return v.Get(h, RefreshTarget(tb, first), hdr...)
}

// Queue is a new visitor's first request and its proof: what makes it
// count as waiting.
func (v *Visitor) Queue(tb testing.TB, h http.Handler, clock *testkit.Clock, url string, hdr ...string) *http.Response {
	tb.Helper()
	return v.Prove(tb, h, clock, v.Get(h, url, hdr...), hdr...)
}

// RefreshSeconds is the interval of resp's Refresh header, whatever address
// it names.
func RefreshSeconds(resp *http.Response) (int, error) {
	h := resp.Header.Get("Refresh")
	r, ok := crowd.ParseRefresh(h)
	if !ok {
		return 0, fmt.Errorf("the Refresh header %q does not parse", h)
	}
	return int(r.After / time.Second), nil
}

// RefreshTarget is the absolute URL a browser loads when resp's Refresh
// fires: the url it names, resolved against the request's, or the
// request's own.
func RefreshTarget(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	h := resp.Header.Get("Refresh")
	r, ok := crowd.ParseRefresh(h)
	if !ok {
		tb.Fatalf("Refresh %q does not parse", h)
	}
	u := r.URL
	if u == "" {
		return resp.Request.URL.String()
	}
	ref, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("Refresh url %q: %v", u, err)
	}
	return resp.Request.URL.ResolveReference(ref).String()
}
