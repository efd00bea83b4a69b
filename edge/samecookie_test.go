package edge_test

import (
	"net/http"
	"testing"
	"time"
)

// TestAdmittedCookieOnlyWhenChanged: an admitted visitor's answer carries
// a new cookie when the counter rule changed its token (a second later:
// a renewed expiry and last check-in), and none when the token came back
// exactly as it was left (a page's assets within the same second): the
// visitor already holds it.
func TestAdmittedCookieOnlyWhenChanged(t *testing.T) {
	f := newFixture(t, room("shop", 2, 2))
	v := admitFirst(t, f, "http://shop.test/")
	steps := []struct {
		name    string
		advance time.Duration
		want    bool
	}{
		{"a request a second later renews the session and gets the new cookie", time.Second, true},
		{"a request within the same second gets no Set-Cookie", 0, false},
		{"another one within that second neither", 0, false},
		{"the next second's request gets the renewed cookie again", time.Second, true},
	}
	for _, s := range steps {
		f.Clock.Advance(s.advance)
		resp := v.Get(f.Server, "http://shop.test/asset")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("%s: status %d, want the origin's 200", s.name, resp.StatusCode)
		}
		if got := setCookie(resp, cookieName) != ""; got != s.want {
			t.Errorf("%s: Set-Cookie sent %v, want %v", s.name, got, s.want)
		}
	}
}
