// Package loadtest is waitroom's load generator, behind `waitroom loadtest`
// and the bench (cmd/waitroom/internal/bench). It speaks HTTP to any site,
// waiting room or not, and reads the answers with the visitor's side of a
// room (edge/crowd), so it imports nothing else of waitroom's own.
//
// [Run] drives one or more target URLs with virtual visitors, each keeping its
// own cookies (so a waiting room's sealed token goes back on every request)
// and, when queued, waiting as long as the Refresh header says before checking
// in again at the address it names (a waiting room's cookie check), as a
// browser on the queue page does. Two load models:
//
//   - closed loop (Options.Rate 0): Concurrency visitors, each sending its next
//     request as soon as the previous one is answered (or its refresh wait is
//     over);
//   - open loop (Options.Rate > 0): requests start at a fixed rate whatever
//     the answers, each taken by a visitor that is free (a new one when none
//     is), with at most MaxInFlight requests outstanding; a start that would
//     exceed it is counted as missed rather than delayed, so a slow server
//     cannot slow the clock (no coordinated omission).
//
// A run stops by itself after Duration or Requests, whichever comes first,
// and reports throughput, latency percentiles (overall, admitted, queued),
// what the visitors became (admitted, queued, admitted after waiting, with
// the time it took) and the errors by kind.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

// Options configure a run.
type Options struct {
	// Targets are the URLs to drive; visitor i uses Targets[i % len].
	Targets []string
	Method  string      // GET when empty
	Host    string      // Host header, when not the URL's
	Header  http.Header // sent on every request

	// Concurrency is the number of visitors in a closed-loop run (default 50).
	Concurrency int
	// Rate > 0 selects an open-loop run: requests started per second.
	Rate float64
	// MaxInFlight caps an open-loop run's outstanding requests (default
	// 1000); a start beyond it is counted as missed.
	MaxInFlight int

	// Duration bounds the run (default 30 s); Requests, when > 0, bounds the
	// number of requests sent. The run stops at whichever comes first.
	Duration time.Duration
	Requests int64

	// HonorRefresh makes a queued visitor wait the Refresh interval before its
	// next request, as the queue page does in a browser. Without it visitors
	// hammer (and a waiting room answers their early check-ins with the page
	// again, without counting them as attempts).
	HonorRefresh bool
	// RequestsPerVisitor > 0 makes a visitor forget its cookies after that
	// many requests and come back as somebody new (1: every request is a new
	// visitor).
	RequestsPerVisitor int

	// Timeout bounds one request, body included (default 10 s).
	Timeout time.Duration

	// Transport replaces the run's own tuned transport (tests).
	Transport http.RoundTripper
}

// ParseHeaders reads request headers given as "Name: value" lines (the
// command line's --header), for Options.Header.
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, line := range lines {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: want \"Name: value\"", line)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// Warning is what a run says before it starts: that it sends real load,
// how much and where. A load test pointed at somebody else's site is an
// attack.
func (o *Options) Warning() string {
	load := fmt.Sprintf("%d visitors", max(o.Concurrency, 1))
	if o.Rate > 0 {
		load = fmt.Sprintf("%g requests/s", o.Rate)
	}
	return fmt.Sprintf("waitroom loadtest: sending real load (%s for up to %s) to %s — only test sites you operate",
		load, o.Duration, strings.Join(o.Targets, ", "))
}

func (o *Options) defaults() error {
	if len(o.Targets) == 0 {
		return errors.New("loadtest: no target URL")
	}
	for _, t := range o.Targets {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("loadtest: target %q is not an absolute http(s) URL", t)
		}
	}
	if o.Method == "" {
		o.Method = http.MethodGet
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 50
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Rate < 0 {
		return fmt.Errorf("loadtest: rate %g must be ≥ 0", o.Rate)
	}
	return nil
}

// NewTransport is the generator's transport: keep-alive connections reused
// across requests (idle pool at least conns per host, so a closed loop of
// conns visitors never redials), no HTTP/2, no transparent compression.
func NewTransport(conns int) *http.Transport {
	conns = max(conns, 64)
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// Classify tells what a response was (the visitor's side of a room,
// edge/crowd, decides) and, for a queued one, the refresh interval it asked
// for, read as a browser reads it (whole seconds; a Refresh that does not
// parse is a reload after no wait). For an error the third result is the
// error kind ("http_502", ...); the reports count those as errors.
func Classify(resp *http.Response) (crowd.Outcome, time.Duration, string) {
	out, r, kind := classify(resp)
	return out, r.After, kind
}

// classify is Classify with the whole refresh (the address it names too).
func classify(resp *http.Response) (crowd.Outcome, crowd.Refresh, string) {
	out, r := crowd.Classify(resp)
	if out == crowd.Failed {
		return out, r, "http_" + strconv.Itoa(resp.StatusCode)
	}
	return out, r, ""
}

// ErrorKind names a transport error: timeout, refused, reset, eof or
// connection.
func ErrorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	default:
		return "connection"
	}
}

// Result is a run's report.
type Result struct {
	Mode        string        `json:"mode"` // closed or open
	Targets     []string      `json:"targets"`
	Concurrency int           `json:"concurrency,omitempty"`
	Rate        float64       `json:"rate,omitempty"`
	Elapsed     time.Duration `json:"elapsed_ns"`

	Requests   uint64  `json:"requests"`   // sent and answered or failed
	Throughput float64 `json:"throughput"` // answers (any outcome but error) per second
	Admitted   uint64  `json:"admitted"`
	Queued     uint64  `json:"queued"`
	Rejected   uint64  `json:"rejected"`
	Errors     uint64  `json:"errors"`
	// Missed counts open-loop starts skipped because MaxInFlight requests
	// were outstanding.
	Missed    uint64            `json:"missed,omitempty"`
	ErrorKind map[string]uint64 `json:"error_kinds,omitempty"`
	Status    map[int]uint64    `json:"status"`
	BytesRead uint64            `json:"bytes_read"`

	// Visitors: how many there were, how many were ever queued, ever
	// admitted, and admitted after having been queued (with the wait it took
	// in WaitToAdmission).
	Visitors              uint64 `json:"visitors"`
	VisitorsQueued        uint64 `json:"visitors_queued"`
	VisitorsAdmitted      uint64 `json:"visitors_admitted"`
	VisitorsAdmittedAfter uint64 `json:"visitors_admitted_after_queue"`

	Latency         Summary `json:"latency"` // every answered request
	AdmittedLatency Summary `json:"admitted_latency"`
	QueuedLatency   Summary `json:"queued_latency"`
	WaitToAdmission Summary `json:"wait_to_admission"`

	admHist, queHist *Histogram // for merging runs (the bench's slices)
}

// PerSecond returns n per second of the run.
func (r *Result) PerSecond(n uint64) float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(n) / r.Elapsed.Seconds()
}

// AdmittedHistogram is the latencies of the admitted answers, whole, for
// merging the runs of one side of a comparison (the bench runs each side in
// slices).
func (r *Result) AdmittedHistogram() *Histogram { return r.admHist }

// visitor is one virtual visitor: its cookies and what became of it.
type visitor struct {
	id     uint64
	target *url.URL
	// page is where the visitor's next request goes when it is not target:
	// the address a queue page's Refresh named, as a browser follows it
	// (a waiting room's cookie check, then back to the clean address).
	page     *url.URL
	cookies  []kept
	header   string // Cookie header built from cookies
	requests int

	queuedSince time.Time
	queued      bool
	admitted    bool
}

// kept is one cookie: its name and its "name=value" pair, both slices of the
// Set-Cookie line that set it.
type kept struct{ name, pair string }

func (v *visitor) reset(id uint64, target *url.URL) {
	cookies := v.cookies[:0]
	*v = visitor{id: id, target: target, cookies: cookies}
}

// keep applies a response's Set-Cookie headers, as a browser's cookie jar
// would for one site: a run targets one site, so domain and path scoping are
// left out; deletion (Max-Age ≤ 0, or Expires in the past) is kept. It is
// written to cost the generator little, since the generator shares the CPU
// with the server under test: in the usual case (one cookie, renewed) it
// does not allocate.
func (v *visitor) keep(resp *http.Response, now time.Time) {
	lines := resp.Header["Set-Cookie"]
	if len(lines) == 0 {
		return
	}
	changed := false
	for _, line := range lines {
		pair, attrs, _ := strings.Cut(line, ";")
		pair = strings.TrimSpace(pair)
		name, _, ok := strings.Cut(pair, "=")
		if !ok || name == "" {
			continue
		}
		i := slices.IndexFunc(v.cookies, func(k kept) bool { return k.name == name })
		if expired(attrs, now) {
			if i >= 0 {
				v.cookies = slices.Delete(v.cookies, i, i+1)
				changed = true
			}
			continue
		}
		if i >= 0 {
			if v.cookies[i].pair != pair {
				v.cookies[i].pair = pair
				changed = true
			}
			continue
		}
		v.cookies = append(v.cookies, kept{name: name, pair: pair})
		changed = true
	}
	if !changed {
		return
	}
	switch len(v.cookies) {
	case 0:
		v.header = ""
	case 1:
		v.header = v.cookies[0].pair
	default:
		var b strings.Builder
		for i, k := range v.cookies {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(k.pair)
		}
		v.header = b.String()
	}
}

// expired reads a Set-Cookie line's attributes: Max-Age ≤ 0, or (without
// Max-Age) an Expires in the past, delete the cookie.
func expired(attrs string, now time.Time) bool {
	var expires string
	for attrs != "" {
		var a string
		a, attrs, _ = strings.Cut(attrs, ";")
		k, val, _ := strings.Cut(strings.TrimSpace(a), "=")
		switch {
		case strings.EqualFold(k, "max-age"):
			n, err := strconv.Atoi(strings.TrimSpace(val))
			return err == nil && n <= 0
		case strings.EqualFold(k, "expires"):
			expires = val
		}
	}
	if expires == "" {
		return false
	}
	t, err := http.ParseTime(strings.TrimSpace(expires))
	return err == nil && !t.After(now)
}

// shard holds the figures recorded by some of the visitors.
type shard struct {
	mu                  sync.Mutex
	all, adm, que, wait Histogram
	status              map[int]uint64
	errs                map[string]uint64
	_                   [64]byte // keep shards' locks on separate cache lines
}

type engine struct {
	o       Options
	targets []*url.URL
	rt      http.RoundTripper
	shards  []shard

	sent                                              atomic.Int64 // requests started (the Requests budget)
	requests, admitted, queued, rejected, failed      atomic.Uint64
	missed, bytes                                     atomic.Uint64
	visitors, vQueued, vAdmitted, vAdmittedAfterQueue atomic.Uint64
}

// Run drives the targets until Duration has passed or Requests have been
// sent (or ctx is done) and returns the report.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	e := &engine{o: o, rt: o.Transport}
	for _, t := range o.Targets {
		u, _ := url.Parse(t) // checked by defaults
		e.targets = append(e.targets, u)
	}
	if e.rt == nil {
		conns := o.Concurrency
		if o.Rate > 0 {
			conns = min(o.MaxInFlight, max(64, int(o.Rate/10)))
		}
		tr := NewTransport(conns)
		defer tr.CloseIdleConnections()
		e.rt = tr
	}
	e.shards = make([]shard, 4*runtime.GOMAXPROCS(0))
	for i := range e.shards {
		e.shards[i].status = map[int]uint64{}
		e.shards[i].errs = map[string]uint64{}
	}
	// stop ends sending at the deadline; requests in flight then finish (each
	// bounded by Timeout) and count. ctx cancels everything at once.
	stop, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	start := time.Now()
	if o.Rate > 0 {
		e.openLoop(ctx, stop)
	} else {
		e.closedLoop(ctx, stop)
	}
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil && e.requests.Load() == 0 {
		return nil, err
	}
	return e.result(elapsed), nil
}

// take reserves one request of the Requests budget.
func (e *engine) take() bool {
	if e.o.Requests <= 0 {
		return true
	}
	return e.sent.Add(1) <= e.o.Requests
}

func (e *engine) newVisitor(v *visitor) {
	id := e.visitors.Add(1)
	v.reset(id, e.targets[int(id-1)%len(e.targets)])
}

func (e *engine) closedLoop(ctx, stop context.Context) {
	var wg sync.WaitGroup
	for range e.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v visitor
			e.newVisitor(&v)
			for stop.Err() == nil && e.take() {
				wait := e.pause(e.do(ctx, &v))
				if e.o.RequestsPerVisitor > 0 && v.requests >= e.o.RequestsPerVisitor {
					e.newVisitor(&v)
				}
				if wait > 0 && !crowd.Sleep(stop, wait) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// openLoop starts requests at the fixed rate, in batches every millisecond
// at most, from a pool of free visitors.
func (e *engine) openLoop(ctx, stop context.Context) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		free     []*visitor
		inFlight atomic.Int64
	)
	release := func(v *visitor, wait time.Duration) {
		put := func() {
			mu.Lock()
			free = append(free, v)
			mu.Unlock()
		}
		if wait > 0 {
			time.AfterFunc(wait, put)
			return
		}
		put()
	}
	start := time.Now()
	var started int64
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
loop:
	for {
		due := int64(time.Since(start).Seconds()*e.o.Rate) + 1 - started
		for ; due > 0; due-- {
			started++
			if !e.take() {
				break loop
			}
			if inFlight.Load() >= int64(e.o.MaxInFlight) {
				e.missed.Add(1)
				continue
			}
			mu.Lock()
			var v *visitor
			if n := len(free); n > 0 {
				v, free = free[n-1], free[:n-1]
			}
			mu.Unlock()
			if v == nil {
				v = new(visitor)
				e.newVisitor(v)
			}
			inFlight.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				wait := e.pause(e.do(ctx, v))
				inFlight.Add(-1)
				if e.o.RequestsPerVisitor > 0 && v.requests >= e.o.RequestsPerVisitor {
					e.newVisitor(v)
					wait = 0
				}
				release(v, wait)
			}()
		}
		select {
		case <-stop.Done():
			break loop
		case <-tick.C:
		}
	}
	wg.Wait()
}

// errorBackoff is how long a visitor waits after a transport error, so that
// a target that refuses connections is not spun against.
const errorBackoff = 10 * time.Millisecond

// pause is how long a visitor waits after a request: the refresh interval
// when queued (if honoured), a short back-off after a transport error.
func (e *engine) pause(refresh time.Duration, transportErr bool) time.Duration {
	switch {
	case transportErr:
		return errorBackoff
	case e.o.HonorRefresh:
		return refresh
	}
	return 0
}

// do sends one request for v and records it. It returns the refresh interval
// of a queued answer, and whether the request failed below HTTP.
func (e *engine) do(ctx context.Context, v *visitor) (time.Duration, bool) {
	rctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	req := e.request(rctx, v)
	v.requests++
	a := answer{sent: time.Now()}
	resp, err := e.rt.RoundTrip(req)
	if err != nil {
		if ctx.Err() == nil { // stopped from outside: not the server's doing
			e.fail(v, ErrorKind(err))
		}
		return 0, true
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	a.at = time.Now()
	e.bytes.Add(uint64(n))
	if err != nil {
		if ctx.Err() == nil {
			e.fail(v, ErrorKind(err))
		}
		return 0, true
	}
	v.keep(resp, a.at)
	var refresh crowd.Refresh
	a.status = resp.StatusCode
	a.out, refresh, a.kind = classify(resp)
	e.requests.Add(1)
	e.record(v, a)
	e.follow(v, a, refresh, req.URL)
	return refresh.After, false
}

// request is v's next request: to the target, or to the address the last
// queue page's Refresh named. It is built by hand from the parsed target:
// NewRequest would parse the URL on every request, on the CPU the server
// under test needs.
func (e *engine) request(ctx context.Context, v *visitor) *http.Request {
	u := v.target
	if v.page != nil {
		u = v.page
	}
	req := (&http.Request{
		Method:     e.o.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, len(e.o.Header)+1),
		Host:       u.Host,
	}).WithContext(ctx)
	for k, vs := range e.o.Header {
		req.Header[k] = vs
	}
	if e.o.Host != "" {
		req.Host = e.o.Host
	}
	if v.header != "" {
		req.Header["Cookie"] = []string{v.header}
	}
	return req
}

// answer is what one request got, as do records it.
type answer struct {
	status   int
	out      crowd.Outcome
	kind     string    // why it failed, for crowd.Failed
	sent, at time.Time // when the request went out, and when its answer was read
}

// record adds the answer to v's shard of the status counts and the latency
// histograms; the first admission of a visitor also records its wait.
func (e *engine) record(v *visitor, a answer) {
	lat := a.at.Sub(a.sent)
	sh := &e.shards[v.id%uint64(len(e.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.status[a.status]++
	if a.out != crowd.Failed {
		sh.all.Record(lat)
	}
	switch a.out {
	case crowd.Admitted:
		sh.adm.Record(lat)
		if !v.admitted {
			v.admitted = true
			e.vAdmitted.Add(1)
			if v.queued {
				e.vAdmittedAfterQueue.Add(1)
				sh.wait.Record(a.at.Sub(v.queuedSince))
			}
		}
	case crowd.Queued:
		sh.que.Record(lat)
	case crowd.Failed:
		sh.errs[a.kind]++
	}
}

// follow counts the answer by outcome and moves v on as a browser would: a
// visitor let in goes back to the target; a queued one goes where the
// Refresh header of the page at u sends it.
func (e *engine) follow(v *visitor, a answer, refresh crowd.Refresh, u *url.URL) {
	switch a.out {
	case crowd.Admitted:
		e.admitted.Add(1)
		// Let in (a waiting room's admission on the cookie check's
		// address answers with a redirect to the clean one): from now on
		// the target again.
		v.page = nil
	case crowd.Queued:
		e.queued.Add(1)
		// A plain Refresh reloads the page where it is; one with a url
		// goes there.
		if refresh.URL != "" {
			if next, err := u.Parse(refresh.URL); err == nil {
				v.page = next
			}
		}
		if !v.queued {
			v.queued = true
			v.queuedSince = a.sent
			e.vQueued.Add(1)
		}
	case crowd.Rejected:
		e.rejected.Add(1)
	case crowd.Failed:
		e.failed.Add(1)
	}
}

func (e *engine) fail(v *visitor, kind string) {
	e.requests.Add(1)
	e.failed.Add(1)
	sh := &e.shards[v.id%uint64(len(e.shards))]
	sh.mu.Lock()
	sh.errs[kind]++
	sh.mu.Unlock()
}

func (e *engine) result(elapsed time.Duration) *Result {
	r := &Result{
		Mode:                  "closed",
		Targets:               e.o.Targets,
		Elapsed:               elapsed,
		Requests:              e.requests.Load(),
		Admitted:              e.admitted.Load(),
		Queued:                e.queued.Load(),
		Rejected:              e.rejected.Load(),
		Errors:                e.failed.Load(),
		Missed:                e.missed.Load(),
		BytesRead:             e.bytes.Load(),
		Visitors:              e.visitors.Load(),
		VisitorsQueued:        e.vQueued.Load(),
		VisitorsAdmitted:      e.vAdmitted.Load(),
		VisitorsAdmittedAfter: e.vAdmittedAfterQueue.Load(),
		Status:                map[int]uint64{},
		ErrorKind:             map[string]uint64{},
	}
	if e.o.Rate > 0 {
		r.Mode, r.Rate = "open", e.o.Rate
	} else {
		r.Concurrency = e.o.Concurrency
	}
	var all, adm, que, wait Histogram
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		all.Merge(&sh.all)
		adm.Merge(&sh.adm)
		que.Merge(&sh.que)
		wait.Merge(&sh.wait)
		for k, n := range sh.status {
			r.Status[k] += n
		}
		for k, n := range sh.errs {
			r.ErrorKind[k] += n
		}
		sh.mu.Unlock()
	}
	r.Latency, r.AdmittedLatency, r.QueuedLatency, r.WaitToAdmission = all.Summary(), adm.Summary(), que.Summary(), wait.Summary()
	r.admHist, r.queHist = &adm, &que
	r.Throughput = r.PerSecond(r.Admitted + r.Queued + r.Rejected)
	if len(r.ErrorKind) == 0 {
		r.ErrorKind = nil
	}
	return r
}
