package edge_test

// The cookie check: a client that does not keep the queue's cookie is told
// that cookies are required on its first refresh, instead of being queued
// at the back again on every refresh for ever.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
)

const (
	cookiesRequiredMetric = `waitroom_requests_total{outcome="cookies_required",room="shop"}`
	cookiesRequiredTitle  = "<title>Cookies are required</title>"
)

// cookielessGet is one request from a client that keeps no cookies: it
// sends none, and forgets what the answer sets.
func cookielessGet(f *fixture, url string, hdr ...string) *http.Response {
	return newVisitor().Get(f.Server, url, hdr...)
}

// oneBehindOne is a full room with origin commands on: visitor a in, and
// visitor b queued behind it on its first request to /tickets?show=9, with
// b's answer and where its refresh goes (the marked address).
func oneBehindOne(t *testing.T) (f *fixture, a, b *visitor, first *http.Response, next string) {
	rc := fullRoom("shop")
	rc.EnabledOriginCommands = []string{"revoke"}
	f = newFixture(t, rc)
	a = admitFirst(t, f, "http://shop.test/")
	b = newVisitor()
	first, next = queueFirst(t, f, b, "http://shop.test/tickets?show=9")
	return f, a, b, first, next
}

// queueFirst is a new visitor's first request to url in a full room: it
// must get the queue page whose refresh names url with the cookie check. It
// returns the answer and where the refresh goes.
func queueFirst(t *testing.T, f *fixture, v *visitor, url string) (*http.Response, string) {
	t.Helper()
	resp := v.Get(f.Server, url)
	if resp.StatusCode != http.StatusOK || setCookie(resp, cookieName) == "" {
		t.Fatalf("first request to %s: status %d, Set-Cookie %q; want the queue page with a cookie", url, resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	next := refreshTarget(t, resp)
	if !strings.Contains(next, "__waitroom_cc=") {
		t.Fatalf("first queue page's Refresh %q names no cookie check", resp.Header.Get("Refresh"))
	}
	return resp, next
}

// wantCookiesRequired checks the default cookies-required page: no refresh
// of any kind, no cookie, a link back to clean, and nothing sent to the
// origin.
func wantCookiesRequired(t *testing.T, f *fixture, resp *http.Response, clean string, hitsBefore int) {
	t.Helper()
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200 (the room's queueing_status_code)", resp.StatusCode)
	}
	if !strings.Contains(page, cookiesRequiredTitle) || !strings.Contains(page, "Cookies are required to hold your place in this queue") {
		t.Errorf("not the cookies-required page:\n%s", page)
	}
	if strings.Contains(page, "You are in line") {
		t.Errorf("the cookies-required page also shows the queue:\n%s", page)
	}
	if r := resp.Header.Get("Refresh"); r != "" {
		t.Errorf("Refresh %q: the page must not refresh (each refresh would be a new visitor)", r)
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Errorf("the page has a meta refresh:\n%s", page)
	}
	if want := fmt.Sprintf(`href="%s"`, clean); !strings.Contains(page, want) {
		t.Errorf("no try-again link %s:\n%s", want, page)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("Set-Cookie %q: the answer holds no place, so it sets no cookie", sc)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if f.Origin.Hits() != hitsBefore {
		t.Errorf("the origin got %d requests, want none", f.Origin.Hits()-hitsBefore)
	}
}

func TestCookieCheckFindsClientsThatKeepNoCookie(t *testing.T) {
	t.Run("a client without a cookie jar that follows Refresh is told cookies are required on its second request, not queued again", func(t *testing.T) {
		f := newFixture(t, fullRoom("shop"))
		admitFirst(t, f, "http://shop.test/")
		hits := f.Origin.Hits()

		first := cookielessGet(f, "http://shop.test/tickets?show=9&seat=a%20b")
		secs, err := refreshSeconds(first)
		if err != nil {
			t.Fatal(err)
		}
		next := refreshTarget(t, first)
		want := fmt.Sprintf("http://shop.test/tickets?show=9&seat=a%%20b&__waitroom_cc=%d", f.Clock.Now().Unix())
		if next != want {
			t.Fatalf("first page refreshes to %q, want %q", next, want)
		}
		if page := body(t, first); !strings.Contains(page, fmt.Sprintf(`content="%d; url=/tickets?show=9&amp;seat=a%%20b&amp;__waitroom_cc=`, secs)) {
			t.Errorf("the meta refresh does not name the Refresh header's address:\n%s", page)
		}
		queued := roomStatus(t, f.Admin, "shop").EstimatedQueuedUsers

		f.Clock.Advance(time.Duration(secs) * time.Second)
		second := cookielessGet(f, next)
		wantCookiesRequired(t, f, second, "/tickets?show=9&amp;seat=a%20b", hits)
		if n := metric(t, f.Admin, cookiesRequiredMetric); n != 1 {
			t.Errorf("cookies_required counter %v, want 1", n)
		}
		if got := roomStatus(t, f.Admin, "shop").EstimatedQueuedUsers; got != queued {
			t.Errorf("queued users %d after the cookies-required answer, want still %d: it holds no place", got, queued)
		}

		// Trying again (after allowing cookies) is an ordinary new visit.
		again := newVisitor()
		queueFirst(t, f, again, "http://shop.test/tickets?show=9&seat=a%20b")
	})

	t.Run("a client with a cookie jar never sees the message, and the origin never sees the check", func(t *testing.T) {
		f, a, b, first, next := oneBehindOne(t)
		secs, _ := refreshSeconds(first)
		f.Clock.Advance(time.Duration(secs) * time.Second)
		// Back on the marked address with its cookie, still full: an
		// ordinary counted check-in whose page goes back to the clean
		// address.
		resp := b.Get(f.Server, next)
		if page := body(t, resp); strings.Contains(page, cookiesRequiredTitle) || !strings.Contains(page, "You are in line") {
			t.Fatalf("a visitor that kept its cookie got:\n%s", page)
		}
		if setCookie(resp, cookieName) == "" {
			t.Error("the check-in on the marked address was not counted (no renewed cookie)")
		}
		back, ok := crowd.ParseRefresh(resp.Header.Get("Refresh"))
		if !ok || back.URL != "/tickets?show=9" {
			t.Errorf("Refresh %q after the check passed, want the clean address /tickets?show=9", resp.Header.Get("Refresh"))
		}
		next = refreshTarget(t, resp)

		// A slot opens (and the next minute brings a new user's turn);
		// the next refresh, on the clean address, takes the visitor in.
		if resp := a.Get(f.Server, "http://shop.test/revoke-cf"); resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke A: %d", resp.StatusCode)
		}
		f.Clock.Advance(time.Minute)
		if resp := b.Get(f.Server, next); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("B's refresh after a slot opened: %d, want the origin", resp.StatusCode)
		}
		if n := metric(t, f.Admin, cookiesRequiredMetric); n != 0 {
			t.Errorf("cookies_required counter %v, want 0", n)
		}
		for _, u := range f.Origin.URIs() {
			if strings.Contains(u, "__waitroom_cc") {
				t.Errorf("the origin saw %q", u)
			}
		}
	})

	t.Run("a visitor let in on the marked address is sent to the clean one with its cookie, and lands there", func(t *testing.T) {
		f, a, b, first, next := oneBehindOne(t)
		// A slot opens and the next minute brings a new user's turn
		// before the refresh comes; the marker is still current.
		a.Get(f.Server, "http://shop.test/revoke-cf")
		if secs, _ := refreshSeconds(first); secs > 60 {
			t.Fatalf("refresh %ds", secs)
		}
		f.Clock.Advance(time.Minute)
		hits := f.Origin.Hits()

		resp := b.Get(f.Server, next)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/tickets?show=9" {
			t.Fatalf("admission on the marked address: %d, Location %q; want 303 to /tickets?show=9", resp.StatusCode, resp.Header.Get("Location"))
		}
		if f.Origin.Hits() != hits {
			t.Error("the marked request reached the origin")
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 1 || rs.EstimatedQueuedUsers != 0 {
			t.Errorf("after the admission: %d active, %d queued; want 1 and 0", rs.EstimatedTotalActiveUsers, rs.EstimatedQueuedUsers)
		}
		resp = b.Get(f.Server, "http://shop.test/tickets?show=9")
		if resp.Header.Get("X-Origin") != "yes" || body(t, resp) != "origin: /tickets" {
			t.Fatalf("following the redirect: %d, want the origin's page", resp.StatusCode)
		}
		if uris := f.Origin.URIs(); uris[len(uris)-1] != "/tickets?show=9" {
			t.Errorf("the origin saw %q, want /tickets?show=9", uris[len(uris)-1])
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.NewUsersThisMinute != 1 {
			t.Errorf("new users this minute %d, want 1: the redirect's follow-up is the same session", rs.NewUsersThisMinute)
		}
	})

	noValidCookie := []struct {
		name   string
		cookie func(t *testing.T, f *fixture, first *http.Response) *http.Cookie
	}{
		{name: "no cookie at all", cookie: func(*testing.T, *fixture, *http.Response) *http.Cookie { return nil }},
		{name: "a tampered cookie", cookie: func(t *testing.T, f *fixture, first *http.Response) *http.Cookie {
			c := responseCookie(t, first, cookieName)
			b := []byte(c.Value)
			b[len(b)/2] ^= 1 // still base64, no longer authentic
			c.Value = string(b)
			return c
		}},
		{name: "another room's cookie under this room's name", cookie: func(t *testing.T, f *fixture, first *http.Response) *http.Cookie {
			resp := newVisitor().Get(f.Server, "http://shop.test/other/")
			c := responseCookie(t, resp, cookieName+"_other")
			return &http.Cookie{Name: cookieName, Value: c.Value}
		}},
	}
	for _, tt := range noValidCookie {
		t.Run("the marked address with "+tt.name+" gets the cookies-required page", func(t *testing.T) {
			other := room("other", 1, 1)
			other.Path, other.CookieSuffix = "/other", "other"
			f := newFixture(t, fullRoom("shop"), other)
			admitFirst(t, f, "http://shop.test/")
			admitFirst(t, f, "http://shop.test/other/")
			first := newVisitor().Get(f.Server, "http://shop.test/")
			next := refreshTarget(t, first)
			secs, _ := refreshSeconds(first)
			f.Clock.Advance(time.Duration(secs) * time.Second)
			hits := f.Origin.Hits()

			v := newVisitor()
			if c := tt.cookie(t, f, first); c != nil {
				v.Cookies[c.Name] = c
			}
			wantCookiesRequired(t, f, v.Get(f.Server, next), "/", hits)
			if n := metric(t, f.Admin, cookiesRequiredMetric); n != 1 {
				t.Errorf("cookies_required counter %v, want 1", n)
			}
		})
	}

	ignored := []struct {
		name   string
		marker func(now int64) string
	}{
		{name: "a marker older than the queued cookie's life (an old bookmark)", marker: func(now int64) string { return fmt.Sprint(now - 301) }},
		{name: "a marker from well in the future", marker: func(now int64) string { return fmt.Sprint(now + 3600) }},
		{name: "a marker that is not a time", marker: func(int64) string { return "1" }},
		{name: "a marker with no value", marker: func(int64) string { return "" }},
	}
	for _, tt := range ignored {
		t.Run(tt.name+" makes a new visitor like any other, and the origin never sees it", func(t *testing.T) {
			f := newFixture(t, room("shop", 10, 10))
			now := f.Clock.Now().Unix()
			url := "http://shop.test/tickets?__waitroom_cc=" + tt.marker(now) + "&show=9"
			resp := newVisitor().Get(f.Server, url)
			if resp.Header.Get("X-Origin") != "yes" || setCookie(resp, cookieName) == "" {
				t.Fatalf("status %d: want admitted to the origin with a cookie", resp.StatusCode)
			}
			if uris := f.Origin.URIs(); uris[len(uris)-1] != "/tickets?show=9" {
				t.Errorf("the origin saw %q, want /tickets?show=9", uris[len(uris)-1])
			}
			if n := metric(t, f.Admin, cookiesRequiredMetric); n != 0 {
				t.Errorf("cookies_required counter %v, want 0", n)
			}
		})
	}

	t.Run("a marked request that bypasses the room reaches the origin without the marker", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.Bypass = []config.BypassRule{{PathSuffix: ".css"}}
		f := newFixture(t, rc)
		admitFirst(t, f, "http://shop.test/")
		url := fmt.Sprintf("http://shop.test/site.css?v=2&__waitroom_cc=%d", f.Clock.Now().Unix())
		if resp := cookielessGet(f, url); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("status %d, want the origin", resp.StatusCode)
		}
		if uris := f.Origin.URIs(); uris[len(uris)-1] != "/site.css?v=2" {
			t.Errorf("the origin saw %q, want /site.css?v=2", uris[len(uris)-1])
		}
	})

	t.Run("an admitted visitor's form posted to the marked address reaches the origin without the marker, not redirected", func(t *testing.T) {
		f := newFixture(t, room("shop", 10, 10))
		v := admitFirst(t, f, "http://shop.test/")
		url := fmt.Sprintf("http://shop.test/cart?__waitroom_cc=%d", f.Clock.Now().Unix())
		resp := v.Do(f.Server, v.Req(http.MethodPost, url))
		if resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("status %d, want the origin", resp.StatusCode)
		}
		if uris := f.Origin.URIs(); uris[len(uris)-1] != "/cart" {
			t.Errorf("the origin saw %q, want /cart", uris[len(uris)-1])
		}
	})

	t.Run("each new visitor's page names its own address, though pages are cached", func(t *testing.T) {
		f := newFixture(t, fullRoom("shop"))
		admitFirst(t, f, "http://shop.test/")
		for _, path := range []string{"/a", "/b?x=1", "/a"} {
			resp := cookielessGet(f, "http://shop.test"+path)
			h := resp.Header.Get("Refresh")
			rf, _ := crowd.ParseRefresh(h)
			next := rf.URL
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			if want := fmt.Sprintf("%s%s__waitroom_cc=%d", path, sep, f.Clock.Now().Unix()); next != want {
				t.Errorf("%s: Refresh url %q, want %q", path, next, want)
			}
			if page := body(t, resp); !strings.Contains(page, `content="`+strings.ReplaceAll(h, "&", "&amp;")+`"`) {
				t.Errorf("%s: the meta refresh does not match the Refresh header %q", path, h)
			}
			f.Clock.Advance(time.Second)
		}
	})
}

func TestCookieCheckForJSONClients(t *testing.T) {
	rc := fullRoom("app")
	rc.JSONResponseEnabled = true
	rc.QueueingStatusCode = 202
	f := newFixture(t, rc)
	admitFirst(t, f, "http://app.test/")

	t.Run("an app's first answer polls its own address, with cookiesRequired false", func(t *testing.T) {
		resp := newVisitor().Get(f.Server, "http://app.test/api", "Accept", "application/json")
		if rf, ok := crowd.ParseRefresh(resp.Header.Get("Refresh")); !ok || rf.URL != "" {
			t.Errorf("Refresh %q, want the plain form: an app polls the address it chose", resp.Header.Get("Refresh"))
		}
		if obj := queueJSON(t, resp); obj["cookiesRequired"] != false || obj["inWaitingRoom"] != true {
			t.Errorf("cookiesRequired %v, inWaitingRoom %v; want false and true", obj["cookiesRequired"], obj["inWaitingRoom"])
		}
	})

	t.Run("an app back on the marked address without its cookie gets cookiesRequired true and no Refresh", func(t *testing.T) {
		url := fmt.Sprintf("http://app.test/api?__waitroom_cc=%d", f.Clock.Now().Unix())
		resp := cookielessGet(f, url, "Accept", "application/json")
		if resp.StatusCode != 202 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Content-Type %q; want 202 (queueing_status_code) and JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if r := resp.Header.Get("Refresh"); r != "" {
			t.Errorf("Refresh %q, want none", r)
		}
		if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("Set-Cookie %q, want none", sc)
		}
		obj := queueJSON(t, resp)
		if obj["cookiesRequired"] != true {
			t.Errorf("cookiesRequired %v, want true: %v", obj["cookiesRequired"], obj)
		}
		if _, ok := obj["refreshURL"]; ok {
			t.Errorf("refreshURL is a page variable, not a JSON field: %v", obj)
		}
	})
}

func TestCookieCheckInCustomPages(t *testing.T) {
	const aware = `{{#cookiesRequired}}NO COOKIES, try {{refreshURL}}{{/cookiesRequired}}{{^cookiesRequired}}QUEUE next={{refreshURL}} in {{refreshIntervalSeconds}}{{/cookiesRequired}}`
	tests := []struct {
		name        string
		page        string
		wantFirst   string // the first page holds this (%d: the second it was served)
		wantNoCooky string // the cookies-required page holds this
	}{
		{
			name:        "a page that uses cookiesRequired shows its own message, and refreshURL names the refresh's address",
			page:        aware,
			wantFirst:   "QUEUE next=/tickets?__waitroom_cc=%d in ",
			wantNoCooky: "NO COOKIES, try /tickets",
		},
		{
			name:        "a page that does not know cookiesRequired (a Cloudflare template) is replaced by the built-in message",
			page:        `<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}">{{#waitTimeKnown}}{{waitTime}} mins{{/waitTimeKnown}}`,
			wantFirst:   `<meta http-equiv="refresh" content="`,
			wantNoCooky: cookiesRequiredTitle,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := fullRoom("shop")
			rc.CustomPageHTML = tt.page
			f := newFixture(t, rc)
			admitFirst(t, f, "http://shop.test/")
			first := cookielessGet(f, "http://shop.test/tickets")
			want := tt.wantFirst
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, f.Clock.Now().Unix())
			}
			if page := body(t, first); !strings.Contains(page, want) {
				t.Errorf("first page lacks %q:\n%s", want, page)
			}
			next := refreshTarget(t, first)
			f.Clock.Advance(20 * time.Second)
			resp := cookielessGet(f, next)
			if page := body(t, resp); !strings.Contains(page, tt.wantNoCooky) {
				t.Errorf("cookies-required answer lacks %q:\n%s", tt.wantNoCooky, page)
			}
			if r := resp.Header.Get("Refresh"); r != "" {
				t.Errorf("Refresh %q on the cookies-required answer, want none", r)
			}
		})
	}
}

// responseCookie returns the cookie name that resp sets.
func responseCookie(t *testing.T, resp *http.Response, name string) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s cookie in %q", name, resp.Header.Values("Set-Cookie"))
	return nil
}
