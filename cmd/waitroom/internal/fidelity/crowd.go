package fidelity

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

// plan is one visitor's part in a scenario, drawn before the run.
type plan struct {
	id        string
	node      int
	arrive    time.Duration // from the crowd's start
	browse    time.Duration
	pageEvery []time.Duration // the gaps between pages, drawn ahead
	// code is the priority code the visitor's first request carries, if
	// it holds one (see priority.go).
	holder bool
	code   string
	// app: the visitor asks for the queue answer's JSON form, and notes
	// what it was told (see shown.go).
	app bool
}

// plans draws the scenario's visitors from a seed: the same seed gives the
// same crowd.
func plans(s Scenario, seed uint64) []plan {
	h := fnv.New64a()
	h.Write([]byte(s.Name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	weights := s.Weights
	if weights == nil {
		weights = make([]float64, s.Nodes)
		for i := range weights {
			weights[i] = 1
		}
	}
	var total float64
	for _, w := range weights {
		total += w
	}
	pick := func() int {
		x := rng.Float64() * total
		for i, w := range weights {
			if x < w {
				return i
			}
			x -= w
		}
		return len(weights) - 1
	}
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var out []plan
	for _, w := range s.Waves {
		if w.PerMinute <= 0 || w.For <= 0 {
			continue
		}
		// Evenly: exactly PerMinute × For visitors, one every For/n.
		// At random: exponential gaps of 1/PerMinute on average.
		n := int(math.Round(w.PerMinute * w.For.Minutes()))
		gap := time.Duration(float64(time.Minute) / w.PerMinute)
		t := time.Duration(0)
		for k := 0; ; k++ {
			if w.Even {
				if k >= n {
					break
				}
				t = w.For * time.Duration(k) / time.Duration(n)
			} else {
				t += time.Duration(-math.Log(1-rng.Float64()) * float64(gap))
			}
			at := w.Start + t
			if t >= w.For || at >= s.Length {
				break
			}
			p := plan{id: "v" + strconv.Itoa(len(out)+1), node: pick(), arrive: at, browse: between(s.BrowseMin, s.BrowseMax), holder: s.holds(len(out)), app: isApp(len(out))}
			for d := time.Duration(0); ; {
				g := between(s.PageEveryMin, s.PageEveryMax)
				if d+g > p.browse {
					break
				}
				d += g
				p.pageEvery = append(p.pageEvery, g)
			}
			out = append(out, p)
		}
	}
	return out
}

// crowdLog is what the crowd saw: its visitors' arrivals and the answers
// that were not the room's or the origin's pages.
type crowdLog struct {
	mu       sync.Mutex
	arrivals []Arrival
	// status5xx counts 5xx answers (the origin never sends one, so each is
	// the room's); connErrors counts requests that got no answer at all
	// (a node down); requeued counts visitors let in and later queued
	// again while browsing.
	status5xx, connErrors, requeued int
}

func (l *crowdLog) answer(ctx context.Context, a crowd.Answer) {
	if ctx.Err() != nil {
		return // the run's end cut it off: nobody's doing
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case a.Err != nil:
		l.connErrors++
	case a.Status >= 500:
		l.status5xx++
	}
}

// runCrowd sends the planned visitors (their arrivals counted from start) to
// the nodes until ctx ends, then returns what it saw. url gives a node's
// address.
func runCrowd(ctx context.Context, plans []plan, start time.Time, url func(node int) string) *crowdLog {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	cr := &crowdRun{start: start, tr: tr, log: &crowdLog{}}
	var wg sync.WaitGroup
	for _, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr.visit(ctx, p, url(p.node))
		}()
	}
	wg.Wait()
	return cr.log
}

// retryAfterError is how long a visitor waits before reloading after an
// answer that was an error (a node down): a person pressing reload.
const retryAfterError = time.Second

// crowdRun is what the visitors of one run share: when the run started
// (their arrivals count from it), the transport and the log.
type crowdRun struct {
	start time.Time
	tr    http.RoundTripper
	log   *crowdLog
}

// visit is one visitor's stay: arrive, wait through the queue, browse,
// leave.
func (cr *crowdRun) visit(ctx context.Context, p plan, target string) {
	if !crowd.Sleep(ctx, time.Until(cr.start.Add(p.arrive))) {
		return
	}
	h := http.Header{VisitorHeader: {p.id}}
	if p.app {
		h.Set("Accept", crowd.AcceptJSON)
	}
	v := crowd.NewVisitor(cr.tr, h, 10*time.Second)
	arr := Arrival{Visitor: p.id, Node: p.node, Priority: p.code != ""}
	seen := func(a crowd.Answer) {
		if arr.Arrived.IsZero() && a.Err == nil {
			arr.Arrived = a.Sent
		}
		if a.Wait != nil {
			arr.Pages = append(arr.Pages, Shown{At: a.At, First: len(arr.Pages) == 0, Wait: *a.Wait})
		}
		if a.Outcome == crowd.Queued {
			if arr.Queued.IsZero() {
				arr.Queued = a.At
			} else {
				arr.TurnedAway = append(arr.TurnedAway, a.At)
			}
		}
		cr.log.answer(ctx, a)
	}
	defer func() {
		if !arr.Arrived.IsZero() {
			cr.log.mu.Lock()
			cr.log.arrivals = append(cr.log.arrivals, arr)
			cr.log.mu.Unlock()
		}
	}()
	if _, err := v.Follow(ctx, withCode(target, p.code), retryAfterError, seen); err != nil {
		// The run ended while it waited (still waiting, not given up),
		// or the room turned it away (it did not wait).
		if errors.Is(err, crowd.ErrRejected) {
			arr.GaveUp = time.Now()
		}
		return
	}
	// The pages come on a schedule from the admission, whatever each
	// answer took, so a slow answer does not lengthen the stay.
	next := time.Now()
	for _, gap := range p.pageEvery {
		next = next.Add(gap)
		if !crowd.Sleep(ctx, time.Until(next)) {
			return
		}
		a := v.Get(ctx, target)
		if ctx.Err() != nil {
			return
		}
		cr.log.answer(ctx, a)
		if a.Outcome == crowd.Queued {
			// Let in, then queued again while browsing: the session was
			// lost. Wait again, as a person would.
			cr.log.mu.Lock()
			cr.log.requeued++
			cr.log.mu.Unlock()
			if _, err := v.Follow(ctx, target, retryAfterError, func(a crowd.Answer) { cr.log.answer(ctx, a) }); err != nil {
				return
			}
		}
	}
}
