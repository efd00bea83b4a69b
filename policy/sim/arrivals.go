package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// arrival is one visitor's first request, drawn before the run starts so
// that every strategy sees the same traffic.
type arrival struct {
	at       time.Duration // true time of the first request
	claimed  time.Duration // the arrival time written into a spoofed token (SpoofBuckets), else at
	weights  []float64     // the phase's own node split, or nil for the current one
	pick     float64       // uniform [0, 1): which node, resolved at arrival time
	onSite   time.Duration // time on the origin once admitted
	patience time.Duration // 0: waits for ever
	spam     bool
	// cookieless: never back after the first request (Phase.Cookieless).
	cookieless bool
	// group is the priority group whose code the visitor presents, as an
	// index into the room's groups plus one; 0 for none (Phase.Group).
	group int
}

// phases turns the arrival curve into phases.
func (a *Arrival) phases(n int) []Phase {
	switch a.Curve {
	case "uniform":
		return []Phase{{Start: a.Start, End: a.End, Visitors: a.Visitors, Rate: a.Rate, Process: a.Process}}
	case "step":
		var ps []Phase
		if a.RateBefore > 0 && a.At > a.Start {
			ps = append(ps, Phase{Start: a.Start, End: a.At, Rate: a.RateBefore, Process: a.Process})
		}
		if a.RateAfter > 0 && a.End > a.At {
			ps = append(ps, Phase{Start: a.At, End: a.End, Rate: a.RateAfter, Process: a.Process})
		}
		return ps
	case "spike":
		var ps []Phase
		if a.Rate > 0 {
			ps = append(ps, Phase{Start: a.Start, End: a.End, Rate: a.Rate, Process: a.Process})
		}
		ps = append(ps, Phase{Start: a.SpikeAt, End: a.SpikeAt + a.SpikeOver, Visitors: a.SpikeVisitors, Process: a.Process, Node: a.SpikeNode})
		return ps
	}
	return a.Phases
}

// times draws the arrival times of one phase, sorted.
func (ph Phase) times(rng *rand.Rand) []time.Duration {
	start, end := ph.Start.D(), ph.End.D()
	span := end - start
	even := ph.Process == "even"
	if ph.Visitors > 0 {
		out := make([]time.Duration, ph.Visitors)
		for i := range out {
			if even {
				out[i] = start + time.Duration((float64(i)+0.5)/float64(ph.Visitors)*float64(span))
			} else {
				out[i] = start + time.Duration(rng.Float64()*float64(span))
			}
		}
		slices.Sort(out)
		return out
	}
	// A rate per minute, ramping linearly from r0 to r1: the cumulative
	// count is Λ(t) = r0·t + (r1 − r0)·t²/(2T) (t, T in minutes); unit-rate
	// points in Λ are mapped back through its inverse.
	r0 := ph.Rate
	r1 := r0
	if ph.RateEnd != nil {
		r1 = *ph.RateEnd
	}
	T := span.Minutes()
	total := (r0 + r1) / 2 * T
	inv := func(l float64) time.Duration {
		var t float64
		if d := r1 - r0; math.Abs(d) < 1e-12 {
			t = l / r0
		} else {
			a := d / (2 * T)
			t = (-r0 + math.Sqrt(r0*r0+4*a*l)) / (2 * a)
		}
		return start + time.Duration(t*float64(time.Minute))
	}
	var out []time.Duration
	if even {
		for k := 0.5; k < total; k++ {
			out = append(out, inv(k))
		}
		return out
	}
	for l := rng.ExpFloat64(); l < total; l += rng.ExpFloat64() {
		out = append(out, inv(l))
	}
	return out
}

// draw returns one sample of the distribution.
func (x Dist) draw(rng *rand.Rand) time.Duration {
	var v float64
	switch x.Kind {
	case "constant":
		return x.Value.D()
	case "uniform":
		return x.Min.D() + time.Duration(rng.Float64()*float64(x.Max-x.Min))
	case "normal":
		v = float64(x.Mean) + rng.NormFloat64()*float64(x.SD)
	case "exponential":
		v = rng.ExpFloat64() * float64(x.Mean)
	}
	v = max(v, float64(x.Min), 0)
	if x.Max > 0 {
		v = min(v, float64(x.Max))
	}
	return time.Duration(v)
}

// arrivals draws every visitor of the scenario, sorted by first request.
func (sc *Scenario) arrivals(rng *rand.Rand) []arrival {
	n := sc.Nodes.Count
	var out []arrival
	for _, ph := range sc.Visitors.Arrival.phases(n) {
		var w []float64
		switch {
		case ph.Node != nil:
			w = make([]float64, n)
			w[*ph.Node] = 1
		case len(ph.Weights) > 0:
			w = make([]float64, n)
			copy(w, ph.Weights)
		}
		group := sc.Room.group(ph.Group) + 1
		for _, t := range ph.times(rng) {
			out = append(out, arrival{at: t, claimed: t, weights: w, cookieless: ph.Cookieless, group: group})
		}
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	a := sc.Visitors.Arrival
	if a.SpoofBuckets {
		// As in Cloudflare's "Waiting Room: Random Queueing and Custom
		// Web/Mobile Apps": "we spoofed the bucketIds of the users and let them all
		// join the Waiting Room at once".
		for i := range out {
			out[i].at = a.Start.D() + time.Duration(rng.Float64()*float64(a.JoinOver))
		}
		slices.SortStableFunc(out, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	}
	v := sc.Visitors
	for i := range out {
		out[i].pick = rng.Float64()
		out[i].onSite = v.TimeOnOrigin.draw(rng)
		if v.Abandonment.Probability > 0 && rng.Float64() < v.Abandonment.Probability {
			out[i].patience = max(v.Abandonment.After.draw(rng), time.Second)
		}
		if v.Refresh.SpamShare > 0 && rng.Float64() < v.Refresh.SpamShare {
			out[i].spam = true
		}
	}
	return out
}

// weightsAt returns the arrival split between nodes at time t: the base
// weights moved by every shift event that has begun.
func (sc *Scenario) weightsAt(t time.Duration) []float64 {
	n := sc.Nodes.Count
	w := make([]float64, n)
	if len(sc.Visitors.NodeWeights) == n {
		copy(w, sc.Visitors.NodeWeights)
	} else if dw := sc.Visitors.DatacenterWeights; len(dw) > 0 && len(dw) == sc.Nodes.Datacenters {
		for i := range w {
			w[i] = dw[sc.datacenterOf(i)]
		}
	} else {
		for i := range w {
			w[i] = 1
		}
	}
	for _, e := range sc.Events {
		if e.Shift == nil || t < e.At.D() {
			continue
		}
		f := 1.0
		if over := e.Shift.Over.D(); over > 0 {
			f = min(1, float64(t-e.At.D())/float64(over))
		}
		sw := normalised(e.Shift.Weights)
		cw := normalised(w)
		for i := range w {
			w[i] = cw[i]*(1-f) + sw[i]*f
		}
	}
	return w
}

func normalised(w []float64) []float64 {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	out := make([]float64, len(w))
	for i, x := range w {
		out[i] = x / sum
	}
	return out
}

// pickNode chooses a live node by weight with u in [0, 1); if every
// weighted node is down, any live node by u.
func pickNode(w []float64, live []bool, u float64) int {
	sum := 0.0
	for i, x := range w {
		if live[i] {
			sum += x
		}
	}
	if sum <= 0 {
		var alive []int
		for i, ok := range live {
			if ok {
				alive = append(alive, i)
			}
		}
		if len(alive) == 0 {
			return -1
		}
		return alive[min(int(u*float64(len(alive))), len(alive)-1)]
	}
	target := u * sum
	last := -1
	for i, x := range w {
		if !live[i] || x <= 0 {
			continue
		}
		last = i
		if target < x {
			return i
		}
		target -= x
	}
	return last
}
