package edge_test

// Tests of the visitor path (visit.go): the per-request decision of
// edge.Server driven through its http.Handler with httptest, on a fake clock.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/policy"
)

const cookieName = "__waitroom"

// fullRoom is a room of one: the first visitor is admitted, the next waits.
func fullRoom(name string) config.Room { return room(name, 1, 1) }

// admitFirst sends a first visitor into the room at url and checks that it
// reached the origin (edgetest.Fixture.AdmitFirst).
func admitFirst(t *testing.T, f *fixture, url string) *visitor {
	t.Helper()
	return f.AdmitFirst(t, url)
}

// settle has the node run a round of its allocation loop now, as the loop
// does within 250 ms: every room's allocation is recomputed from the merged
// state, and GET /state then reports fresh figures.
func settle(t *testing.T, f *fixture) {
	t.Helper()
	f.Server.RefreshAllocations()
}

func TestFirstVisitorIsAdmittedWithACookie(t *testing.T) {
	tests := []struct {
		name          string
		attrs         config.CookieAttributes
		url           string
		hdr           []string
		wantSameSite  string
		wantSecure    bool
		sessionLength int
	}{
		{name: "over plain HTTP the cookie is SameSite=Lax and not Secure", url: "http://shop.test/", wantSameSite: "Lax", sessionLength: 3},
		{name: "behind a proxy that says X-Forwarded-Proto https the cookie is SameSite=None and Secure", url: "http://shop.test/", hdr: []string{"X-Forwarded-Proto", "https"}, wantSameSite: "None", wantSecure: true, sessionLength: 3},
		{name: "over TLS the cookie is SameSite=None and Secure", url: "https://shop.test/", wantSameSite: "None", wantSecure: true, sessionLength: 7},
		{name: "secure always makes the cookie Secure even over plain HTTP", attrs: config.CookieAttributes{Secure: "always"}, url: "http://shop.test/", wantSameSite: "Lax", wantSecure: true, sessionLength: 1},
		{name: "secure never over HTTPS falls back to Lax, since browsers drop SameSite=None without Secure", attrs: config.CookieAttributes{Secure: "never"}, url: "https://shop.test/", wantSameSite: "Lax", sessionLength: 5},
		{name: "samesite strict is kept over HTTPS", attrs: config.CookieAttributes{SameSite: "strict"}, url: "https://shop.test/", wantSameSite: "Strict", wantSecure: true, sessionLength: 5},
		{name: "samesite strict over plain HTTP is not Secure", attrs: config.CookieAttributes{SameSite: "strict"}, url: "http://shop.test/", wantSameSite: "Strict", sessionLength: 5},
		{name: "samesite lax over HTTPS is Lax and Secure", attrs: config.CookieAttributes{SameSite: "lax"}, url: "https://shop.test/", wantSameSite: "Lax", wantSecure: true, sessionLength: 30},
		{name: "samesite none is always Secure", attrs: config.CookieAttributes{SameSite: "none", Secure: "always"}, url: "http://shop.test/", wantSameSite: "None", wantSecure: true, sessionLength: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := room("shop", 10, 10)
			rc.SessionDuration = tt.sessionLength
			rc.CookieAttributes = tt.attrs
			f := newFixture(t, rc)
			v := newVisitor()
			resp := v.Get(f.Server, tt.url, tt.hdr...)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("status %d, X-Origin %q: want proxied to the origin", resp.StatusCode, resp.Header.Get("X-Origin"))
			}
			if b := body(t, resp); b != "origin: /" {
				t.Fatalf("body %q, want the origin's", b)
			}
			line := setCookie(resp, cookieName)
			if line == "" {
				t.Fatalf("no %s cookie in %q", cookieName, resp.Header.Values("Set-Cookie"))
			}
			if got, want := maxAge(t, line), tt.sessionLength*60; got != want {
				t.Errorf("Max-Age %d, want session_duration × 60 = %d (%s)", got, want, line)
			}
			if _, ok := cookieAttr(line, "HttpOnly"); !ok {
				t.Errorf("cookie is not HttpOnly: %s", line)
			}
			if p, _ := cookieAttr(line, "Path"); p != "/" {
				t.Errorf("cookie Path %q, want /: %s", p, line)
			}
			if ss, _ := cookieAttr(line, "SameSite"); ss != tt.wantSameSite {
				t.Errorf("SameSite %q, want %q: %s", ss, tt.wantSameSite, line)
			}
			if _, secure := cookieAttr(line, "Secure"); secure != tt.wantSecure {
				t.Errorf("Secure %v, want %v: %s", secure, tt.wantSecure, line)
			}
			// The admitted visitor's next request goes straight to the
			// origin and is not a new admission.
			resp = v.Get(f.Server, tt.url, tt.hdr...)
			if resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("second request not proxied: %d", resp.StatusCode)
			}
			if rs := roomStatus(t, f.Admin, "shop"); rs.NewUsersThisMinute != 1 || rs.EstimatedTotalActiveUsers != 1 {
				t.Errorf("after two requests of one visitor: new users %d, active %d; want 1 and 1", rs.NewUsersThisMinute, rs.EstimatedTotalActiveUsers)
			}
		})
	}
}

func TestVisitorOverTheLimitIsQueued(t *testing.T) {
	for _, code := range []int{0, 200, 202, 429} {
		want := code
		if want == 0 {
			want = http.StatusOK
		}
		t.Run(fmt.Sprintf("queueing_status_code %d answers %d with the default page", code, want), func(t *testing.T) {
			rc := fullRoom("shop")
			rc.QueueingStatusCode = code
			f := newFixture(t, rc)
			admitFirst(t, f, "http://shop.test/")
			hits := f.Origin.Hits()

			v := newVisitor()
			resp := v.Get(f.Server, "http://shop.test/tickets")
			b := body(t, resp)
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			if f.Origin.Hits() != hits {
				t.Fatal("a queued visitor reached the origin")
			}
			// A new visitor's first page refreshes to its own address with
			// the cookie check (see TestCookieCheck), after the short proof
			// interval.
			rf, ok := crowd.ParseRefresh(resp.Header.Get("Refresh"))
			refresh, next := int(rf.After/time.Second), rf.URL
			if !ok || refresh != policy.ProofRefresh {
				t.Errorf("Refresh %q, want %d seconds", resp.Header.Get("Refresh"), policy.ProofRefresh)
			}
			if want := fmt.Sprintf("/tickets?__waitroom_cc=%d", f.Clock.Now().Unix()); next != want {
				t.Errorf("Refresh url %q, want %q", next, want)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("Content-Type %q, want text/html", ct)
			}
			for _, s := range []string{"You are in line", `<div class="wait">1 minute</div>`, fmt.Sprintf(`content="%s"`, resp.Header.Get("Refresh")), "This page refreshes by itself."} {
				if !strings.Contains(b, s) {
					t.Errorf("default page lacks %q:\n%s", s, b)
				}
			}
			line := setCookie(resp, cookieName)
			if got := maxAge(t, line); got != 300 {
				t.Errorf("queued cookie Max-Age %d, want 300 (five minutes): %s", got, line)
			}
			if _, ok := cookieAttr(line, "HttpOnly"); !ok {
				t.Errorf("queued cookie is not HttpOnly: %s", line)
			}
			if rs := roomStatus(t, f.Admin, "shop"); rs.Status != "queueing" || rs.EstimatedQueuedUsers != 0 {
				t.Errorf("room status %q with %d queued before the proof, want queueing with 0", rs.Status, rs.EstimatedQueuedUsers)
			}
			// Back with the cookie: now it waits, at the front of the
			// line, and its page refreshes at the front's interval.
			proof := v.Prove(t, f.Server, f.Clock, resp)
			if n, err := refreshSeconds(proof); err != nil || n < 4 || n > 6 {
				t.Errorf("after the proof Refresh %q, want 5 ± 1 seconds", proof.Header.Get("Refresh"))
			}
			rs := roomStatus(t, f.Admin, "shop")
			if rs.Status != "queueing" || rs.EstimatedQueuedUsers != 1 {
				t.Errorf("room status %q with %d queued, want queueing with 1", rs.Status, rs.EstimatedQueuedUsers)
			}
		})
	}

	t.Run("the refresh interval at the front of the line is jittered per visitor between 4 and 6 seconds", func(t *testing.T) {
		f := newFixture(t, fullRoom("shop"))
		admitFirst(t, f, "http://shop.test/")
		seen := map[int]bool{}
		for i := 0; i < 40; i++ {
			resp := newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/")
			n, err := refreshSeconds(resp)
			if err != nil || n < 4 || n > 6 {
				t.Fatalf("Refresh %q, want 4..6", resp.Header.Get("Refresh"))
			}
			seen[n] = true
		}
		if len(seen) < 2 {
			t.Errorf("40 queued visitors all got the same refresh interval %v: no jitter", seen)
		}
	})
}

// allVars prints every page variable the SPEC names, one per line.
const allVars = `waitTime={{waitTime}}
waitTimeKnown={{waitTimeKnown}}
waitTimeFormatted={{waitTimeFormatted}}
waitTime25Percentile={{waitTime25Percentile}}
waitTime50Percentile={{waitTime50Percentile}}
waitTime75Percentile={{waitTime75Percentile}}
queueIsFull={{queueIsFull}}
queueAll={{queueAll}}
lastUpdated={{lastUpdated}}
refreshIntervalSeconds={{refreshIntervalSeconds}}
queueingMethod={{queueingMethod}}
isFIFOQueue={{isFIFOQueue}}
isRandomQueue={{isRandomQueue}}
inWaitingRoom={{inWaitingRoom}}
position={{position}}
positionKnown={{positionKnown}}
turnstile=[{{{turnstile}}}]
{{#isFIFOQueue}}section:fifo{{/isFIFOQueue}}{{^waitTimeKnown}}section:unknown{{/waitTimeKnown}}
`

func parseVars(t *testing.T, page string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, line := range strings.Split(page, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

func TestCustomPageRendersEveryVariable(t *testing.T) {
	tests := []struct {
		name   string
		method string
		limit  int
		want   map[string]string
		extra  string // a line the page must also hold
	}{
		{
			// The visitor's first page: alone in line, nobody is ahead.
			name:   "a FIFO room fills every variable with the FIFO estimate",
			method: "fifo",
			limit:  1,
			want: map[string]string{
				"waitTime": "1", "waitTimeKnown": "true", "waitTimeFormatted": "1 minute",
				"waitTime25Percentile": "1", "waitTime50Percentile": "1", "waitTime75Percentile": "1",
				"queueIsFull": "false", "queueAll": "false", "lastUpdated": "2030-06-01T12:00:05.000Z",
				"queueingMethod": "fifo", "isFIFOQueue": "true", "isRandomQueue": "false",
				"inWaitingRoom": "true", "turnstile": "[]", "position": "0", "positionKnown": "true",
			},
			extra: "section:fifo",
		},
		{
			name:   "a random room fills the percentiles and says it is random",
			method: "random",
			limit:  1,
			want: map[string]string{
				"waitTimeKnown": "true", "queueIsFull": "false", "queueAll": "false",
				"queueingMethod": "random", "isFIFOQueue": "false", "isRandomQueue": "true",
				"inWaitingRoom": "true", "turnstile": "[]", "position": "0", "positionKnown": "false",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := room("shop", tt.limit, tt.limit)
			rc.QueueingMethod = tt.method
			rc.CustomPageHTML = allVars
			f := newFixture(t, rc)
			admitFirst(t, f, "http://shop.test/")
			resp := newVisitor().Get(f.Server, "http://shop.test/")
			page := body(t, resp)
			vars := parseVars(t, page)
			for _, name := range []string{"waitTime", "waitTimeKnown", "waitTimeFormatted", "waitTime25Percentile", "waitTime50Percentile", "waitTime75Percentile", "queueIsFull", "queueAll", "lastUpdated", "refreshIntervalSeconds", "queueingMethod", "isFIFOQueue", "isRandomQueue", "inWaitingRoom", "position", "positionKnown", "turnstile"} {
				if _, ok := vars[name]; !ok {
					t.Errorf("variable %s not rendered:\n%s", name, page)
				}
			}
			for k, want := range tt.want {
				if vars[k] != want {
					t.Errorf("%s = %q, want %q", k, vars[k], want)
				}
			}
			if n, _ := refreshSeconds(resp); vars["refreshIntervalSeconds"] != strconv.Itoa(n) {
				t.Errorf("refreshIntervalSeconds %q, Refresh header %q: want the same", vars["refreshIntervalSeconds"], resp.Header.Get("Refresh"))
			}
			if tt.method == "random" {
				p25, _ := strconv.Atoi(vars["waitTime25Percentile"])
				p50, _ := strconv.Atoi(vars["waitTime50Percentile"])
				p75, _ := strconv.Atoi(vars["waitTime75Percentile"])
				if p25 < 1 || p25 > p50 || p50 > p75 || vars["waitTime"] != vars["waitTime50Percentile"] {
					t.Errorf("percentiles %d ≤ %d ≤ %d, waitTime %s: want ordered, waitTime the median", p25, p50, p75, vars["waitTime"])
				}
			}
			if tt.extra != "" && !strings.Contains(page, tt.extra) {
				t.Errorf("page lacks %q:\n%s", tt.extra, page)
			}
		})
	}
}

// jsonFields are the cfWaitingRoom fields an app written for the reference
// reads.
var jsonFields = []string{"inWaitingRoom", "waitTimeKnown", "waitTime", "waitTime25Percentile", "waitTime50Percentile", "waitTime75Percentile", "waitTimeFormatted", "queueIsFull", "queueAll", "lastUpdated", "refreshIntervalSeconds", "queueingMethod", "isFIFOQueue", "isRandomQueue"}

// queueJSON decodes a cfWaitingRoom response.
func queueJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var doc map[string]map[string]any
	b := body(t, resp)
	if err := json.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	obj, ok := doc["cfWaitingRoom"]
	if !ok || len(doc) != 1 {
		t.Fatalf("want exactly {\"cfWaitingRoom\": {...}}, got %s", b)
	}
	return obj
}

func TestJSONResponse(t *testing.T) {
	tests := []struct {
		name     string
		enabled  bool
		accept   string
		wantJSON bool
	}{
		{name: "Accept exactly application/json gets JSON", enabled: true, accept: "application/json", wantJSON: true},
		{name: "Accept application/json, text/html gets the page", enabled: true, accept: "application/json, text/html"},
		{name: "Accept text/html gets the page", enabled: true, accept: "text/html"},
		{name: "Accept application/json;q=0.9 gets the page", enabled: true, accept: "application/json;q=0.9"},
		{name: "no Accept header gets the page", enabled: true},
		{name: "a room without json_response_enabled answers JSON clients with the page", accept: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := fullRoom("app")
			rc.JSONResponseEnabled = tt.enabled
			rc.QueueingStatusCode = 202
			f := newFixture(t, rc)
			admitFirst(t, f, "http://app.test/")
			var hdr []string
			if tt.accept != "" {
				hdr = []string{"Accept", tt.accept}
			}
			resp := newVisitor().Get(f.Server, "http://app.test/api", hdr...)
			if resp.StatusCode != 202 {
				t.Fatalf("status %d, want queueing_status_code 202", resp.StatusCode)
			}
			if setCookie(resp, cookieName) == "" {
				t.Error("a queued JSON client gets no cookie")
			}
			ct := resp.Header.Get("Content-Type")
			if !tt.wantJSON {
				if !strings.HasPrefix(ct, "text/html") {
					t.Fatalf("Content-Type %q, want the HTML page", ct)
				}
				return
			}
			if ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			refresh := resp.Header.Get("Refresh")
			obj := queueJSON(t, resp)
			for _, k := range jsonFields {
				if _, ok := obj[k]; !ok {
					t.Errorf("cfWaitingRoom lacks %s: %v", k, obj)
				}
			}
			if obj["inWaitingRoom"] != true {
				t.Errorf("inWaitingRoom %v, want true", obj["inWaitingRoom"])
			}
			if got := fmt.Sprint(obj["refreshIntervalSeconds"]); got != refresh {
				t.Errorf("refreshIntervalSeconds %s, Refresh header %s", got, refresh)
			}
			if obj["lastUpdated"] != "2030-06-01T12:00:05.000Z" || obj["queueingMethod"] != "fifo" || obj["isFIFOQueue"] != true {
				t.Errorf("lastUpdated/queueingMethod/isFIFOQueue = %v/%v/%v", obj["lastUpdated"], obj["queueingMethod"], obj["isFIFOQueue"])
			}
		})
	}
}

// queuedBehindRevocable sets up a room of one with revoke enabled: A is
// admitted, B queued at the first minute; a minute later B checks in (still
// full) and A's session is revoked, which opens one slot. It returns B and
// the refresh interval of B's latest counted check-in, made at the fixture
// clock's current time.
func queuedBehindRevocable(t *testing.T) (*fixture, *visitor, int) {
	t.Helper()
	rc := fullRoom("shop")
	rc.EnabledOriginCommands = []string{"revoke"}
	f := newFixture(t, rc)
	a := admitFirst(t, f, "http://shop.test/")
	b := newVisitor()
	if resp := b.Get(f.Server, "http://shop.test/"); resp.Header.Get("Refresh") == "" {
		t.Fatalf("B not queued: %d", resp.StatusCode)
	}
	f.Clock.Advance(time.Minute)
	resp := b.Get(f.Server, "http://shop.test/")
	refresh, err := strconv.Atoi(resp.Header.Get("Refresh"))
	if err != nil || setCookie(resp, cookieName) == "" {
		t.Fatalf("B's counted check-in a minute later: status %d, Refresh %q, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Refresh"), resp.Header.Values("Set-Cookie"))
	}
	if resp := a.Get(f.Server, "http://shop.test/revoke-cf"); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke A: %d", resp.StatusCode)
	}
	if rs := roomStatus(t, f.Admin, "shop"); rs.OpenSlots != 1 || rs.EstimatedTotalActiveUsers != 0 {
		t.Fatalf("after revoking A: %d open slots, %d active; want 1 and 0", rs.OpenSlots, rs.EstimatedTotalActiveUsers)
	}
	return f, b, refresh
}

func TestEarlyCheckInIsNotAnAttempt(t *testing.T) {
	tests := []struct {
		name  string
		after func(refresh int) time.Duration
		admit bool
	}{
		{name: "a check-in a second after the last gets the page again and no slot", after: func(int) time.Duration { return time.Second }},
		{name: "a check-in two seconds before the interval is still early", after: func(r int) time.Duration { return time.Duration(r-2) * time.Second }},
		{name: "a check-in at the interval is an attempt and takes the open slot", after: func(r int) time.Duration { return time.Duration(r) * time.Second }, admit: true},
		{name: "a check-in long after the interval takes the open slot", after: func(r int) time.Duration { return time.Duration(r+15) * time.Second }, admit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, b, refresh := queuedBehindRevocable(t)
			before := roomStatus(t, f.Admin, "shop")
			early := metric(t, f.Admin, `waitroom_requests_total{outcome="early_checkin",room="shop"}`)
			hits := f.Origin.Hits()

			elapsed := tt.after(refresh)
			f.Clock.Advance(elapsed)
			resp := b.Get(f.Server, "http://shop.test/")
			after := roomStatus(t, f.Admin, "shop")

			if tt.admit {
				if resp.Header.Get("X-Origin") != "yes" || f.Origin.Hits() != hits+1 {
					t.Fatalf("check-in %v after the last (interval %ds) was not admitted: %d", elapsed, refresh, resp.StatusCode)
				}
				if got := maxAge(t, setCookie(resp, cookieName)); got != 5*60 {
					t.Errorf("admitted cookie Max-Age %d, want 300", got)
				}
				if after.NewUsersThisMinute != before.NewUsersThisMinute+1 || after.EstimatedQueuedUsers != 0 || after.EstimatedTotalActiveUsers != 1 {
					t.Errorf("after admission: new %d, queued %d, active %d; want %d, 0, 1", after.NewUsersThisMinute, after.EstimatedQueuedUsers, after.EstimatedTotalActiveUsers, before.NewUsersThisMinute+1)
				}
				return
			}
			if resp.StatusCode != http.StatusOK || f.Origin.Hits() != hits {
				t.Fatalf("early check-in: status %d, origin hits %d → %d; want the page", resp.StatusCode, hits, f.Origin.Hits())
			}
			if got := setCookie(resp, cookieName); got != "" {
				t.Errorf("early check-in set a new cookie: %s", got)
			}
			wantRefresh := strconv.Itoa(refresh - int(elapsed/time.Second))
			if got := resp.Header.Get("Refresh"); got != wantRefresh {
				t.Errorf("Refresh %q, want %s: the time left until the check-in counts", got, wantRefresh)
			}
			if !strings.Contains(body(t, resp), "You are in line") {
				t.Error("early check-in did not get the queue page")
			}
			if after.NewUsersThisMinute != before.NewUsersThisMinute || after.EstimatedQueuedUsers != before.EstimatedQueuedUsers ||
				after.EstimatedTotalActiveUsers != before.EstimatedTotalActiveUsers || after.OpenSlots != before.OpenSlots {
				t.Errorf("an early check-in changed the room: before %+v, after %+v", before, after)
			}
			if n := metric(t, f.Admin, `waitroom_requests_total{outcome="early_checkin",room="shop"}`); n != early+1 {
				t.Errorf("early_checkin counter %v, want %v", n, early+1)
			}
			// Once the interval has passed, the same visitor gets the slot.
			f.Clock.Advance(time.Duration(refresh)*time.Second - elapsed)
			if resp := b.Get(f.Server, "http://shop.test/"); resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("check-in at the interval after an early one: %d, want admitted", resp.StatusCode)
			}
		})
	}
}

func TestSessionRenewal(t *testing.T) {
	tests := []struct {
		name       string
		disable    bool
		wantMaxAge int
	}{
		{name: "an admitted visitor's session is renewed on each request", wantMaxAge: 180},
		{name: "with disable_session_renewal the session keeps its first expiry", disable: true, wantMaxAge: 180 - 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := room("shop", 5, 5)
			rc.SessionDuration = 3
			rc.DisableSessionRenewal = tt.disable
			f := newFixture(t, rc)
			v := admitFirst(t, f, "http://shop.test/")
			f.Clock.Advance(100 * time.Second)
			resp := v.Get(f.Server, "http://shop.test/page")
			if resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("admitted visitor not proxied: %d", resp.StatusCode)
			}
			if got := maxAge(t, setCookie(resp, cookieName)); got != tt.wantMaxAge {
				t.Errorf("Max-Age %d, want %d", got, tt.wantMaxAge)
			}
			if rs := roomStatus(t, f.Admin, "shop"); rs.NewUsersThisMinute != 0 || rs.EstimatedTotalActiveUsers != 1 {
				t.Errorf("a session request in the next minute: new users %d, active %d; want 0 and 1 (moved, not re-admitted)", rs.NewUsersThisMinute, rs.EstimatedTotalActiveUsers)
			}
		})
	}
}

func TestBadCookieIsANewVisitor(t *testing.T) {
	other, err := cookie.GenerateKey(nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	otherRing, err := cookie.NewKeyring(other)
	if err != nil {
		t.Fatal(err)
	}
	sameID, err := cookie.GenerateKey(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	sameIDRing, err := cookie.NewKeyring(sameID)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		value  func(t *testing.T, f *fixture) string
		reason string
	}{
		{
			name: "a tampered cookie", reason: "auth",
			value: func(t *testing.T, f *fixture) string {
				v := admitFirst(t, f, "http://a.test/")
				c := []byte(v.Cookies[cookieName].Value)
				i := len(c) / 2
				if c[i] == 'A' {
					c[i] = 'B'
				} else {
					c[i] = 'A'
				}
				return string(c)
			},
		},
		{
			name: "a cookie of another room", reason: "auth",
			value: func(t *testing.T, f *fixture) string {
				return admitFirst(t, f, "http://b.test/").Cookies[cookieName].Value
			},
		},
		{
			name: "an expired cookie", reason: "expired",
			value: func(t *testing.T, f *fixture) string {
				v := admitFirst(t, f, "http://a.test/")
				f.Clock.Advance(6 * time.Minute) // session_duration 5
				return v.Cookies[cookieName].Value
			},
		},
		{
			name: "a cookie sealed under a key id this node does not have", reason: "unknown_key",
			value: func(t *testing.T, f *fixture) string {
				now := f.Clock.Now().Unix()
				return otherRing.Seal("alpha", cookie.Token{Bucket: now/60 - 10, AcceptedAt: now, LastCheckIn: now, CountedMinute: now / 60, ExpiresAt: now + 300})
			},
		},
		{
			name: "a cookie sealed under another secret with the same key id", reason: "auth",
			value: func(t *testing.T, f *fixture) string {
				now := f.Clock.Now().Unix()
				return sameIDRing.Seal("alpha", cookie.Token{Bucket: now/60 - 10, AcceptedAt: now, LastCheckIn: now, CountedMinute: now / 60, ExpiresAt: now + 300})
			},
		},
		{name: "garbage", reason: "malformed", value: func(*testing.T, *fixture) string { return "not-a-token!!" }},
		{name: "an empty value", reason: "malformed", value: func(*testing.T, *fixture) string { return "" }},
		{name: "a huge value", reason: "too_large", value: func(*testing.T, *fixture) string { return strings.Repeat("A", 4000) }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is treated as a new visitor and counted as a cookie error", func(t *testing.T) {
			f := newFixture(t,
				withHost(room("alpha", 50, 50), "a.test"),
				withHost(room("beta", 50, 50), "b.test"))
			value := tt.value(t, f)
			before := roomStatus(t, f.Admin, "alpha")
			errsBefore := metric(t, f.Admin, `waitroom_cookie_errors_total{reason="`+tt.reason+`",room="alpha"}`)

			v := newVisitor()
			v.Cookies[cookieName] = &http.Cookie{Name: cookieName, Value: value}
			resp := v.Get(f.Server, "http://a.test/")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("status %d: want the new visitor admitted to the origin", resp.StatusCode)
			}
			if setCookie(resp, cookieName) == "" || v.Cookies[cookieName].Value == value {
				t.Error("the visitor did not get a fresh cookie")
			}
			after := roomStatus(t, f.Admin, "alpha")
			if after.NewUsersThisMinute != before.NewUsersThisMinute+1 {
				t.Errorf("new users this minute %d → %d: the visitor was not counted as a new admission", before.NewUsersThisMinute, after.NewUsersThisMinute)
			}
			if n := metric(t, f.Admin, `waitroom_cookie_errors_total{reason="`+tt.reason+`",room="alpha"}`); n != errsBefore+1 {
				t.Errorf("waitroom_cookie_errors_total{reason=%q} = %v, want %v", tt.reason, n, errsBefore+1)
			}
		})
	}
}

func withHost(rc config.Room, host string) config.Room {
	rc.Host = host
	return rc
}

func TestOriginFailures(t *testing.T) {
	t.Run("an origin that is down gives a 502 page without Go error text, and the admitted visitor keeps the session", func(t *testing.T) {
		dead := edgetest.NewOrigin(t)
		deadURL := dead.URL
		dead.Close()
		rc := room("shop", 5, 5)
		rc.Origin = deadURL
		f := newFixture(t, rc)
		v := newVisitor()
		resp := v.Get(f.Server, "http://shop.test/")
		b := body(t, resp)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("Content-Type %q, want an HTML page", ct)
		}
		for _, leak := range []string{"dial", "refused", "127.0.0.1", "tcp", "proxy error", "EOF"} {
			if strings.Contains(strings.ToLower(b), strings.ToLower(leak)) {
				t.Errorf("502 page shows %q:\n%s", leak, b)
			}
		}
		if !strings.Contains(b, "not reachable") {
			t.Errorf("502 page does not say the site is not reachable:\n%s", b)
		}
		if setCookie(resp, cookieName) == "" {
			t.Error("the admitted visitor lost its session on a 502")
		}
		if n := metric(t, f.Admin, `waitroom_origin_errors_total{reason="unreachable",room="shop"}`); n != 1 {
			t.Errorf("origin_errors_total{unreachable} = %v, want 1", n)
		}
	})

	t.Run("an origin slower than origin_timeout gives a 504 page", func(t *testing.T) {
		release := make(chan struct{})
		slow := edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		})))
		defer close(release)
		clock := newFakeClock(5)
		rc := room("shop", 5, 5)
		rc.Origin = slow.URL
		cfg := nodeConfig("node-a", keyFile(t, t.TempDir()), "", rc)
		cfg.OriginTimeout = config.Duration(150 * time.Millisecond)
		srv := startServer(t, cfg, clock)
		start := time.Now()
		resp := newVisitor().Get(srv, "http://shop.test/")
		b := body(t, resp)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("status %d, want 504: %s", resp.StatusCode, b)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("504 after %v, want about origin_timeout", d)
		}
		if !strings.Contains(b, "taking too long") || strings.Contains(b, "timeout awaiting") {
			t.Errorf("504 page:\n%s", b)
		}
	})
}

func TestRoomModes(t *testing.T) {
	t.Run("a suspended room proxies everyone without a cookie or a count", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.Suspended = true
		f := newFixture(t, rc)
		for i := 0; i < 3; i++ {
			resp := newVisitor().Get(f.Server, "http://shop.test/")
			if resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("visitor %d: %d, want proxied", i, resp.StatusCode)
			}
			if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Fatalf("suspended room set a cookie: %q", sc)
			}
		}
		rs := roomStatus(t, f.Admin, "shop")
		if rs.Status != "suspended" || rs.NewUsersThisMinute != 0 || rs.EstimatedTotalActiveUsers != 0 {
			t.Errorf("status %q, new %d, active %d; want suspended, 0, 0", rs.Status, rs.NewUsersThisMinute, rs.EstimatedTotalActiveUsers)
		}
	})

	t.Run("passthrough admits everyone over the limit and counts them", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.QueueingMethod = "passthrough"
		f := newFixture(t, rc)
		for i := 0; i < 3; i++ {
			resp := newVisitor().Get(f.Server, "http://shop.test/")
			if resp.Header.Get("X-Origin") != "yes" || setCookie(resp, cookieName) == "" {
				t.Fatalf("visitor %d: %d, want proxied with a cookie", i, resp.StatusCode)
			}
		}
		rs := roomStatus(t, f.Admin, "shop")
		if rs.Status != "not_queueing" || rs.NewUsersThisMinute != 3 || rs.EstimatedTotalActiveUsers != 3 {
			t.Errorf("status %q, new %d, active %d; want not_queueing, 3, 3", rs.Status, rs.NewUsersThisMinute, rs.EstimatedTotalActiveUsers)
		}
	})

	t.Run("reject answers a static page without Refresh", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.QueueingMethod = "reject"
		f := newFixture(t, rc)
		resp := newVisitor().Get(f.Server, "http://shop.test/")
		b := body(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", resp.StatusCode)
		}
		if r := resp.Header.Get("Refresh"); r != "" {
			t.Errorf("Refresh %q on the reject page", r)
		}
		if strings.Contains(b, "http-equiv") || !strings.Contains(b, "Not available") {
			t.Errorf("reject page:\n%s", b)
		}
		if f.Origin.Hits() != 0 {
			t.Error("a rejected visitor reached the origin")
		}
	})

	t.Run("queue_all queues even the first visitor, with no estimate", func(t *testing.T) {
		rc := room("shop", 100, 100)
		rc.QueueAll = true
		rc.JSONResponseEnabled = true
		f := newFixture(t, rc)
		resp := newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/", "Accept", "application/json")
		obj := queueJSON(t, resp)
		if obj["queueAll"] != true || obj["waitTimeKnown"] != false || obj["inWaitingRoom"] != true {
			t.Errorf("queue_all JSON: %v", obj)
		}
		page := body(t, newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/"))
		if !strings.Contains(page, "The site is paused") {
			t.Errorf("queue_all page:\n%s", page)
		}
		if f.Origin.Hits() != 0 {
			t.Error("queue_all let a visitor through")
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.Status != "queue_all" || rs.EstimatedQueuedUsers != 2 {
			t.Errorf("status %q with %d queued, want queue_all with 2", rs.Status, rs.EstimatedQueuedUsers)
		}
	})
}

func TestOriginCommands(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		enabled bool
	}{
		{name: "Cf-Waiting-Room-Command revoke ends the session and frees the slot", path: "/revoke-cf", enabled: true},
		{name: "Waitroom-Command revoke ends the session and frees the slot", path: "/revoke-own", enabled: true},
		{name: "Cf-Waiting-Room-Command is stripped but revokes nothing when revoke is not enabled", path: "/revoke-cf"},
		{name: "Waitroom-Command is stripped but revokes nothing when revoke is not enabled", path: "/revoke-own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := room("shop", 2, 2)
			if tt.enabled {
				rc.EnabledOriginCommands = []string{"revoke"}
			}
			f := newFixture(t, rc)
			v := admitFirst(t, f, "http://shop.test/")
			admitFirst(t, f, "http://shop.test/")
			if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 2 {
				t.Fatalf("active %d, want 2", rs.EstimatedTotalActiveUsers)
			}
			// A second later, so that the session is renewed: an answer
			// carries the cookie only when its token changed.
			f.Clock.Advance(time.Second)
			resp := v.Get(f.Server, "http://shop.test"+tt.path)
			if resp.Header.Get("X-Origin") != "yes" || body(t, resp) != "origin: "+tt.path {
				t.Fatalf("the origin's answer did not reach the visitor: %d", resp.StatusCode)
			}
			for _, h := range []string{"Cf-Waiting-Room-Command", "Waitroom-Command"} {
				if got := resp.Header.Values(h); len(got) != 0 {
					t.Errorf("%s reached the visitor: %q", h, got)
				}
			}
			line := setCookie(resp, cookieName)
			rs := roomStatus(t, f.Admin, "shop")
			revoked := metric(t, f.Admin, `waitroom_requests_total{outcome="revoked",room="shop"}`)
			if !tt.enabled {
				if maxAge(t, line) != 300 || rs.EstimatedTotalActiveUsers != 2 || revoked != 0 {
					t.Errorf("revoke not enabled: cookie %q, active %d, revoked %v; want renewed, 2, 0", line, rs.EstimatedTotalActiveUsers, revoked)
				}
				return
			}
			if maxAge(t, line) != 0 {
				t.Errorf("revoked cookie: %q, want Max-Age=0", line)
			}
			if _, ok := v.Cookies[cookieName]; ok {
				t.Error("the visitor kept its cookie")
			}
			if rs.EstimatedTotalActiveUsers != 1 || rs.OpenSlots != 0 || revoked != 1 {
				// OpenSlots stays 0: the two admissions used this minute's
				// new-user budget of 2.
				t.Errorf("after revoke: active %d, open %d, revoked %v; want 1, 0, 1", rs.EstimatedTotalActiveUsers, rs.OpenSlots, revoked)
			}
			// The freed slot is the visitor's no more: next minute it comes
			// back as a new visitor and is admitted into the free slot.
			f.Clock.Advance(time.Minute)
			resp = v.Get(f.Server, "http://shop.test/")
			if resp.Header.Get("X-Origin") != "yes" {
				t.Fatalf("the revoked visitor coming back: %d, want admitted to the freed slot", resp.StatusCode)
			}
			if rs := roomStatus(t, f.Admin, "shop"); rs.NewUsersThisMinute != 1 || rs.EstimatedTotalActiveUsers != 2 {
				t.Errorf("the returning visitor: new %d, active %d; want 1, 2", rs.NewUsersThisMinute, rs.EstimatedTotalActiveUsers)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	// Every room has its own cookie suffix, so the cookie name tells which
	// room answered.
	mk := func(name, host, path string, extra ...config.Route) config.Room {
		rc := room(name, 100, 100)
		rc.Host, rc.Path, rc.CookieSuffix = host, path, name
		rc.AdditionalRoutes = extra
		return rc
	}
	rooms := []config.Room{
		mk("shop", "shop.test", "/"),
		mk("checkout", "shop.test", "/checkout"),
		mk("anyhost", "", "/deep/path", config.Route{Host: "promo.test", Path: "/sale"}),
		mk("promo", "shop.test", "/promo", config.Route{Host: "other.test", Path: "/promo"}, config.Route{Path: "/deals"}),
	}
	tests := []struct {
		name     string
		url      string
		fallback bool
		want     string // room name, or "" for no room
	}{
		{name: "a request to the room's host and path reaches that room", url: "http://shop.test/", want: "shop"},
		{name: "the host is matched without its port and in any case", url: "http://SHOP.test:8080/x", want: "shop"},
		{name: "the longer path on the same host wins", url: "http://shop.test/checkout/pay", want: "checkout"},
		{name: "a path has an implied wildcard at its end, as Cloudflare's", url: "http://shop.test/checkout-help", want: "checkout"},
		{name: "a named host wins over any host even with a longer path", url: "http://shop.test/deep/path/x", want: "shop"},
		{name: "another host reaches the any-host room", url: "http://elsewhere.test/deep/path/x", want: "anyhost"},
		{name: "an additional route on another host reaches the same room", url: "http://other.test/promo/1", want: "promo"},
		{name: "an additional route without a host uses the room's host", url: "http://shop.test/deals", want: "promo"},
		{name: "an additional route of the any-host room", url: "http://promo.test/sale/x", want: "anyhost"},
		{name: "an unrouted request gets a 404 page", url: "http://elsewhere.test/", want: ""},
		{name: "an unrouted request goes to the default origin with unrouted: pass", url: "http://elsewhere.test/", fallback: true, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := edgetest.NewOrigin(t)
			cfg := nodeConfig("node-a", keyFile(t, t.TempDir()), "", rooms...)
			for i := range cfg.Rooms {
				cfg.Rooms[i].Origin = o.URL
			}
			// A default origin alone does not expose it: unrouted requests
			// are refused unless the operator says pass.
			cfg.Origin = o.URL
			if tt.fallback {
				cfg.Unrouted = config.UnroutedPass
			}
			srv := startServer(t, cfg, newFakeClock(5))
			resp := newVisitor().Get(srv, tt.url)
			var got []string
			for _, c := range resp.Cookies() {
				got = append(got, strings.TrimPrefix(c.Name, "__waitroom_"))
			}
			switch {
			case tt.want != "":
				if len(got) != 1 || got[0] != tt.want || resp.Header.Get("X-Origin") != "yes" {
					t.Errorf("%s reached rooms %v (status %d), want %s", tt.url, got, resp.StatusCode, tt.want)
				}
			case tt.fallback:
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Origin") != "yes" || len(got) != 0 {
					t.Errorf("unrouted with a default origin: %d, cookies %v; want proxied without a cookie", resp.StatusCode, got)
				}
			default:
				b := body(t, resp)
				if resp.StatusCode != http.StatusNotFound || !strings.Contains(b, "No waiting room here") || len(got) != 0 || o.Hits() != 0 {
					t.Errorf("unrouted: %d, cookies %v, origin hits %d:\n%s", resp.StatusCode, got, o.Hits(), b)
				}
			}
		})
	}
}

func TestRevokedCookieReplay(t *testing.T) {
	// A client that ignores the cleared cookie and sends its old one again
	// must not free a second slot, nor keep its session.
	setup := func(t *testing.T) (*fixture, *http.Cookie) {
		rc := room("shop", 3, 3)
		rc.EnabledOriginCommands = []string{"revoke"}
		f := newFixture(t, rc)
		a := admitFirst(t, f, "http://shop.test/")
		admitFirst(t, f, "http://shop.test/")
		admitFirst(t, f, "http://shop.test/")
		old := a.Cookies[cookieName]
		if resp := a.Get(f.Server, "http://shop.test/revoke-cf"); maxAge(t, setCookie(resp, cookieName)) != 0 {
			t.Fatal("the revoke did not clear the cookie")
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 2 {
			t.Fatalf("after one revoke: %d active, want 2", rs.EstimatedTotalActiveUsers)
		}
		return f, old
	}
	t.Run("replaying a revoked cookie to a revoking page frees no further slot", func(t *testing.T) {
		f, old := setup(t)
		for i := 0; i < 3; i++ {
			replay := newVisitor()
			replay.Cookies[cookieName] = old
			replay.Get(f.Server, "http://shop.test/revoke-cf")
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 2 {
			t.Errorf("after replaying the revoked cookie three times: %d active, want still 2", rs.EstimatedTotalActiveUsers)
		}
	})
	t.Run("a revoked cookie is a new visitor, not a session", func(t *testing.T) {
		f, old := setup(t)
		// A new minute brings the new-user budget back; a new visitor takes
		// the freed slot.
		f.Clock.Advance(time.Minute)
		newVisitor().Get(f.Server, "http://shop.test/")
		settle(t, f)
		replay := newVisitor()
		replay.Cookies[cookieName] = old
		resp := replay.Get(f.Server, "http://shop.test/page")
		if resp.Header.Get("X-Origin") == "yes" {
			t.Errorf("the revoked cookie still reaches the origin with the room full")
		}
		if resp.Header.Get("Refresh") == "" || setCookie(resp, cookieName) == "" {
			t.Errorf("the revoked cookie's visitor was not queued as a new one: %d", resp.StatusCode)
		}
		if n := metric(t, f.Admin, `waitroom_cookie_errors_total{reason="revoked",room="shop"}`); n != 1 {
			t.Errorf(`cookie_errors_total{reason="revoked"} = %v, want 1`, n)
		}
	})
}
