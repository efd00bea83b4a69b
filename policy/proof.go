package policy

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// How new visitors prove. A new visitor queued at its first request is
// counted as waiting only when it comes back with the cookie that answer set
// (its proof, ProofRefresh later), and some never do: a client that keeps no
// cookie, a bot. A place in line shown on a first answer counts those of
// the last seconds who will prove (arrivalCurves.unproved), so the node
// measures, from its own visitors, how long proofs take and how many come:
// every first answer that queues a new visitor and every proof pass through
// Decision.Count, which notes them here, along the chain.

// proofDelays is how many of the latest proofs' delays a node keeps.
const proofDelays = 64

// proofLedger counts a node's own first answers that queued a new visitor
// and the proofs that came back, with the delays of the latest proofs. It
// is shared along a chain (see ledger) and written by every request.
type proofLedger struct {
	first, proved atomic.Int64
	delay         [proofDelays]atomic.Int32 // after their first answers, milliseconds
	n             atomic.Uint64
	// own are the node's own visitors who joined a slot since the chain
	// last took them (joined), left those that left a slot's line since
	// (outOfLine), firsts its first answers that queued a new visitor
	// (firstAnswers), back the proofs since (proofsBy).
	mu     sync.Mutex
	own    []ownJoin
	left   []ownJoin
	firsts []firstAnswer
	back   []ownProof
}

// firstAnswer is a first answer the node gave that queued a new visitor:
// when the visitor came, as its token keeps it (unix milliseconds, to the
// tenth of a second; a visitor held for an allocation keeps the arrival of
// its first request, see HeldArrival), and when it was answered.
type firstAnswer struct {
	came, at int64
}

// ownProof is a proof the node counted: when its visitor's first request
// came (unix milliseconds, to the tenth of a second a token keeps), when
// the proof was counted (unix milliseconds), and whether the visitor was
// let in at it rather than joining the line.
type ownProof struct {
	came, at int64
	in       bool
}

// ownJoin is one of the node's own visitors who joined an arrival slot, or
// left its line: the slot's unix second, when in it the visitor came
// (milliseconds) and when it was counted (unix milliseconds).
type ownJoin struct {
	slot int64
	ms   int32
	at   int64
}

// maxOwnJoins bounds the joins kept for the chain between two allocations.
const maxOwnJoins = 1 << 14

// noteJoin notes one of the node's own visitors who joined the slot of unix
// second slot, having come ms into it, counted at unix millisecond at.
func (p *proofLedger) noteJoin(slot int64, ms int32, at int64) {
	noteIn(p, &p.own, ownJoin{slot: slot, ms: ms, at: at})
}

// joined takes the joins counted by unix millisecond now, which the
// snapshot of now counts, leaving the later ones for the next allocation.
func (p *proofLedger) joined(now int64) []ownJoin { return takeFrom(p, &p.own, now, ownJoin.noted) }

// noted is when o was counted.
func (o ownJoin) noted() int64 { return o.at }

// noteIn appends x to the ledger's list xs under its lock, up to
// maxOwnJoins: more between two allocations are dropped, not kept without
// bound.
func noteIn[T any](p *proofLedger, xs *[]T, x T) {
	p.mu.Lock()
	if len(*xs) < maxOwnJoins {
		*xs = append(*xs, x)
	}
	p.mu.Unlock()
}

// takeFrom takes from the ledger's list xs, under its lock, those noted
// (at) by unix millisecond now.
func takeFrom[T any](p *proofLedger, xs *[]T, now int64, at func(T) int64) []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []T
	out, *xs = takeUntil(*xs, now, at)
	return out
}

// takeUntil splits xs into those noted by unix millisecond now (at) and
// the later ones.
func takeUntil[T any](xs []T, now int64, at func(T) int64) (taken, later []T) {
	for _, x := range xs {
		if at(x) <= now {
			taken = append(taken, x)
		} else {
			later = append(later, x)
		}
	}
	return taken, later
}

// noteLeft notes one of the node's visitors that left the line (let in,
// turned away or moved to another bucket) of the slot of unix second slot,
// having come ms into it, at unix millisecond at.
func (p *proofLedger) noteLeft(slot int64, ms int32, at int64) {
	noteIn(p, &p.left, ownJoin{slot: slot, ms: ms, at: at})
}

// outOfLine takes the visitors that left a slot's line by unix millisecond
// now, leaving the later ones for the next allocation.
func (p *proofLedger) outOfLine(now int64) []ownJoin { return takeFrom(p, &p.left, now, ownJoin.noted) }

// leftBefore is how many of the node's own visitors that left the line
// since the chain's latest allocation took them (outOfLine) came before
// unix millisecond came: the allocation still counts them as waiting. One of came's own
// tenth of a second counts a half: the allocation placed the visitor in
// the middle of those of its tenth (arrivalCurves.waitingBefore), and the
// one let in is one of them fewer. Counted whole or not at all, the
// second of two who came 22 ms apart at one node, asking 20 ms after the
// first was let in, was told 1 with nobody ahead (three real processes,
// long-queue).
func (p *proofLedger) leftBefore(came int64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n float64
	for _, o := range p.left {
		switch at := o.slot*1000 + int64(o.ms); {
		case at < came:
			n++
		case at == came:
			n += 0.5
		}
	}
	return n
}

// noteFirst counts a first answer that queued a new visitor who came at
// unix millisecond came, given at unix millisecond at.
func (p *proofLedger) noteFirst(came, at int64) {
	p.first.Add(1)
	noteIn(p, &p.firsts, firstAnswer{came: came, at: at})
}

// firstAnswers takes the first answers given by unix millisecond now.
func (p *proofLedger) firstAnswers(now int64) []firstAnswer {
	return takeFrom(p, &p.firsts, now, firstAnswer.noted)
}

// noted is when f was given.
func (f firstAnswer) noted() int64 { return f.at }

// noteProof counts a proof counted at unix millisecond at, of a visitor
// whose first request came at unix millisecond came, let in at it when in.
// A first answer of the node's own is still to prove until its proof
// (arrivalCurves.unproved), so the proof is kept to close it: taken by the
// time it took alone, a visitor let in straight from its proof 90 ms
// before the next one came was still counted ahead of it, and the next,
// first in line, was told 1 (three real processes, sessions-1min).
func (p *proofLedger) noteProof(came, at int64, in bool) {
	p.proved.Add(1)
	noteIn(p, &p.back, ownProof{came: came, at: at, in: in})
}

// proofsBy takes the proofs counted by unix millisecond now.
func (p *proofLedger) proofsBy(now int64) []ownProof {
	return takeFrom(p, &p.back, now, ownProof.noted)
}

// noted is when o was counted.
func (o ownProof) noted() int64 { return o.at }

// proofsSince calls f for each proof not yet taken by an allocation, with
// a way to ask whether its first answer is not yet taken either: a look
// through those first answers, which a new visitor's place (every new
// visitor's, in a flood) asks for only where the allocation does not have
// the answer.
func (p *proofLedger) proofsSince(f func(o ownProof, firstSince func() bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.back {
		f(o, func() bool {
			return slices.ContainsFunc(p.firsts, func(fa firstAnswer) bool { return fa.came == o.came })
		})
	}
}

// noteDelay notes a proof that came d after its first answer.
func (p *proofLedger) noteDelay(d time.Duration) {
	ms := min(max(d.Milliseconds(), 0), ProofGrace*1000)
	i := p.n.Add(1) - 1
	p.delay[i%proofDelays].Store(int32(ms))
}

// delays are the latest proofs' delays, sorted (none before the first).
func (p *proofLedger) delays() []int32 {
	n := min(p.n.Load(), proofDelays)
	if n == 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = p.delay[i].Load()
	}
	slices.Sort(out)
	return out
}

// proofMark is the node's counts of first answers and proofs at one
// allocation, for the share that prove.
type proofMark struct {
	at            int64 // unix milliseconds
	first, proved int64
}

// minProofSample is the fewest first answers whose proofs measure the
// share that prove: fewer say little of it.
const minProofSample = 5

// proofRateSpan is the span over which the share of new visitors who prove
// is measured.
const proofRateSpan = 30 * time.Second

// noteProofs marks the node's counts at this look, one mark a second over
// the last proofRateSpan and a proof's longest delay, and measures the
// share of the first answers of that span, each a proof's longest delay
// before, that proved: 1 until enough were queued.
func (c *arrivalCurves) noteProofs(prev *arrivalCurves, led *ledger, nowMs int64) {
	c.delays = led.proofs.delays()
	c.proofRate = 1
	var marks []proofMark
	if prev != nil {
		c.proofRate, marks = prev.proofRate, prev.proofMarks
	}
	m := proofMark{at: nowMs, first: led.proofs.first.Load(), proved: led.proofs.proved.Load()}
	keep := nowMs - (proofRateSpan + ProofGrace*time.Second).Milliseconds()
	i := sort.Search(len(marks), func(i int) bool { return marks[i].at >= keep })
	marks = marks[max(i-1, 0):]
	if n := len(marks); n == 0 || nowMs-marks[n-1].at >= 1000 {
		marks = append(slices.Clip(marks), m)
	}
	c.proofMarks = marks
	longest := int64(ProofRefresh * 1000)
	if n := len(c.delays); n > 0 {
		longest = int64(c.delays[n-1])
	}
	at := func(t int64) proofMark {
		j := sort.Search(len(marks), func(j int) bool { return marks[j].at > t })
		return marks[max(j-1, 0)]
	}
	then := at(nowMs - proofRateSpan.Milliseconds())
	queued := at(nowMs-longest).first - at(then.at-longest).first
	if queued >= minProofSample {
		c.proofRate = min(float64(m.proved-then.proved)/float64(queued), 1)
	}
}
