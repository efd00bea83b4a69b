package queuepage

import (
	"bytes"
	"html/template"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbroglie/mustache"
)

// RefreshURLSlot stands for the refresh URL in a rendered page: the URL is
// different for nearly every new visitor (its path, the second), so pages
// are rendered and cached with this in its place and it is replaced on the
// way out; rendering afresh for every new visitor would cost the queued
// path most of its speed again. It holds no character HTML escaping
// changes.
const RefreshURLSlot = "__waitroom_refresh_url__"

// Template is the template that shows v: the room's own (custom), or the
// built-in page in v's language where the room's cannot say what v says
// (the cookies-required answer, a closed room) or the room has none.
func Template(custom *mustache.Template, v *Vars) *mustache.Template {
	tmpl := custom
	if v.CookiesRequired && !HandlesCookiesRequired(tmpl) {
		tmpl = Default
	}
	if v.IsClosed && !UsesVar(tmpl, ClosedVar) {
		tmpl = Default // a page that cannot say the room is closed
	}
	if tmpl == Default {
		tmpl = DefaultIn(v.Lang)
	}
	return tmpl
}

// LastUpdated is the pages' lastUpdated at now: the second, formatted once
// a second rather than for every answer.
func LastUpdated(now time.Time) string {
	sec := now.Unix()
	if st := lastStamp.Load(); st != nil && st.sec == sec {
		return st.text
	}
	text := now.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z")
	lastStamp.Store(&stamp{sec: sec, text: text})
	return text
}

// stamp is a second and its text as lastUpdated writes it.
type stamp struct {
	sec  int64
	text string
}

var lastStamp atomic.Pointer[stamp]

var refreshURLSlotBytes = []byte(RefreshURLSlot)

// filledPages are the buffers WriteFilled fills pages in.
var filledPages = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// WriteFilled writes a cached page with every RefreshURLSlot replaced by u.
// The cached bytes are shared, so the page is filled in a pooled buffer and
// written at once: a fresh copy of the page for every new visitor would
// cost about as much as the rest of its answer.
func WriteFilled(w http.ResponseWriter, status int, page []byte, u string) {
	bp := filledPages.Get().(*[]byte)
	b := (*bp)[:0]
	for {
		i := bytes.Index(page, refreshURLSlotBytes)
		if i < 0 {
			break
		}
		b = append(b, page[:i]...)
		b = append(b, u...)
		page = page[i+len(RefreshURLSlot):]
	}
	b = append(b, page...)
	w.WriteHeader(status)
	_, _ = w.Write(b) // a Writer does not keep what it is given
	if cap(b) <= 64<<10 {
		// A custom page can be large; the pool keeps buffers of
		// ordinary pages only.
		*bp = b
		filledPages.Put(bp)
	}
}

// Cache keeps a room's rendered queue pages by template and variables.
// The variables take a handful of values at a time (the estimate moves with
// the allocation, the refresh interval is one of ten jittered values,
// lastUpdated changes once a second), so nearly every queued visitor gets
// bytes rendered before; rendering Mustache on every response cost 60% of
// the queued path.
type Cache struct {
	mu sync.RWMutex
	m  map[cacheKey][]byte
	// last is the page rendered last, looked at before the map: in a
	// flood every new visitor of a second gets the same page, and
	// comparing its variables costs less than hashing them.
	last atomic.Pointer[cacheEntry]
}

type cacheKey struct {
	t *mustache.Template
	v Vars
}

type cacheEntry struct {
	k cacheKey
	b []byte
}

// Get is the page t renders for v, rendered by render when the cache does
// not hold it yet.
func (c *Cache) Get(t *mustache.Template, v Vars, render func() []byte) []byte {
	k := cacheKey{t, v}
	if e := c.last.Load(); e != nil && e.k == k {
		return e.b
	}
	c.mu.RLock()
	b, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return b
	}
	b = render()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= 256 {
		c.m = make(map[cacheKey][]byte, 64)
	}
	c.m[k] = b
	c.mu.Unlock()
	c.last.Store(&cacheEntry{k, b})
	return b
}

var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f5f6f8;color:#1d2330;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center}
main{background:#fff;border-radius:14px;box-shadow:0 6px 30px rgba(20,30,60,.08);padding:40px 44px;max-width:520px;margin:24px}
h1{font-size:1.5rem;margin:0 0 12px}p{line-height:1.55;color:#4a5366;margin:0}</style></head>
<body><main><h1>{{.Title}}</h1><p>{{.Text}}</p></main></body></html>
`))

// WriteStatus answers a request the node answers itself, outside a queue
// (a refusal, an error, no room), with status and a plain page of title and
// text.
func WriteStatus(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = statusPage.Execute(w, struct{ Title, Text string }{title, text})
}
