package edge

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/visitors"
	"github.com/waitroom/waitroom/policy"
)

// pageVars are the queue page's template variables, named as in the
// reference so that a Cloudflare template or app works unchanged. The same
// struct is the JSON response's cfWaitingRoom object.
type pageVars struct {
	InWaitingRoom          bool   `json:"inWaitingRoom"`
	WaitTimeKnown          bool   `json:"waitTimeKnown"`
	WaitTime               int    `json:"waitTime"`
	WaitTime25Percentile   int    `json:"waitTime25Percentile"`
	WaitTime50Percentile   int    `json:"waitTime50Percentile"`
	WaitTime75Percentile   int    `json:"waitTime75Percentile"`
	WaitTimeFormatted      string `json:"waitTimeFormatted"`
	QueueIsFull            bool   `json:"queueIsFull"`
	QueueAll               bool   `json:"queueAll"`
	LastUpdated            string `json:"lastUpdated"`
	RefreshIntervalSeconds int    `json:"refreshIntervalSeconds"`
	QueueingMethod         string `json:"queueingMethod"`
	IsFIFOQueue            bool   `json:"isFIFOQueue"`
	IsRandomQueue          bool   `json:"isRandomQueue"`
	// Position is the number of visitors ahead in line (FIFO only), and
	// PositionKnown whether there is one to show: never under random
	// queueing, nor before an event's start. waitroom's own, next to the
	// reference's fields.
	Position      int64 `json:"position"`
	PositionKnown bool  `json:"positionKnown"`

	// The event variables (reference event model).
	IsEventActive                bool   `json:"isEventActive"`
	IsEventPrequeueing           bool   `json:"isEventPrequeueing"`
	TimeUntilEventStart          int    `json:"timeUntilEventStart"` // minutes
	TimeUntilEventStartFormatted string `json:"timeUntilEventStartFormatted"`
	TimeUntilEventEnd            int    `json:"timeUntilEventEnd"` // minutes
	TimeUntilEventEndFormatted   string `json:"timeUntilEventEndFormatted"`
	ShuffleAtEventStart          bool   `json:"shuffleAtEventStart"`
	Turnstile                    string `json:"-"`

	// waitroom's own: the cookie check (see cookieCheckParam).
	// CookiesRequired is true on the answer to a client that did not keep
	// its cookie: no place in line, no automatic refresh.
	CookiesRequired bool `json:"cookiesRequired"`
	// The rest of the reference's variables, and waitroom's own page
	// variables (pagevars.go).
	WaitTimeHours       int    `json:"waitTimeHours"`
	WaitTimeHourMinutes int    `json:"waitTimeHourMinutes"`
	IsPassthroughQueue  bool   `json:"isPassthroughQueue"`
	IsRejectQueue       bool   `json:"isRejectQueue"`
	Message             string `json:"message"`
	IsClosed            bool   `json:"isClosed"`
	// Lang is the page's language (a tag of package i18n): the formatted
	// waits are written in it and the built-in page is shown in it.
	Lang string `json:"-"`

	// RefreshURL is the address the page should load next, when it is not
	// the page's own: the marked address on a new visitor's first page,
	// the clean one after a marked request, and on the cookies-required
	// answer the clean address to try again at. In the page it is
	// refreshURLSlot (see writeQueue).
	RefreshURL string `json:"-"`

	// waitroom's own: priority codes (see priority.go). PriorityCodes is
	// true in a room with priority groups, whose page may offer a field
	// named PriorityCodeParam; PriorityCodeMessage says what became of a
	// code the request carried that did not work.
	PriorityCodes       bool   `json:"priorityCodes"`
	PriorityCodeParam   string `json:"-"`
	PriorityCodeMessage string `json:"priorityCodeMessage,omitempty"`
}

func (v *pageVars) context() map[string]any {
	return map[string]any{
		"inWaitingRoom":                v.InWaitingRoom,
		"waitTimeKnown":                v.WaitTimeKnown,
		"waitTime":                     v.WaitTime,
		"waitTime25Percentile":         v.WaitTime25Percentile,
		"waitTime50Percentile":         v.WaitTime50Percentile,
		"waitTime75Percentile":         v.WaitTime75Percentile,
		"waitTimeFormatted":            v.WaitTimeFormatted,
		"queueIsFull":                  v.QueueIsFull,
		"queueAll":                     v.QueueAll,
		"lastUpdated":                  v.LastUpdated,
		"refreshIntervalSeconds":       v.RefreshIntervalSeconds,
		"queueingMethod":               v.QueueingMethod,
		"isFIFOQueue":                  v.IsFIFOQueue,
		"isRandomQueue":                v.IsRandomQueue,
		"position":                     v.Position,
		"positionKnown":                v.PositionKnown,
		"isEventActive":                v.IsEventActive,
		"isEventPrequeueing":           v.IsEventPrequeueing,
		"timeUntilEventStart":          v.TimeUntilEventStart,
		"timeUntilEventStartFormatted": v.TimeUntilEventStartFormatted,
		"timeUntilEventEnd":            v.TimeUntilEventEnd,
		"timeUntilEventEndFormatted":   v.TimeUntilEventEndFormatted,
		"shuffleAtEventStart":          v.ShuffleAtEventStart,
		"turnstile":                    v.Turnstile,
		cookiesRequiredVar:             v.CookiesRequired,
		"refreshURL":                   v.RefreshURL,
		"priorityCodes":                v.PriorityCodes,
		"priorityCodeParam":            v.PriorityCodeParam,
		"priorityCodeMessage":          v.PriorityCodeMessage,
		"waitTimeHours":                v.WaitTimeHours,
		"waitTimeHourMinutes":          v.WaitTimeHourMinutes,
		"isPassthroughQueue":           v.IsPassthroughQueue,
		"isRejectQueue":                v.IsRejectQueue,
		"message":                      v.Message,
		closedVar:                      v.IsClosed,
	}
}

// queueAnswer is which answer writeQueue gives.
type queueAnswer uint8

const (
	// answerAgain is the page again without a new token: an early
	// check-in, an admitted visitor held by the emergency stop, a full
	// queue.
	answerAgain queueAnswer = iota
	// answerCounted is a counted check-in: the renewed token is set.
	answerCounted
	// answerFirst sets a new visitor's first token; an HTML page's refresh
	// carries the cookie check.
	answerFirst
	// answerNoCookie tells a client that did not keep its cookie that
	// cookies are required: no token, no automatic refresh.
	answerNoCookie
)

// refreshURLSlot stands for the refresh URL in a rendered page: the URL is
// different for nearly every new visitor (its path, the second), so pages
// are rendered and cached with this in its place and it is replaced on the
// way out; rendering afresh for every new visitor would cost the queued
// path most of its speed again. It holds no character HTML escaping
// changes.
const refreshURLSlot = "__waitroom_refresh_url__"

// maxRefreshHeaderURL is the longest address the Refresh header carries.
// The address is the visitor's, and a proxy in front holds an answer's
// headers in a small buffer (nginx: 4 or 8 KB by default, and a 502 past
// it), so no header of a queued answer grows with it past 1 KB. A longer
// address gets a Refresh without it: the browser reloads the address it
// is on, and misses only the cookie check's marker.
const maxRefreshHeaderURL = 1000

// writeQueue answers a visitor who waits, with tok: the queue page or, for an
// app that asks with exactly "Accept: application/json" where the room allows
// it, the same fields as JSON. ans says which answer it is; rq.marked says
// the request came on the cookie check's address with a valid cookie, so the
// page refreshes back to the clean address.
func (s *Server) writeQueue(rq *request, a *allocation, tok cookie.Token, ans queueAnswer) {
	vw := a.view
	v, refresh := queueVars(rq, a, tok, ans)
	placed(rq.w, tok.Bucket, &v)
	asJSON := vw.cfg.JSONResponseEnabled && rq.r.Header.Get("Accept") == "application/json"
	w, rm, now := rq.w, rq.rm, rq.now
	h := w.Header()
	if ans == answerCounted || ans == answerFirst {
		s.setCookie(h, &visit{rm: rm, v: vw, tok: tok, https: rq.https}, now.Unix())
	}
	// The Refresh header and the address the page goes to next are
	// written together, in one buffer: the address is in the header's
	// value.
	var buf [256]byte
	b := strconv.AppendInt(buf[:0], int64(refresh), 10)
	b = append(b, "; url="...)
	at := len(b)
	b, hasNext := appendNextAddress(b, rq, ans, asJSON)
	var next string
	switch {
	case ans == answerNoCookie:
		// No Refresh: every refresh would be a new visitor again.
		next = string(b[at:])
	case hasNext && len(b)-at <= maxRefreshHeaderURL:
		value := string(b)
		next = value[at:]
		h["Refresh"] = []string{value}
	default:
		// An address too long to echo in a header reloads as it is; the
		// page's own refresh and link still carry it.
		next = string(b[at:])
		h["Refresh"] = refreshValue(refresh)
	}
	h["Cache-Control"] = noStore
	status := vw.cfg.QueueingStatusCode
	if status == 0 {
		status = http.StatusOK
	}
	if asJSON {
		h["Content-Type"] = jsonType
		w.WriteHeader(status)
		jv := v // only the JSON answer's copy of the fields goes to the heap
		_ = json.NewEncoder(w).Encode(struct {
			V *pageVars `json:"cfWaitingRoom"`
		}{&jv})
		return
	}
	s.writePage(rq, vw, v, status, next)
}

// Header values every queued answer sends alike, made once: a value a
// handler sets is a slice the header keeps, and making it afresh for every
// answer was most of the queued path's allocations. They are shared, so
// nothing may change them in place (Header.Add appends to a copy: their
// length is their capacity).
var (
	noStore  = []string{"no-store"}
	htmlType = []string{"text/html; charset=utf-8"}
	jsonType = []string{"application/json"}
	// refreshValues are the Refresh headers without an address, by
	// interval in seconds: every interval a room gives is far below 256.
	refreshValues = func() (vs [256][]string) {
		for i := range vs {
			vs[i] = []string{strconv.Itoa(i)}
		}
		return vs
	}()
)

// refreshValue is the Refresh header that reloads the page's own address
// after n seconds.
func refreshValue(n int) []string {
	if n >= 0 && n < len(refreshValues) {
		return refreshValues[n]
	}
	return []string{strconv.Itoa(n)}
}

// queueVars are the fields of a waiting visitor's page (and its JSON), and
// the refresh interval it is given, in seconds.
func queueVars(rq *request, a *allocation, tok cookie.Token, ans queueAnswer) (pageVars, int) {
	rm, now := rq.rm, rq.now
	vw := a.view
	est := a.EstimateAt(tok.Bucket, tok.Arrived)
	if tok.Infinite {
		est = infiniteEstimate(a, tok.Bucket, now)
	}
	if ans == answerFirst || ans == answerNoCookie {
		// Not counted in the line yet (or never, without a cookie).
		est = est.ForNewVisitor()
	}
	refresh := int(tok.RefreshInterval)
	switch ans {
	case answerAgain:
		// Tell an early visitor when its next check-in will count.
		refresh = int(policy.NextCheckIn(visitors.CountingOf(tok), now.Unix()))
	case answerNoCookie:
		// Nothing refreshes this answer; a page or app that waits this
		// long before trying again anyway does not hammer the node.
		refresh = policy.RefreshBase
	}
	method := string(vw.pol.QueueingMethod)
	if method == "" {
		method = string(policy.FIFO)
	}
	v := pageVars{
		InWaitingRoom:          true,
		WaitTimeKnown:          est.WaitTimeKnown,
		WaitTime:               est.WaitTime,
		WaitTime25Percentile:   est.WaitTime25,
		WaitTime50Percentile:   est.WaitTime50,
		WaitTime75Percentile:   est.WaitTime75,
		WaitTimeFormatted:      est.WaitTimeFormatted,
		QueueIsFull:            est.QueueIsFull,
		QueueAll:               vw.pol.QueueAll && vw.phase != config.Prequeue,
		LastUpdated:            lastUpdated(now),
		RefreshIntervalSeconds: refresh,
		QueueingMethod:         method,
		IsFIFOQueue:            method == string(policy.FIFO),
		IsRandomQueue:          method == string(policy.Random),
		Position:               est.Position,
		PositionKnown:          est.PositionKnown,
		CookiesRequired:        ans == answerNoCookie,
	}
	setPriorityVars(&v, rq, vw, tok)
	if !v.PositionKnown {
		v.Position = 0
	}
	if rm.challenge != nil && !tok.Verified && queueing(a) && ans != answerNoCookie {
		// The challenge shows only on a queueing page, and only until it is
		// solved; a bot in the infinite queue keeps getting it, as an
		// unsolved visitor would. A client that keeps no cookie could not
		// keep a solution either.
		v.Turnstile = rm.challenge.Widget
	}
	if e := vw.event; e != nil {
		v.IsEventActive = vw.phase == config.EventActive
		v.IsEventPrequeueing = vw.phase == config.Prequeue
		v.ShuffleAtEventStart = e.ShuffleAtEventStart
		if d := e.EventStartTime.Sub(now); d > 0 {
			v.TimeUntilEventStart = int((d + time.Minute - 1) / time.Minute)
			v.TimeUntilEventStartFormatted = policy.FormatWait(v.TimeUntilEventStart)
		}
		if d := e.EventEndTime.Sub(now); d > 0 {
			v.TimeUntilEventEnd = int((d + time.Minute - 1) / time.Minute)
			v.TimeUntilEventEndFormatted = policy.FormatWait(v.TimeUntilEventEnd)
		}
		if vw.phase == config.Prequeue {
			// Before the start nobody's wait is known; check in again at
			// the start at the latest.
			v.WaitTimeKnown = false
			v.Position, v.PositionKnown = 0, false
			if secs := int(e.EventStartTime.Sub(now) / time.Second); secs >= 1 && secs < refresh {
				refresh = secs
				v.RefreshIntervalSeconds = refresh
			}
		}
	}
	v.fillPage(rq, vw)
	return v, refresh
}

// appendNextAddress appends where the queue page goes next and reports
// whether there is such an address (b is unchanged when it is the page's
// own).
func appendNextAddress(b []byte, rq *request, ans queueAnswer, asJSON bool) ([]byte, bool) {
	r, marked, now := rq.r, rq.marked, rq.now
	switch {
	case ans == answerNoCookie:
		return appendLocalURL(b, r.URL, false), true
	case ans == answerFirst && !asJSON:
		// An app polls the address it chose and reads cookiesRequired
		// from the JSON; only a page follows Refresh, so only a page
		// gets the check.
		return appendMarkedURL(b, r.URL, now.Unix()), true
	case marked:
		// The check passed: a plain refresh would reload the marked
		// address, and admission would land the visitor there.
		return appendLocalURL(b, r.URL, false), true
	}
	return b, false
}

// writePage renders the queue page (cached per room, template and fields)
// and writes it with status, the refresh address filled in when there is
// one.
func (s *Server) writePage(rq *request, vw *view, v pageVars, status int, next string) {
	w, rm := rq.w, rq.rm
	w.Header()["Content-Type"] = htmlType
	tmpl := vw.tmpl
	if v.CookiesRequired && !handlesCookiesRequired(tmpl) {
		tmpl = defaultPage
	}
	if v.IsClosed && !usesVar(tmpl, closedVar) {
		tmpl = defaultPage // a page that cannot say the room is closed
	}
	if tmpl == defaultPage {
		tmpl = defaultPageIn(v.Lang)
	}
	if next != "" {
		v.RefreshURL = refreshURLSlot
	}
	body := rm.pages.get(tmpl, v, func() []byte {
		body, err := tmpl.Render(v.context())
		if err != nil {
			// A template that parsed but fails to render must not cost
			// the visitor their place: fall back to the built-in page.
			s.log.Warn().Err(err).Str("room", rm.name).Msg("custom page failed to render; serving the default page")
			body, _ = defaultPageIn(v.Lang).Render(v.context())
		}
		return []byte(body)
	})
	if next != "" {
		writeFilled(w, status, body, template.HTMLEscapeString(next))
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// lastUpdated is the pages' lastUpdated at now: the second, formatted once
// a second rather than for every answer.
func lastUpdated(now time.Time) string {
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

var refreshURLSlotBytes = []byte(refreshURLSlot)

// filledPages are the buffers writeFilled fills pages in.
var filledPages = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// writeFilled writes a cached page with every refreshURLSlot replaced by u.
// The cached bytes are shared, so the page is filled in a pooled buffer and
// written at once: a fresh copy of the page for every new visitor would
// cost about as much as the rest of its answer.
func writeFilled(w http.ResponseWriter, status int, page []byte, u string) {
	bp := filledPages.Get().(*[]byte)
	b := (*bp)[:0]
	for {
		i := bytes.Index(page, refreshURLSlotBytes)
		if i < 0 {
			break
		}
		b = append(b, page[:i]...)
		b = append(b, u...)
		page = page[i+len(refreshURLSlot):]
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

// pageCache keeps a room's rendered queue pages by template and variables.
// The variables take a handful of values at a time (the estimate moves with
// the allocation, the refresh interval is one of ten jittered values,
// lastUpdated changes once a second), so nearly every queued visitor gets
// bytes rendered before; rendering Mustache on every response cost 60% of
// the queued path.
type pageCache struct {
	mu sync.RWMutex
	m  map[pageKey][]byte
	// last is the page rendered last, looked at before the map: in a
	// flood every new visitor of a second gets the same page, and
	// comparing its variables costs less than hashing them.
	last atomic.Pointer[pageEntry]
}

type pageKey struct {
	t *mustache.Template
	v pageVars
}

type pageEntry struct {
	k pageKey
	b []byte
}

func (c *pageCache) get(t *mustache.Template, v pageVars, render func() []byte) []byte {
	k := pageKey{t, v}
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
		c.m = make(map[pageKey][]byte, 64)
	}
	c.m[k] = b
	c.mu.Unlock()
	c.last.Store(&pageEntry{k, b})
	return b
}

// writeRejectPage answers a room whose queueing method is reject: a static
// page, no refresh, no queue.
func writeRejectPage(w http.ResponseWriter, vw *view) {
	status := vw.cfg.QueueingStatusCode
	if status == 0 || status == http.StatusOK {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeStatusPage(w, status, "Not available right now", "This site is not accepting visitors at the moment. Please come back later.")
}

var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f5f6f8;color:#1d2330;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center}
main{background:#fff;border-radius:14px;box-shadow:0 6px 30px rgba(20,30,60,.08);padding:40px 44px;max-width:520px;margin:24px}
h1{font-size:1.5rem;margin:0 0 12px}p{line-height:1.55;color:#4a5366;margin:0}</style></head>
<body><main><h1>{{.Title}}</h1><p>{{.Text}}</p></main></body></html>
`))

func writeStatusPage(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = statusPage.Execute(w, struct{ Title, Text string }{title, text})
}
