package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/loadtest"
)

// externalSides are the sides a proxy operators run takes in the
// comparisons: proxying admitted visitors to the origin (closed loop and
// at a fixed rate), answering the queue page's bytes, and, for nginx, the
// same proxying with waitroom's forward-auth endpoint deciding.
type externalSides struct {
	x                    *External
	closed, open, page   *side
	authClosed, authOpen *side
	// Indexes of the proxy's comparisons in Report.External.
	admitted, cpu, p50, p99, queued, queuedCPU int
	auth, authCPU, authP99                     int
	split                                      int // in Report.Split
}

// The goals against nginx (admitted throughput and CPU, p99 added at a
// fixed rate, queued throughput); other proxies are shown for reference.
const (
	goalAdmitted = "≥ 0.80"
	goalCPU      = "≤ 1.25"
	goalP99      = "≤ +0.2 ms"
	goalQueued   = goalAdmitted
)

var externalGoals = map[string]func(float64) bool{
	"":           func(float64) bool { return true },
	goalAdmitted: func(v float64) bool { return v >= 0.8 },
	goalCPU:      func(v float64) bool { return v <= 1.25 },
	goalP99:      func(v float64) bool { return v <= 0.2 },
}

// addExternal adds x's sides and its rows of the report.
func (b *benchRun) addExternal(x *External) {
	closed := loadtest.Options{Concurrency: b.o.Concurrency}
	newVisitors := loadtest.Options{Concurrency: b.o.Concurrency, RequestsPerVisitor: 1}
	e := &externalSides{
		x:      x,
		closed: b.side(x.ProxyURL+"open/", closed),
		open:   b.side(x.ProxyURL+"open/", loadtest.Options{}),
		page:   b.side(x.PageURL+"full/", newVisitors),
	}
	for _, s := range []*side{e.closed, e.open, e.page} {
		s.cpu = x.CPU
	}
	name := x.Name + " " + x.Version
	b.rep.Proxies = append(b.rep.Proxies, name+" ("+x.Binary+")")
	goal := func(g string) string {
		if x.Name == "nginx" {
			return g
		}
		return ""
	}
	row := func(c Comparison) int {
		b.rep.External = append(b.rep.External, c)
		return len(b.rep.External) - 1
	}
	e.admitted = row(Comparison{Name: "admitted throughput", Baseline: name, Unit: "req/s", Goal: goal(goalAdmitted)})
	e.cpu = row(Comparison{Name: "CPU per admitted request", Baseline: name, Unit: "µs", Goal: goal(goalCPU)})
	e.p50 = row(Comparison{Name: "admitted p50, fixed rate", Baseline: name, Unit: "ms", Difference: true})
	e.p99 = row(Comparison{Name: "admitted p99, fixed rate", Baseline: name, Unit: "ms", Difference: true, Goal: goal(goalP99)})
	e.queued = row(Comparison{Name: "queued throughput", Baseline: name + " page", Unit: "req/s", Goal: goal(goalQueued)})
	e.queuedCPU = row(Comparison{Name: "CPU per queued response", Baseline: name + " page", Unit: "µs"})
	if x.AuthURL != "" {
		e.authClosed = b.side(x.AuthURL+"open/", closed)
		e.authOpen = b.side(x.AuthURL+"open/", loadtest.Options{})
		e.authClosed.cpu, e.authOpen.cpu = x.CPU, x.CPU
		e.auth = row(Comparison{Name: "forward-auth admitted throughput", Baseline: name, Unit: "req/s"})
		e.authCPU = row(Comparison{Name: "forward-auth CPU per request", Baseline: name, Unit: "µs"})
		e.authP99 = row(Comparison{Name: "forward-auth p99, fixed rate", Baseline: name, Unit: "ms", Difference: true})
	}
	e.split = len(b.rep.Split)
	b.rep.Split = append(b.rep.Split, CPUSplit{Proxy: name, admitted: e.cpu, queued: e.queuedCPU})
	b.externals = append(b.externals, e)
}

// CPUSplit is an external proxy's own CPU per request, per round, in µs.
type CPUSplit struct {
	Proxy    string    `json:"proxy"`
	Admitted []float64 `json:"admitted_us"`
	Queued   []float64 `json:"queued_us"`
	// admitted and queued are its CPU comparisons in Report.External.
	admitted, queued int
}

// writeSplit prints sp: the proxy's own CPU per request, the rest of its
// rows' CPU (generator and origin, which waitroom's rows spend too), and
// so waitroom's node's own CPU per request beside the proxy's.
func (rep *Report) writeSplit(w io.Writer, sp CPUSplit) {
	line := func(what string, own []float64, c Comparison) {
		o := median(own)
		rest := median(c.Base) - o
		node := median(c.Room) - rest
		if o <= 0 || rest <= 0 {
			return
		}
		fmt.Fprintf(w, "%s's own CPU per %s: %.1f µs; the generator's and the origin's: %.1f µs; so waitroom's node: about %.1f µs (× %.2f)\n",
			sp.Proxy, what, o, rest, node, node/o)
	}
	line("admitted request", sp.Admitted, rep.External[sp.admitted])
	line("queued response", sp.Queued, rep.External[sp.queued])
}

func perRequest(d time.Duration, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(n)
}

// roundExternal runs e's comparisons once: waitroom's open room against
// the proxy (closed loop, then at LatencyLoad of the proxy's throughput),
// the full room against the proxy answering the queue page, and the proxy
// asking waitroom's forward-auth endpoint against the proxy alone.
func (b *benchRun) roundExternal(round int, e *externalSides) error {
	ext := b.rep.External
	cb, cr, err := b.compare(round, e.closed, b.roomClosed)
	if err != nil {
		return err
	}
	ext[e.admitted].add(cb.perSecond(cb.admitted), cr.perSecond(cr.admitted))
	ext[e.cpu].add(cb.cpuPer(cb.admitted), cr.cpuPer(cr.admitted))
	sp := &b.rep.Split[e.split]
	sp.Admitted = append(sp.Admitted, perRequest(cb.ext, cb.admitted))

	rate := float64(int(cb.perSecond(cb.admitted) * b.o.LatencyLoad))
	for _, s := range []*side{e.open, b.roomOpen, e.authOpen} {
		if s != nil {
			s.opt.Rate, s.opt.MaxInFlight = rate, 4*b.o.Concurrency
		}
	}
	lb, lr, err := b.compare(round, e.open, b.roomOpen)
	if err != nil {
		return err
	}
	ext[e.p50].addDiff(lb.p50s, lr.p50s)
	ext[e.p99].addDiff(lb.p99s, lr.p99s)

	qb, qr, err := b.compare(round, e.page, b.roomQueued)
	if err != nil {
		return err
	}
	ext[e.queued].add(qb.perSecond(qb.queued), qr.perSecond(qr.queued))
	ext[e.queuedCPU].add(qb.cpuPer(qb.queued), qr.cpuPer(qr.queued))
	sp.Queued = append(sp.Queued, perRequest(qb.ext, qb.queued))
	line := fmt.Sprintf("round %d/%d vs %s: admitted %.0f vs %.0f req/s (× %.3f), CPU %.1f vs %.1f µs | p99 at %.0f req/s %.3f vs %.3f ms | queued %.0f vs %.0f req/s (× %.3f)",
		round+1, b.o.Rounds, e.x.Name,
		cb.perSecond(cb.admitted), cr.perSecond(cr.admitted), ratio(cr.perSecond(cr.admitted), cb.perSecond(cb.admitted)),
		cb.cpuPer(cb.admitted), cr.cpuPer(cr.admitted),
		rate, median(lb.p99s), median(lr.p99s),
		qb.perSecond(qb.queued), qr.perSecond(qr.queued), ratio(qr.perSecond(qr.queued), qb.perSecond(qb.queued)))

	if e.authClosed != nil {
		ab, ar, err := b.compare(round, e.closed, e.authClosed)
		if err != nil {
			return err
		}
		if ar.queued+ar.rejected > 0 {
			b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("round %d: forward-auth behind %s queued %d and rejected %d requests", round+1, e.x.Name, ar.queued, ar.rejected))
		}
		ext[e.auth].add(ab.perSecond(ab.admitted), ar.perSecond(ar.admitted))
		ext[e.authCPU].add(ab.cpuPer(ab.admitted), ar.cpuPer(ar.admitted))
		pb, pr, err := b.compare(round, e.open, e.authOpen)
		if err != nil {
			return err
		}
		ext[e.authP99].addDiff(pb.p99s, pr.p99s)
		line += fmt.Sprintf(" | forward-auth %.0f vs %.0f req/s (× %.3f)", ab.perSecond(ab.admitted), ar.perSecond(ar.admitted), ratio(ar.perSecond(ar.admitted), ab.perSecond(ab.admitted)))
	}
	if b.o.Progress != nil {
		fmt.Fprintln(b.o.Progress, line)
	}
	return nil
}
