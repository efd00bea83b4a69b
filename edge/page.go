package edge

import (
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/edge/visitors"
	"github.com/waitroom/waitroom/policy"
)

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
			V *queuepage.Vars `json:"cfWaitingRoom"`
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
func queueVars(rq *request, a *allocation, tok cookie.Token, ans queueAnswer) (queuepage.Vars, int) {
	rm, now := rq.rm, rq.now
	vw := a.view
	est := a.EstimateAt(tok.Bucket, tok.Arrived)
	if tok.Infinite {
		est = infiniteEstimate(a, tok.Bucket, now)
	}
	switch ans {
	case answerFirst:
		// Not counted in the line until its cookie is back: behind
		// everyone counted and those of the last seconds still to prove.
		est = est.ForNewVisitor()
	case answerNoCookie:
		// Never counted without a cookie: no place to hold.
		est = est.ForNewVisitor()
		est.Position, est.PositionKnown = 0, false
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
	v := queuepage.Vars{
		InWaitingRoom:               true,
		WaitTimeKnown:               est.WaitTimeKnown,
		WaitTime:                    est.WaitTime,
		WaitTime25Percentile:        est.WaitTime25,
		WaitTime50Percentile:        est.WaitTime50,
		WaitTime75Percentile:        est.WaitTime75,
		WaitTime25PercentileSeconds: est.WaitSeconds25,
		WaitTime50PercentileSeconds: est.WaitSeconds50,
		WaitTime75PercentileSeconds: est.WaitSeconds75,
		WaitTimeFormatted:           est.WaitTimeFormatted,
		QueueIsFull:                 est.QueueIsFull,
		QueueAll:                    vw.pol.QueueAll && vw.phase != config.Prequeue,
		LastUpdated:                 queuepage.LastUpdated(now),
		RefreshIntervalSeconds:      refresh,
		QueueingMethod:              method,
		IsFIFOQueue:                 method == string(policy.FIFO),
		IsRandomQueue:               method == string(policy.Random),
		Position:                    est.Position,
		PositionKnown:               est.PositionKnown,
		CookiesRequired:             ans == answerNoCookie,
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
	fillPage(&v, rq, vw)
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
func (s *Server) writePage(rq *request, vw *view, v queuepage.Vars, status int, next string) {
	w, rm := rq.w, rq.rm
	w.Header()["Content-Type"] = htmlType
	tmpl := queuepage.Template(vw.tmpl, &v)
	if next != "" {
		v.RefreshURL = queuepage.RefreshURLSlot
	}
	body := rm.pages.Get(tmpl, v, func() []byte {
		body, err := tmpl.Render(v.Context())
		if err != nil {
			// A template that parsed but fails to render must not cost
			// the visitor their place: fall back to the built-in page.
			s.log.Warn().Err(err).Str("room", rm.name).Msg("custom page failed to render; serving the default page")
			body, _ = queuepage.DefaultIn(v.Lang).Render(v.Context())
		}
		return []byte(body)
	})
	if next != "" {
		queuepage.WriteFilled(w, status, body, template.HTMLEscapeString(next))
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeRejectPage answers a room whose queueing method is reject: a static
// page, no refresh, no queue.
func writeRejectPage(w http.ResponseWriter, vw *view) {
	status := vw.cfg.QueueingStatusCode
	if status == 0 || status == http.StatusOK {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	queuepage.WriteStatus(w, status, "Not available right now", "This site is not accepting visitors at the moment. Please come back later.")
}
