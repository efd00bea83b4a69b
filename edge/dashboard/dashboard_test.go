package dashboard_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/dashboard"
)

func TestHistoryKeepsTheWindowInStepsOldestFirst(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sample := func(at time.Duration) dashboard.Sample {
		return dashboard.Sample{Time: t0.Add(at), Rooms: map[string]dashboard.RoomSample{"shop": {Active: int64(at / time.Second)}}}
	}
	t.Run("a sample is due at first and then once per step", func(t *testing.T) {
		var h dashboard.History
		if !h.Due(t0) {
			t.Fatal("an empty history is not due")
		}
		h.Add(sample(0))
		if h.Due(t0.Add(dashboard.Step - time.Millisecond)) {
			t.Error("due before a step has passed")
		}
		if !h.Due(t0.Add(dashboard.Step)) {
			t.Error("not due a step later")
		}
	})
	t.Run("samples older than the window are forgotten", func(t *testing.T) {
		var h dashboard.History
		for at := time.Duration(0); at <= dashboard.Window+time.Minute; at += dashboard.Step {
			h.Add(sample(at))
		}
		got := h.Samples()
		first, last := got[0].Time, got[len(got)-1].Time
		if last.Sub(first) > dashboard.Window || last.Sub(first) < dashboard.Window-dashboard.Step {
			t.Errorf("history spans %v, want the window %v", last.Sub(first), dashboard.Window)
		}
		for i := 1; i < len(got); i++ {
			if !got[i].Time.After(got[i-1].Time) {
				t.Fatalf("sample %d not after sample %d", i, i-1)
			}
		}
	})
	t.Run("a clock that goes back starts the history afresh", func(t *testing.T) {
		var h dashboard.History
		h.Add(sample(time.Minute))
		h.Add(sample(0))
		if got := h.Samples(); len(got) != 1 || !got[0].Time.Equal(t0) {
			t.Errorf("history %v, want only the newest sample", got)
		}
	})
}

func TestConsoleServesItsPageAndStreamsFrames(t *testing.T) {
	n := 0
	d := dashboard.New(func() any { n++; return map[string]int{"frame": n} }, time.Hour)
	mux := http.NewServeMux()
	d.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, c := range []struct{ path, contentType string }{
		{"/dashboard", "text/html"},
		{"/dashboard/console.js", "text/javascript"},
		{"/dashboard/console.css", "text/css"},
	} {
		t.Run(c.path+" is served as "+c.contentType, func(t *testing.T) {
			resp, err := http.Get(srv.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.contentType) {
				t.Errorf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if !dashboard.IsPage(c.path) {
				t.Errorf("IsPage(%q) = false: the gate would ask a browser for the token before the page can", c.path)
			}
		})
	}
	t.Run("the event stream is no page", func(t *testing.T) {
		if dashboard.IsPage(dashboard.EventsPath) {
			t.Error("IsPage(EventsPath): the figures would pass the gate without the token")
		}
	})
	t.Run("the event stream sends a frame at once and ends at shutdown", func(t *testing.T) {
		resp, err := http.Get(srv.URL + dashboard.EventsPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		rd := bufio.NewReader(resp.Body)
		ev, _ := rd.ReadString('\n')
		data, _ := rd.ReadString('\n')
		if ev != "event: frame\n" || data != "data: {\"frame\":1}\n" {
			t.Errorf("first event %q %q", ev, data)
		}
		d.Shutdown()
		if _, err := rd.ReadString(0); err == nil {
			t.Error("the stream did not end at shutdown")
		}
	})
}
