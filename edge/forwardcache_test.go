package edge_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestNginxKeepsASessionsAnswerWithinItsBounds runs the shipped nginx file,
// whose auth location keeps the node's answer for a visitor within its
// session: the visitor's requests with one cookie reach the node about once
// per edge.AdmittedCacheLife, the visitor still counts once, and once the
// site revokes the session the visitor is refused within
// edge.AdmittedCacheLife.
func TestNginxKeepsASessionsAnswerWithinItsBounds(t *testing.T) {
	o := edgetest.NewOrigin(t)
	rc := room("shop", 1, 1)
	rc.Origin = ""
	rc.EnabledOriginCommands = []string{"revoke"}
	c := clusterOf(t, clusterOpts{Rooms: []config.Room{rc}, Serve: true, Origin: o})
	c.Edit = func(_ *clusterNode, cfg *config.Config) {
		cfg.Origin = ""
		cfg.ForwardAuth.Listen = "127.0.0.1:0"
	}
	n := c.Add("pop-a", 0)
	auth := n.Server.ForwardAuthAddr()
	base := startNginx(t, []string{auth}, strings.TrimPrefix(o.URL, "http://"))

	ctx := context.Background()
	v := crowd.NewVisitor(http.DefaultTransport, nil, 10*time.Second)
	if a := v.Get(ctx, base+"/"); a.Outcome != crowd.Admitted {
		t.Fatalf("first visitor: %s (%d), want admitted", a.Outcome, a.Status)
	}
	cookie := "__waitroom=" + v.Cookie(base, "__waitroom")
	// get sends the visitor's cookie as it was when admitted, as a page's
	// assets requested at once all carry it.
	get := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	sessions := func() float64 {
		return metric(t, n.Admin, `waitroom_requests_total{outcome="session",room="shop"}`)
	}

	t.Run("a page's requests with one cookie are mostly answered by nginx", func(t *testing.T) {
		before := sessions()
		const requests = 20
		for i := 0; i < requests; i++ {
			resp := get()
			if o, _ := crowd.Classify(resp); o != crowd.Admitted {
				t.Fatalf("request %d: %s (%d), want admitted", i, o, resp.StatusCode)
			}
			if resp.Header.Get("Set-Cookie") == "" {
				t.Fatalf("request %d: no renewed cookie for the visitor", i)
			}
		}
		if asked := sessions() - before; asked >= requests/2 {
			t.Errorf("the node was asked %v times for %d requests with one cookie: nginx kept nothing", asked, requests)
		}
	})
	t.Run("one visitor still counts once", func(t *testing.T) {
		if got := roomStatus(t, n.Admin, "shop").EstimatedTotalActiveUsers; got != 1 {
			t.Errorf("%d active users, want 1", got)
		}
	})
	t.Run("a revoked visitor is refused within the kept answer's life", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+auth+"/revoke", nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		revoked := time.Now()
		// The room's one slot of the minute is taken: the revoked cookie
		// comes back as a new visitor and is queued.
		var last string
		testkit.Eventually(t, testkit.Wait{What: "nginx refusing the revoked cookie", Timeout: edge.AdmittedCacheLife + 3*time.Second, Seen: func() string { return last }}, func() bool {
			resp := get()
			o, _ := crowd.Classify(resp)
			last = fmt.Sprintf("%s (%d) %s after the revocation", o, resp.StatusCode, time.Since(revoked).Round(time.Millisecond))
			return o == crowd.Queued
		})
		t.Log(last)
	})
}

// TestForwardAuthMarksOnlyASessionsAnswerKeepable holds which answers a
// proxy may keep (Cache-Control: max-age, Vary: Cookie): a visitor's within
// its session, and nothing else, above all not a new admission, which a
// proxy would otherwise give the next cookieless visitor.
func TestForwardAuthMarksOnlyASessionsAnswerKeepable(t *testing.T) {
	keepable := fmt.Sprintf("max-age=%d", int(edge.AdmittedCacheLife/time.Second))
	tests := []struct {
		name string
		// visit brings a visitor to the answer that is looked at.
		visit func(f *fixture, send sendFn, v *visitor) *http.Response
		want  string
	}{
		{"a new visitor's admission is asked for every time", func(_ *fixture, send sendFn, v *visitor) *http.Response {
			return send(v, "http://shop.test/")
		}, "no-store"},
		{"a visitor within its session may be kept by its cookie", func(_ *fixture, send sendFn, v *visitor) *http.Response {
			send(v, "http://shop.test/")
			return send(v, "http://shop.test/")
		}, keepable},
		{"a visitor within its session a second later may be kept too", func(f *fixture, send sendFn, v *visitor) *http.Response {
			send(v, "http://shop.test/")
			f.Clock.Advance(time.Second)
			return send(v, "http://shop.test/")
		}, keepable},
		{"a bypassed request is asked for every time", func(_ *fixture, send sendFn, v *visitor) *http.Response {
			send(v, "http://shop.test/")
			return send(v, "http://shop.test/static/app.css")
		}, "no-store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := room("shop", 10, 10)
			rc.Bypass = []config.BypassRule{{PathPrefix: "/static/"}}
			f := newFixtureWith(t, forwardOn, rc)
			resp := tt.visit(f, askedVia(f.Server.ForwardAuthHandler(), "/nginx/auth"), newVisitor())
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			if got := resp.Header.Get("Cache-Control"); got != tt.want {
				t.Errorf("Cache-Control %q, want %q", got, tt.want)
			}
			if keep := tt.want == keepable; keep != (resp.Header.Get("Vary") == "Cookie") {
				t.Errorf("Vary %q with Cache-Control %q", resp.Header.Get("Vary"), tt.want)
			}
		})
	}
	t.Run("a session about to end is asked for every time", func(t *testing.T) {
		rc := room("shop", 10, 10)
		rc.SessionDuration = 1
		rc.DisableSessionRenewal = true
		f := newFixtureWith(t, forwardOn, rc)
		send, v := askedVia(f.Server.ForwardAuthHandler(), "/nginx/auth"), newVisitor()
		send(v, "http://shop.test/")
		f.Clock.Advance(time.Minute - edge.AdmittedCacheLife + time.Second)
		resp := send(v, "http://shop.test/")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("status %d, Cache-Control %q; want 200, no-store", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	})
}
