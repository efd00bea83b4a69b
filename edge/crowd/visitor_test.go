package crowd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// queueOnce is a waiting room in miniature: a new visitor gets a cookie and
// a queue page that refreshes at once to a marked address; coming back there
// with the cookie, it is sent to the clean address and let in.
func queueOnce(t *testing.T, origin *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("room")
		switch {
		case err != nil:
			http.SetCookie(w, &http.Cookie{Name: "room", Value: "queued", Path: "/"})
			w.Header().Set("Refresh", "0; url=/page?cc=1")
			w.WriteHeader(http.StatusOK)
		case r.URL.Query().Get("cc") == "1":
			http.SetCookie(w, &http.Cookie{Name: "room", Value: "in", Path: "/"})
			http.Redirect(w, r, "/page", http.StatusSeeOther)
		case c.Value == "in":
			if r.Header.Get("X-Who") != "v1" {
				t.Errorf("the visitor's header did not come along: %q", r.Header.Get("X-Who"))
			}
			origin.Add(1)
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
}

func TestVisitorFollowsTheRefreshWithItsCookies(t *testing.T) {
	var origin atomic.Int32
	srv := httptest.NewServer(queueOnce(t, &origin))
	defer srv.Close()
	v := NewVisitor(srv.Client().Transport, http.Header{"X-Who": {"v1"}}, 0)
	var outcomes []Outcome
	a, err := v.Follow(context.Background(), srv.URL+"/page", 0, func(a Answer) { outcomes = append(outcomes, a.Outcome) })
	if err != nil {
		t.Fatal(err)
	}
	if a.Outcome != Admitted || a.URL.Path != "/page" || a.URL.RawQuery != "" {
		t.Fatalf("let in at %v with %v; want admitted at the clean /page", a.URL, a.Outcome)
	}
	if len(outcomes) != 2 || outcomes[0] != Queued || outcomes[1] != Admitted {
		t.Fatalf("answers %v; want queued then admitted", outcomes)
	}
	if v.Waiting() {
		t.Fatal("a visitor let in still waits")
	}
	if got := v.Get(context.Background(), srv.URL+"/page"); got.Outcome != Admitted {
		t.Fatalf("the next page: %v; want admitted on the kept cookie", got.Outcome)
	}
	if origin.Load() != 2 {
		t.Fatalf("the origin saw %d requests; want 2", origin.Load())
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header http.Header
		want   Outcome
	}{
		{"a page with a refresh is the queue", 200, http.Header{"Refresh": {"20"}}, Queued},
		{"a 429 with a refresh is the queue too", 429, http.Header{"Refresh": {"20"}}, Queued},
		{"a page without one is the origin's", 200, nil, Admitted},
		{"a redirect is the origin's", 302, nil, Admitted},
		{"a 429 without a refresh is a rejection", 429, nil, Rejected},
		{"a no-store 503 is the reject page", 503, http.Header{"Cache-Control": {"no-store"}}, Rejected},
		{"a 502 is an error", 502, nil, Failed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := Classify(&http.Response{StatusCode: c.status, Header: c.header})
			if got != c.want {
				t.Fatalf("Classify = %v; want %v", got, c.want)
			}
		})
	}
}

func TestVisitorReadsWhatTheQueueAnswerSaid(t *testing.T) {
	const room = `{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":9,"waitTime25Percentile":9,"waitTime50Percentile":9,"waitTime75Percentile":9,"position":31,"positionKnown":true}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Refresh", "20")
		if r.Header.Get("Accept") == AcceptJSON {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Write([]byte(room + "\n"))
			return
		}
		// The page says the same, for people; it is not read.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<p>About 31 people ahead of you</p>"))
	}))
	defer srv.Close()
	cases := []struct {
		name   string
		header http.Header
		want   *Wait
	}{
		{"an app that asks for JSON gets its wait read", http.Header{"Accept": {AcceptJSON}},
			&Wait{WaitTimeKnown: true, WaitTime: 9, WaitTime25: 9, WaitTime50: 9, WaitTime75: 9, PositionKnown: true, Position: 31}},
		{"a browser's page is left unread", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewVisitor(srv.Client().Transport, c.header, 0).Get(context.Background(), srv.URL)
			if a.Outcome != Queued {
				t.Fatalf("outcome %v; want queued", a.Outcome)
			}
			if (a.Wait == nil) != (c.want == nil) || a.Wait != nil && *a.Wait != *c.want {
				t.Fatalf("Wait = %+v; want %+v", a.Wait, c.want)
			}
		})
	}
}
