// Package crowd is the visitor's side of a waiting room: the one parser of
// the Refresh header a queue page answers with, the one parser of the queue
// answer's JSON form (what an app that asks for it is told about its wait),
// and a cookie-keeping client that follows the refresh as a browser does
// (wait the interval, then load the address it names, the cookie check of a
// new visitor's first page).
//
// It imports nothing of waitroom's own, so that whatever drives a room from
// outside (the fidelity run, load generators, demos) can share it without
// depending on the room's internals.
package crowd

import (
	"encoding/json"
	"math"
	"strings"
	"time"
)

// Refresh is a Refresh header (or a meta refresh's content) as a browser
// reads it: how long to wait, and where to go then.
type Refresh struct {
	// After is the wait. Browsers ignore a fraction ("2.7" waits 2 s), and
	// so does this parser.
	After time.Duration
	// URL is the address named ("20; url=/x" names "/x"), unresolved: a
	// reference to resolve against the answer's own address. Empty when
	// none is named and the page reloads itself.
	URL string
}

// maxRefreshSeconds bounds the wait a header may ask for: larger values do
// not fit a time.Duration and are refused rather than wrapped.
const maxRefreshSeconds = math.MaxInt64 / int64(time.Second)

// ParseRefresh reads a Refresh value the way HTML's shared declarative
// refresh steps do: "N", "N; url=U", "N, URL = 'U'", "N;U" and "N U" all
// parse; anything without a leading number (or ".") does not. It never
// panics, whatever the input.
func ParseRefresh(v string) (Refresh, bool) {
	s := trimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits := s[:i]
	if digits == "" && (i >= len(s) || s[i] != '.') {
		return Refresh{}, false
	}
	var secs int64
	for _, c := range digits {
		secs = secs*10 + int64(c-'0')
		if secs > maxRefreshSeconds {
			return Refresh{}, false
		}
	}
	// The fraction is collected and ignored.
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	r := Refresh{After: time.Duration(secs) * time.Second}
	rest := s[i:]
	if rest == "" {
		return r, true
	}
	if c := rest[0]; c != ';' && c != ',' && !isSpace(c) {
		return Refresh{}, false
	}
	rest = trimSpace(rest)
	if rest != "" && (rest[0] == ';' || rest[0] == ',') {
		rest = trimSpace(rest[1:])
	}
	if rest == "" {
		return r, true
	}
	// An optional "url" and "=", in any case, before the address.
	if len(rest) >= 3 && strings.EqualFold(rest[:3], "url") {
		after := trimSpace(rest[3:])
		if after != "" && after[0] == '=' {
			rest = trimSpace(after[1:])
		}
	}
	// A quoted address ends at its closing quote; an unquoted one runs to
	// the end.
	if rest != "" && (rest[0] == '\'' || rest[0] == '"') {
		q := rest[0]
		rest = rest[1:]
		if j := strings.IndexByte(rest, q); j >= 0 {
			rest = rest[:j]
		}
	}
	r.URL = strings.TrimRight(rest, " \t\n\f\r")
	return r, true
}

// String formats r as a Refresh header value that ParseRefresh reads back.
func (r Refresh) String() string {
	n := int64(r.After / time.Second)
	if r.URL == "" {
		return itoa(n)
	}
	return itoa(n) + "; url=" + r.URL
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// isSpace is HTML's ASCII whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func trimSpace(s string) string {
	for s != "" && isSpace(s[0]) {
		s = s[1:]
	}
	return s
}

// AcceptJSON is the Accept header value with which a visitor (an app) asks
// for the queue answer's JSON form, where the room allows it: exactly this
// value, as Cloudflare's JSON-friendly waiting room has it.
const AcceptJSON = "application/json"

// Wait is what a queue answer told the visitor about its wait, as the JSON
// form's cfWaitingRoom object carries it: the estimate in whole minutes (a
// random queue's 25th, 50th and 75th percentiles beside it) and, under
// FIFO, the place in line.
type Wait struct {
	WaitTimeKnown bool `json:"waitTimeKnown"`
	WaitTime      int  `json:"waitTime"`
	WaitTime25    int  `json:"waitTime25Percentile"`
	WaitTime50    int  `json:"waitTime50Percentile"`
	WaitTime75    int  `json:"waitTime75Percentile"`
	// The same percentiles in seconds, as the page says them: finer than
	// the minutes for a random queue's percentile under a minute. Zero
	// from a room that does not send them (see Percentiles).
	WaitSeconds25 int  `json:"waitTime25PercentileSeconds"`
	WaitSeconds50 int  `json:"waitTime50PercentileSeconds"`
	WaitSeconds75 int  `json:"waitTime75PercentileSeconds"`
	IsRandomQueue bool `json:"isRandomQueue"`
	// PositionKnown: a place in line was shown, Position visitors ahead.
	PositionKnown bool  `json:"positionKnown"`
	Position      int64 `json:"position"`
}

// Percentiles are the 25th, 50th and 75th percentile waits the answer told
// (all three the estimate under FIFO): in the seconds it gave, or in its
// whole minutes where it gave none.
func (w Wait) Percentiles() [3]time.Duration {
	var out [3]time.Duration
	for i, p := range [3]struct{ s, m int }{{w.WaitSeconds25, w.WaitTime25}, {w.WaitSeconds50, w.WaitTime50}, {w.WaitSeconds75, w.WaitTime75}} {
		out[i] = time.Duration(p.m) * time.Minute
		if p.s > 0 {
			out[i] = time.Duration(p.s) * time.Second
		}
	}
	return out
}

// maxWaitBody bounds the JSON answer ParseWait is given: the room's is a
// few hundred bytes, and a visitor reads no more than this of any answer.
const maxWaitBody = 64 << 10

// ParseWait reads a queue answer's JSON form ({"cfWaitingRoom": {...}}).
// It reports false for anything else: another document, no cfWaitingRoom
// object, or one not in the waiting room. It never panics.
func ParseWait(body []byte) (Wait, bool) {
	var doc struct {
		Room *struct {
			InWaitingRoom bool `json:"inWaitingRoom"`
			Wait
		} `json:"cfWaitingRoom"`
	}
	if len(body) > maxWaitBody || json.Unmarshal(body, &doc) != nil || doc.Room == nil || !doc.Room.InWaitingRoom {
		return Wait{}, false
	}
	w := doc.Room.Wait
	if !w.PositionKnown {
		w.Position = 0
	}
	return w, true
}
