package loadtest

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

func TestHistogramBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		v := r.Uint64() >> r.IntN(64)
		i := bucketOf(v)
		lo, hi := bucketBounds(i)
		if v < lo || v > hi {
			t.Fatalf("%d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if v >= subCount && float64(hi-lo+1)/float64(lo) > 1.0/halfCount+1e-12 {
			t.Fatalf("bucket %d = [%d, %d] wider than 1/%d", i, lo, hi, halfCount)
		}
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucket %d out of range", i)
		}
	}
	for i := 1; i < numBuckets; i++ {
		_, prevHi := bucketBounds(i - 1)
		lo, _ := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("gap between buckets %d and %d: %d, %d", i-1, i, prevHi, lo)
		}
	}
	if _, hi := bucketBounds(numBuckets - 1); hi != math.MaxUint64 {
		t.Fatalf("last bucket ends at %d", hi)
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var h Histogram
	// 1..10000 µs, shuffled: the p-th percentile is p*100 µs.
	vals := make([]time.Duration, 10_000)
	for i := range vals {
		vals[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for _, v := range vals {
		h.Record(v)
	}
	if h.Count() != 10_000 || h.Min() != time.Microsecond || h.Max() != 10*time.Millisecond {
		t.Fatalf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	if m := h.Mean(); m != 5000500*time.Nanosecond {
		t.Fatalf("mean %v", m)
	}
	for _, q := range []float64{1, 10, 50, 90, 99, 99.9} {
		want := time.Duration(q*100) * time.Microsecond
		got := h.Percentile(q)
		if got < want || float64(got-want) > float64(want)/halfCount {
			t.Errorf("p%g = %v, want %v (+1/%d)", q, got, want, halfCount)
		}
	}
	if h.Percentile(0) != time.Microsecond || h.Percentile(100) != 10*time.Millisecond {
		t.Errorf("p0 %v p100 %v", h.Percentile(0), h.Percentile(100))
	}

	// Merging two halves gives the same figures as one histogram.
	var a, b Histogram
	for i, v := range vals {
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	if a.Summary() != h.Summary() {
		t.Errorf("merged %+v, want %+v", a.Summary(), h.Summary())
	}

	var empty Histogram
	if empty.Percentile(99) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram")
	}
	var one Histogram
	one.Record(-time.Second) // clamped to zero
	one.Record(3 * time.Nanosecond)
	if one.Min() != 0 || one.Percentile(100) != 3 || one.Percentile(50) != 0 {
		t.Errorf("small values: %+v", one.Summary())
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		status  int
		header  map[string]string
		out     crowd.Outcome
		refresh time.Duration
		kind    string
	}{
		{200, nil, crowd.Admitted, 0, ""},
		{204, nil, crowd.Admitted, 0, ""},
		{302, map[string]string{"Location": "/x"}, crowd.Admitted, 0, ""},
		{200, map[string]string{"Refresh": "20"}, crowd.Queued, 20 * time.Second, ""},
		{202, map[string]string{"Refresh": "17; url=/shop"}, crowd.Queued, 17 * time.Second, ""},
		{429, map[string]string{"Refresh": "2.7"}, crowd.Queued, 2 * time.Second, ""}, // a browser ignores the fraction
		{200, map[string]string{"Refresh": "soon"}, crowd.Queued, 0, ""},
		{429, nil, crowd.Rejected, 0, ""},
		{503, map[string]string{"Cache-Control": "no-store"}, crowd.Rejected, 0, ""},
		{503, nil, crowd.Failed, 0, "http_503"},
		{502, nil, crowd.Failed, 0, "http_502"},
		{504, nil, crowd.Failed, 0, "http_504"},
		{404, nil, crowd.Failed, 0, "http_404"},
	}
	for _, c := range cases {
		resp := &http.Response{StatusCode: c.status, Header: http.Header{}}
		for k, v := range c.header {
			resp.Header.Set(k, v)
		}
		out, refresh, kind := Classify(resp)
		if out != c.out || refresh != c.refresh || kind != c.kind {
			t.Errorf("%d %v: got %v %v %q, want %v %v %q", c.status, c.header, out, refresh, kind, c.out, c.refresh, c.kind)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	// A port nobody listens on: refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	r, err := Run(context.Background(), Options{Targets: []string{closed}, Concurrency: 2, Requests: 4, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 4 || r.ErrorKind["refused"] != 4 || r.Throughput != 0 {
		t.Errorf("refused: %d errors %v", r.Errors, r.ErrorKind)
	}

	// A server slower than the timeout: timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer slow.Close()
	r, err = Run(context.Background(), Options{Targets: []string{slow.URL}, Concurrency: 2, Requests: 2, Timeout: 50 * time.Millisecond, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.ErrorKind["timeout"] != 2 {
		t.Errorf("timeout: %v", r.ErrorKind)
	}

	// 5xx answers are errors by status.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }))
	defer bad.Close()
	r, err = Run(context.Background(), Options{Targets: []string{bad.URL}, Concurrency: 1, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.ErrorKind["http_502"] != 3 || r.Status[502] != 3 {
		t.Errorf("502: %v %v", r.ErrorKind, r.Status)
	}

	if _, err := Run(context.Background(), Options{Targets: []string{"ftp://x/"}}); err == nil {
		t.Error("an ftp target was accepted")
	}
	if _, err := Run(context.Background(), Options{}); err == nil {
		t.Error("no target was accepted")
	}
}

// room is a toy waiting room: a visitor without a cookie gets one and is
// queued with the given refresh; it is admitted on its admitAfter-th
// check-in. It records when each visitor came.
type room struct {
	refresh    string
	admitAfter int // 0: never

	mu     sync.Mutex
	next   int
	visits map[int][]time.Time
	bare   atomic.Int64 // requests without a cookie
}

func (rm *room) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.visits == nil {
		rm.visits = map[int][]time.Time{}
	}
	id := -1
	if c, err := r.Cookie("visitor"); err == nil {
		id, _ = strconv.Atoi(c.Value)
	}
	if id < 0 {
		rm.bare.Add(1)
		rm.next++
		id = rm.next
		http.SetCookie(w, &http.Cookie{Name: "visitor", Value: strconv.Itoa(id), Path: "/"})
	}
	rm.visits[id] = append(rm.visits[id], time.Now())
	n := len(rm.visits[id])
	if rm.admitAfter > 0 && n > rm.admitAfter {
		w.Write([]byte("origin"))
		return
	}
	w.Header().Set("Refresh", rm.refresh)
	w.Write([]byte("queue page"))
}

// The Refresh intervals below are whole seconds: a browser ignores a
// fraction, and so do the visitors here (edge/crowd reads the header).

func TestHonorsRefresh(t *testing.T) {
	t.Parallel()
	rm := &room{refresh: "1"}
	srv := httptest.NewServer(rm)
	defer srv.Close()
	start := time.Now()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 3, Duration: 3 * time.Second, HonorRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("run took %v", el)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if len(rm.visits) != 3 || r.Visitors != 3 || r.VisitorsQueued != 3 {
		t.Fatalf("%d visitors seen, %d reported (%d queued)", len(rm.visits), r.Visitors, r.VisitorsQueued)
	}
	for id, ts := range rm.visits {
		// Three seconds at one check-in per second: about three each.
		if len(ts) < 2 || len(ts) > 5 {
			t.Errorf("visitor %d came %d times", id, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < 990*time.Millisecond {
				t.Errorf("visitor %d came back after %v, before its refresh", id, gap)
			}
		}
	}
	if r.Queued != r.Requests || r.Admitted != 0 || r.QueuedLatency.Count != r.Queued {
		t.Errorf("report: %+v", r)
	}
}

func TestHammersWithoutRefresh(t *testing.T) {
	rm := &room{refresh: "20"}
	srv := httptest.NewServer(rm)
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 2, Duration: 300 * time.Millisecond, HonorRefresh: false})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests < 50 {
		t.Errorf("only %d requests while hammering", r.Requests)
	}
	if rm.bare.Load() != 2 {
		t.Errorf("%d requests without the cookie, want the first of each visitor", rm.bare.Load())
	}
}

func TestAdmittedAfterWaiting(t *testing.T) {
	t.Parallel()
	rm := &room{refresh: "1", admitAfter: 2}
	srv := httptest.NewServer(rm)
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 4, Duration: 3500 * time.Millisecond, HonorRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Visitors != 4 || r.VisitorsQueued != 4 || r.VisitorsAdmitted != 4 || r.VisitorsAdmittedAfter != 4 {
		t.Fatalf("visitors %d queued %d admitted %d after %d", r.Visitors, r.VisitorsQueued, r.VisitorsAdmitted, r.VisitorsAdmittedAfter)
	}
	// Two waits of 1 s each.
	if w := r.WaitToAdmission; w.Count != 4 || w.Min < 2*time.Second || w.Max > 3*time.Second {
		t.Errorf("wait to admission %+v", w)
	}
	if r.Queued != 8 || r.Admitted < 4 {
		t.Errorf("queued %d admitted %d", r.Queued, r.Admitted)
	}
}

func TestNewVisitorEveryRequest(t *testing.T) {
	rm := &room{refresh: "20"}
	srv := httptest.NewServer(rm)
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 3, Requests: 30, RequestsPerVisitor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 30 || r.Visitors < 30 || rm.bare.Load() != 30 {
		t.Errorf("%d requests, %d visitors, %d without cookie", r.Requests, r.Visitors, rm.bare.Load())
	}
}

func TestCookieDeleted(t *testing.T) {
	var v visitor
	set := func(h ...string) {
		v.keep(&http.Response{Header: http.Header{"Set-Cookie": h}}, time.Now())
	}
	set("a=1; Path=/", "b=2; Max-Age=60")
	if v.header != "a=1; b=2" {
		t.Fatalf("header %q", v.header)
	}
	set("a=; Path=/; Max-Age=0")
	if v.header != "b=2" {
		t.Fatalf("after delete: %q", v.header)
	}
	set("b=; Expires=Thu, 01 Jan 1970 00:00:00 GMT")
	if v.header != "" {
		t.Fatalf("after expiry: %q", v.header)
	}
}

func TestStopsByItself(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()

	start := time.Now()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > time.Second {
		t.Errorf("a 300 ms run took %v", el)
	}
	if r.Admitted == 0 || r.Admitted != uint64(hits.Load()) {
		t.Errorf("admitted %d, server saw %d", r.Admitted, hits.Load())
	}

	hits.Store(0)
	r, err = Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 4, Requests: 37, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 37 || hits.Load() != 37 {
		t.Errorf("requests %d, server saw %d, want 37", r.Requests, hits.Load())
	}

	// Cancelled from outside: stops at once.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := Run(ctx, Options{Targets: []string{srv.URL}, Concurrency: 2, Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cancelled run took %v", el)
	}
}

func TestOpenLoop(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Rate: 200, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "open" || r.Requests < 160 || r.Requests > 240 {
		t.Errorf("open loop at 200/s for 1 s sent %d (%s)", r.Requests, r.Mode)
	}
	if r.Visitors > r.Requests || r.Visitors == 0 {
		t.Errorf("%d visitors for %d requests", r.Visitors, r.Requests)
	}

	// A slow server and one request in flight at most: starts are missed,
	// not delayed.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(100 * time.Millisecond) }))
	defer slow.Close()
	r, err = Run(context.Background(), Options{Targets: []string{slow.URL}, Rate: 100, MaxInFlight: 1, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Missed < 30 || r.Requests > 7 {
		t.Errorf("missed %d, sent %d", r.Missed, r.Requests)
	}

	// Queued visitors in an open loop come back at their refresh interval.
	rm := &room{refresh: "1"}
	qs := httptest.NewServer(rm)
	defer qs.Close()
	r, err = Run(context.Background(), Options{Targets: []string{qs.URL}, Rate: 100, Duration: 2 * time.Second, HonorRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	// After 1 s the first visitors are free again: fewer visitors than
	// requests, and no visitor sooner than its refresh.
	if r.Visitors >= r.Requests || r.Visitors < 25 {
		t.Errorf("%d visitors for %d requests", r.Visitors, r.Requests)
	}
	for id, ts := range rm.visits {
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < 990*time.Millisecond {
				t.Errorf("visitor %d came back after %v", id, gap)
			}
		}
	}
}

func TestWriteText(t *testing.T) {
	t.Parallel()
	rm := &room{refresh: "1", admitAfter: 1}
	srv := httptest.NewServer(rm)
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL}, Concurrency: 2, Duration: 1500 * time.Millisecond, HonorRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"admitted", "queued", "p99", "wait to admission", "visitors"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestFollowsRefreshURL: a queued visitor comes back where the Refresh
// header says, as a browser does (waitroom's cookie check sends a new
// visitor's first refresh to a marked address), reloads that address on a
// plain Refresh, and is back on its target once let in.
func TestFollowsRefreshURL(t *testing.T) {
	answers := []string{
		"0; url=/room?a=1&__waitroom_cc=7", // the first page: to the marked address
		"0; url=/elsewhere",                // anywhere on the site
		"0",                                // a plain refresh reloads it
		"",                                 // let in
		"",
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := len(seen)
		seen = append(seen, r.URL.RequestURI())
		mu.Unlock()
		if n < len(answers) && answers[n] != "" {
			w.Header().Set("Refresh", answers[n])
		}
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{Targets: []string{srv.URL + "/room?a=1"}, Concurrency: 1, Requests: int64(len(answers)), Duration: 5 * time.Second, HonorRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/room?a=1", "/room?a=1&__waitroom_cc=7", "/elsewhere", "/elsewhere", "/room?a=1"}
	if !slices.Equal(seen, want) {
		t.Errorf("the visitor went to %q, want %q", seen, want)
	}
	if r.Queued != 3 || r.Admitted != 2 || r.VisitorsAdmittedAfter != 1 {
		t.Errorf("report: %d queued, %d admitted, %d admitted after waiting; want 3, 2, 1", r.Queued, r.Admitted, r.VisitorsAdmittedAfter)
	}
}

func TestParseHeaders(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  http.Header // nil: refused
	}{
		{"no lines are no headers", nil, http.Header{}},
		{"a name and a value are trimmed", []string{" X-Test :  yes "}, http.Header{"X-Test": {"yes"}}},
		{"a value may hold a colon", []string{"Referer: https://shop.example/"}, http.Header{"Referer": {"https://shop.example/"}}},
		{"a name given twice keeps both values", []string{"Accept: a", "accept: b"}, http.Header{"Accept": {"a", "b"}}},
		{"a line without a colon is refused", []string{"X-Test yes"}, nil},
		{"a line without a name is refused", []string{" : yes"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseHeaders(c.lines)
			if c.want == nil {
				if err == nil || !strings.Contains(err.Error(), `want "Name: value"`) {
					t.Fatalf("headers %v, error %v; want the line refused", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("headers %v; want %v", got, c.want)
			}
			for k, vs := range c.want {
				if !slices.Equal(got[k], vs) {
					t.Fatalf("headers %v; want %v", got, c.want)
				}
			}
		})
	}
}

func TestWarning(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"a closed loop names its visitors", Options{Concurrency: 200, Duration: time.Minute, Targets: []string{"https://shop.example/"}},
			"waitroom loadtest: sending real load (200 visitors for up to 1m0s) to https://shop.example/ — only test sites you operate"},
		{"an open loop names its rate, and every target", Options{Rate: 500, Duration: 2 * time.Minute, Targets: []string{"http://a/", "http://b/"}},
			"waitroom loadtest: sending real load (500 requests/s for up to 2m0s) to http://a/, http://b/ — only test sites you operate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.o.Warning(); got != c.want {
				t.Fatalf("%q; want %q", got, c.want)
			}
		})
	}
}
