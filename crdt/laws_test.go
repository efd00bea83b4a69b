package crdt_test

// The CRDT laws, as rapid properties. Each law runs on lawCases (10,000)
// generated cases in a plain `go test` (see TestMain).

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
)

// ---- GCounter ----

// drawGCounter builds a counter from local increments (zero included) and
// merged entries of up to five replicas.
func drawGCounter(t *rapid.T, label string) crdt.GCounter {
	var g crdt.GCounter
	for range rapid.IntRange(0, 6).Draw(t, label+" ops") {
		r := crdt.ReplicaID(rapid.IntRange(1, 5).Draw(t, label+" replica"))
		v := rapid.Uint64Range(0, 4).Draw(t, label+" n")
		if rapid.Bool().Draw(t, label+" local") {
			g.Add(r, v)
		} else {
			g.Observe(r, v)
		}
	}
	return g
}

// gcounterModel is the reference: the entry-wise max of the given counters.
func gcounterModel(gs ...*crdt.GCounter) map[crdt.ReplicaID]uint64 {
	m := map[crdt.ReplicaID]uint64{}
	for _, g := range gs {
		for _, c := range g.Entries() {
			m[c.Replica] = max(m[c.Replica], c.N)
		}
	}
	return m
}

// requireGCounter checks g against a model: entries sorted, no zero entry, and
// the same values.
func requireGCounter(t *rapid.T, law string, g *crdt.GCounter, want map[crdt.ReplicaID]uint64) {
	t.Helper()
	es := g.Entries()
	var sum uint64
	n := 0
	for i, c := range es {
		if i > 0 && es[i-1].Replica >= c.Replica {
			t.Fatalf("%s: entries not strictly sorted by replica: %v", law, es)
		}
		if c.N == 0 {
			t.Fatalf("%s: zero entry stored for replica %d: %v", law, c.Replica, es)
		}
	}
	for r, v := range want {
		if got := g.Get(r); got != v {
			t.Fatalf("%s: replica %d = %d, want %d (entries %v)", law, r, got, v, es)
		}
		sum += v
		if v > 0 {
			n++
		}
	}
	if g.Len() != n || g.Value() != sum {
		t.Fatalf("%s: Len %d Value %d, want %d and %d (entries %v)", law, g.Len(), g.Value(), n, sum, es)
	}
}

func mergeG(a, b crdt.GCounter) (crdt.GCounter, bool) {
	m := a.Clone()
	changed := m.Merge(b)
	return m, changed
}

func TestGCounterMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		a, b, c := drawGCounter(t, "a"), drawGCounter(t, "b"), drawGCounter(t, "c")

		ab, changed := mergeG(a, b)
		ba, _ := mergeG(b, a)
		if !ab.Equal(&ba) {
			t.Fatalf("commutative: a⊔b = %v, b⊔a = %v", ab.Entries(), ba.Entries())
		}
		requireGCounter(t, "merge", &ab, gcounterModel(&a, &b))
		if changed == a.Equal(&ab) {
			t.Fatalf("merge reported changed=%v but a=%v, a⊔b=%v", changed, a.Entries(), ab.Entries())
		}

		abc, _ := mergeG(ab, c)
		bc, _ := mergeG(b, c)
		a_bc, _ := mergeG(a, bc)
		if !abc.Equal(&a_bc) {
			t.Fatalf("associative: (a⊔b)⊔c = %v, a⊔(b⊔c) = %v", abc.Entries(), a_bc.Entries())
		}

		aa, changed := mergeG(a, a)
		if changed || !aa.Equal(&a) {
			t.Fatalf("idempotent: a⊔a = %v (changed %v), a = %v", aa.Entries(), changed, a.Entries())
		}
		self := a.Clone()
		if self.Merge(self) || !self.Equal(&a) {
			t.Fatalf("idempotent: merging a counter into itself changed it")
		}
	})
}

func TestGCounterEntriesInAnyOrderEqualTheMergedCounters(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		owners := make([]crdt.GCounter, 4)
		var entries []crdt.Count
		var total uint64
		for range rapid.IntRange(0, 12).Draw(t, "adds") {
			i := rapid.IntRange(0, len(owners)-1).Draw(t, "owner")
			n := rapid.Uint64Range(0, 3).Draw(t, "n")
			r := crdt.ReplicaID(i + 1)
			entries = append(entries, crdt.Count{Replica: r, N: owners[i].Add(r, n)})
			total += n
		}
		var want crdt.GCounter
		for _, o := range owners {
			want.Merge(o)
		}
		var got crdt.GCounter
		for _, e := range drawDelivery(t, entries, "entries") {
			before := got.Get(e.Replica)
			if changed := got.Observe(e.Replica, e.N); changed != (e.N > before) {
				t.Fatalf("Observe(%d, %d) over %d reported changed=%v", e.Replica, e.N, before, changed)
			}
		}
		if !got.Equal(&want) {
			t.Fatalf("delivered entries %v, merged counters %v", got.Entries(), want.Entries())
		}
		requireGCounter(t, "delivery", &got, gcounterModel(&owners[0], &owners[1], &owners[2], &owners[3]))
		if got.Value() != total {
			t.Fatalf("value %d, want the sum of all increments %d", got.Value(), total)
		}
	})
}

// ---- PNCounter ----

func drawPN(t *rapid.T, label string) crdt.PNCounter {
	var p crdt.PNCounter
	for range rapid.IntRange(0, 6).Draw(t, label+" ops") {
		r := crdt.ReplicaID(rapid.IntRange(1, 4).Draw(t, label+" replica"))
		n := rapid.Uint64Range(0, 3).Draw(t, label+" n")
		switch rapid.IntRange(0, 2).Draw(t, label+" op") {
		case 0:
			p.Inc(r, n)
		case 1:
			p.Dec(r, n)
		default:
			var o crdt.PNCounter
			o.P.Observe(r, n)
			o.N.Observe(r, rapid.Uint64Range(0, 3).Draw(t, label+" minus"))
			p.Merge(o)
		}
	}
	return p
}

func clonePN(p crdt.PNCounter) crdt.PNCounter {
	return crdt.PNCounter{P: p.P.Clone(), N: p.N.Clone()}
}

func mergePN(a, b crdt.PNCounter) (crdt.PNCounter, bool) {
	m := clonePN(a)
	changed := m.Merge(b)
	return m, changed
}

func equalPN(a, b *crdt.PNCounter) bool { return a.P.Equal(&b.P) && a.N.Equal(&b.N) }

func showPN(p crdt.PNCounter) string {
	return fmt.Sprintf("{P %v N %v = %d}", p.P.Entries(), p.N.Entries(), p.Value())
}

func TestPNCounterMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		a, b, c := drawPN(t, "a"), drawPN(t, "b"), drawPN(t, "c")

		ab, changed := mergePN(a, b)
		ba, _ := mergePN(b, a)
		if !equalPN(&ab, &ba) || ab.Value() != ba.Value() {
			t.Fatalf("commutative: a⊔b = %s, b⊔a = %s", showPN(ab), showPN(ba))
		}
		if changed == equalPN(&a, &ab) {
			t.Fatalf("merge reported changed=%v: a = %s, a⊔b = %s", changed, showPN(a), showPN(ab))
		}
		requireGCounter(t, "plus side", &ab.P, gcounterModel(&a.P, &b.P))
		requireGCounter(t, "minus side", &ab.N, gcounterModel(&a.N, &b.N))

		abc, _ := mergePN(ab, c)
		bc, _ := mergePN(b, c)
		a_bc, _ := mergePN(a, bc)
		if !equalPN(&abc, &a_bc) {
			t.Fatalf("associative: (a⊔b)⊔c = %s, a⊔(b⊔c) = %s", showPN(abc), showPN(a_bc))
		}

		aa, changed := mergePN(a, a)
		if changed || !equalPN(&aa, &a) {
			t.Fatalf("idempotent: a⊔a = %s (changed %v), a = %s", showPN(aa), changed, showPN(a))
		}
	})
}

func TestPNCounterEntriesInAnyOrderEqualTheMergedCounters(t *testing.T) {
	type pnEntry struct {
		minus bool
		c     crdt.Count
	}
	checkLaw(t, func(t *rapid.T) {
		owners := make([]crdt.PNCounter, 3)
		var entries []pnEntry
		var net int64
		for range rapid.IntRange(0, 12).Draw(t, "ops") {
			i := rapid.IntRange(0, len(owners)-1).Draw(t, "owner")
			n := rapid.Uint64Range(1, 3).Draw(t, "n")
			r := crdt.ReplicaID(i + 1)
			if rapid.Bool().Draw(t, "minus") {
				owners[i].Dec(r, n)
				entries = append(entries, pnEntry{true, crdt.Count{Replica: r, N: owners[i].N.Get(r)}})
				net -= int64(n)
			} else {
				owners[i].Inc(r, n)
				entries = append(entries, pnEntry{false, crdt.Count{Replica: r, N: owners[i].P.Get(r)}})
				net += int64(n)
			}
		}
		var want crdt.PNCounter
		for _, o := range owners {
			want.Merge(o)
		}
		var got crdt.PNCounter
		for _, e := range drawDelivery(t, entries, "entries") {
			if e.minus {
				got.N.Observe(e.c.Replica, e.c.N)
			} else {
				got.P.Observe(e.c.Replica, e.c.N)
			}
		}
		if !equalPN(&got, &want) {
			t.Fatalf("delivered %s, merged %s", showPN(got), showPN(want))
		}
		if got.Value() != net {
			t.Fatalf("value %d, want the net of all operations %d", got.Value(), net)
		}
	})
}

// ---- LWW ----

// drawLWW draws a register write. Stamps and replicas come from tiny ranges
// so that equal stamps are common; the value is a function of (stamp,
// replica), since one replica never writes two values under one stamp.
func drawLWW(t *rapid.T, label string) crdt.LWW[string] {
	l := crdt.LWW[string]{
		Stamp: crdt.HLC{
			Wall:    rapid.Int64Range(1, 2).Draw(t, label+" wall"),
			Logical: rapid.Uint32Range(0, 1).Draw(t, label+" logical"),
		},
		Replica: crdt.ReplicaID(rapid.IntRange(1, 3).Draw(t, label+" replica")),
	}
	l.Value = fmt.Sprintf("%d.%d/r%d", l.Stamp.Wall, l.Stamp.Logical, l.Replica)
	return l
}

func mergeLWW(a, b crdt.LWW[string]) (crdt.LWW[string], bool) {
	changed := a.Merge(b)
	return a, changed
}

// lwwWinner is the reference: the largest (wall, logical, replica).
func lwwWinner(ls ...crdt.LWW[string]) crdt.LWW[string] {
	return slices.MaxFunc(ls, func(a, b crdt.LWW[string]) int {
		return cmp.Or(cmp.Compare(a.Stamp.Wall, b.Stamp.Wall), cmp.Compare(a.Stamp.Logical, b.Stamp.Logical), cmp.Compare(a.Replica, b.Replica))
	})
}

func TestLWWMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		a, b, c := drawLWW(t, "a"), drawLWW(t, "b"), drawLWW(t, "c")

		ab, changed := mergeLWW(a, b)
		ba, _ := mergeLWW(b, a)
		if ab != ba {
			t.Fatalf("commutative: a⊔b = %+v, b⊔a = %+v", ab, ba)
		}
		if ab != lwwWinner(a, b) {
			t.Fatalf("a⊔b = %+v, want the larger (stamp, replica) %+v", ab, lwwWinner(a, b))
		}
		if changed != (ab != a) {
			t.Fatalf("merge reported changed=%v: a = %+v, a⊔b = %+v", changed, a, ab)
		}
		if a != b && a.Newer(b) == b.Newer(a) {
			t.Fatalf("Newer is not a strict order: %+v and %+v", a, b)
		}

		abc, _ := mergeLWW(ab, c)
		bc, _ := mergeLWW(b, c)
		a_bc, _ := mergeLWW(a, bc)
		if abc != a_bc {
			t.Fatalf("associative: (a⊔b)⊔c = %+v, a⊔(b⊔c) = %+v", abc, a_bc)
		}

		aa, changed := mergeLWW(a, a)
		if changed || aa != a {
			t.Fatalf("idempotent: a⊔a = %+v (changed %v)", aa, changed)
		}
	})
}

func TestLWWWritesInAnyOrderSettleOnTheLargestStamp(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		writes := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) crdt.LWW[string] { return drawLWW(t, "write") }), 1, 8).Draw(t, "writes")
		var got crdt.LWW[string]
		for _, w := range drawDelivery(t, writes, "writes") {
			before := got
			if changed := got.Merge(w); changed != (got != before) {
				t.Fatalf("Merge(%+v) over %+v reported changed=%v", w, before, changed)
			}
		}
		if want := lwwWinner(writes...); got != want {
			t.Fatalf("settled on %+v, want %+v", got, want)
		}
	})
}

// ---- State ----

func TestStateMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 3, true)
		a, b, d := c.states[0], c.states[1], c.states[2]

		requireEqual(t, "commutative", mergedOf(a, b), mergedOf(b, a))
		requireEqual(t, "associative", mergedOf(mergedOf(a, b), d), mergedOf(a, mergedOf(b, d)))
		requireEqual(t, "idempotent", mergedOf(a, a), a)
		self := a.Clone()
		self.MergeState(self)
		requireEqual(t, "idempotent (merge into itself)", self, a)
		requireEqual(t, "merge is an upper bound", mergedOf(mergedOf(a, b), a), mergedOf(a, b))
	})
}

func TestStateDeltasInAnyOrderEqualMergingTheFullStates(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 3, true)
		want := c.merged()

		// Every delta the operations produced, shuffled, with duplicates,
		// delivered in random batches.
		got := crdt.New()
		entries := drawDelivery(t, c.entries, "entries")
		regs := drawDelivery(t, c.regs, "registers")
		for len(entries) > 0 || len(regs) > 0 {
			ne := rapid.IntRange(0, len(entries)).Draw(t, "batch entries")
			nr := rapid.IntRange(0, len(regs)).Draw(t, "batch registers")
			got.Merge(crdt.Delta{Entries: entries[:ne], Registers: regs[:nr]})
			entries, regs = entries[ne:], regs[nr:]
		}
		// Deltas carry no horizon; the merged states do. Cells below the
		// largest horizon are gone from the merged picture, so prune to it.
		got.Prune(c.maxHorizon())
		requireEqual(t, "deltas", got, want)

		// The same holds for the full states shipped as deltas (push-pull).
		var full crdt.Delta
		for _, s := range c.states {
			d := s.Full()
			full.Entries = append(full.Entries, d.Entries...)
			full.Registers = append(full.Registers, d.Registers...)
		}
		got = crdt.New()
		for _, e := range drawDelivery(t, full.Entries, "full entries") {
			got.Apply(e)
		}
		for _, r := range drawDelivery(t, full.Registers, "full registers") {
			got.ApplyRegister(r)
		}
		got.Prune(c.maxHorizon())
		requireEqual(t, "full states as deltas", got, want)
	})
}

func TestStatePruneThenMergeEqualsMergeThenPrune(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 2, true)
		a, b := c.states[0], c.states[1]
		h := base + rapid.Int64Range(-1, 6).Draw(t, "horizon")

		want := mergedOf(a, b)
		want.Prune(h)

		left := a.Clone()
		left.Prune(h)
		left.MergeState(b)
		requireEqual(t, "prune the receiver first", left, want)

		right := b.Clone()
		right.Prune(h)
		requireEqual(t, "prune the sender first", mergedOf(a, right), want)

		// With deltas instead of full states (deltas carry no horizon).
		viaDelta := a.Clone()
		viaDelta.Prune(h)
		viaDelta.Merge(b.Full())
		want = a.Clone()
		want.Merge(b.Full())
		want.Prune(h)
		requireEqual(t, "prune before a delta", viaDelta, want)
	})
}

func TestStateNeverResurrectsAPrunedCell(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 3, false)
		s := c.states[0].Clone()
		h := base + rapid.Int64Range(1, 5).Draw(t, "horizon")
		s.Prune(h)

		requireNothingBelow := func(when string) {
			t.Helper()
			if s.Horizon() < h {
				t.Fatalf("%s: horizon went back from %d to %d", when, h-base, s.Horizon()-base)
			}
			for _, e := range s.Full().Entries {
				if e.Key.Minute < h {
					t.Fatalf("%s: pruned cell %+v is back with value %d", when, e.Key, e.Value)
				}
			}
		}
		requireNothingBelow("after Prune")

		// Late messages of every shape: single entries, deltas, full
		// states of nodes that have not pruned, and local writes.
		for range rapid.IntRange(1, 8).Draw(t, "late messages") {
			switch rapid.IntRange(0, 3).Draw(t, "message") {
			case 0:
				if len(c.entries) > 0 {
					e := rapid.SampledFrom(c.entries).Draw(t, "entry")
					if s.Apply(e) && e.Key.Minute < h {
						t.Fatalf("Apply of pruned cell %+v reported a change", e.Key)
					}
				}
			case 1:
				p := rapid.SampledFrom(c.states).Draw(t, "peer")
				for _, e := range s.Merge(p.Full()).Entries {
					if e.Key.Minute < h {
						t.Fatalf("Merge relays pruned cell %+v", e.Key)
					}
				}
			case 2:
				s.MergeState(rapid.SampledFrom(c.states).Draw(t, "peer"))
			default:
				k := drawKey(t)
				if _, ok := s.Add(k, 1, 1); ok != (k.Minute >= h) {
					t.Fatalf("Add(%+v) below horizon %d reported ok=%v", k, h-base, ok)
				}
			}
			requireNothingBelow("after a late message")
		}
	})
}

func TestStateMergeReturnsExactlyWhatChanged(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 3, true)
		a := c.states[0].Clone()
		before := a.Clone()
		// A third node that was in sync with a (it may know more).
		third := mergedOf(c.states[2], a)

		// Any delta: produced deltas and full states of peers, mixed.
		var d crdt.Delta
		if len(c.entries) > 0 {
			d.Entries = rapid.SliceOfN(rapid.SampledFrom(c.entries), 0, 10).Draw(t, "entries")
		}
		if len(c.regs) > 0 {
			d.Registers = rapid.SliceOfN(rapid.SampledFrom(c.regs), 0, 4).Draw(t, "registers")
		}
		full := c.states[1].Full()
		d.Entries = append(d.Entries, full.Entries...)
		d.Registers = append(d.Registers, full.Registers...)
		d.Entries = rapid.Permutation(d.Entries).Draw(t, "entry order")
		d.Registers = rapid.Permutation(d.Registers).Draw(t, "register order")

		out := a.Merge(d)

		// Every relayed item is a change for a node that was where a was.
		relay := before.Merge(out)
		if len(relay.Entries) != len(out.Entries) || len(relay.Registers) != len(out.Registers) {
			t.Fatalf("Merge returned %d entries and %d registers, but only %d and %d of them change the state it started from",
				len(out.Entries), len(out.Registers), len(relay.Entries), len(relay.Registers))
		}
		// Nothing else was needed: relaying converges that node.
		requireEqual(t, "relay converges", before, a)
		if rest := before.Merge(d); !rest.Empty() {
			t.Fatalf("Merge left out %d entries and %d registers that change the state", len(rest.Entries), len(rest.Registers))
		}
		// And a node that knew at least what a knew ends up knowing at
		// least what a knows now.
		third.Merge(out)
		requireEqual(t, "relay reaches a third node", mergedOf(third, a), third)
	})
}

// TestSnapshotTotalsNeverGoNegative moves sessions and queued visitors from
// minute to minute, each move written by whichever node saw the request, and
// delivers the resulting entries to a fresh node in a random order with
// duplicates.
func TestSnapshotTotalsNeverGoNegative(t *testing.T) {
	const room = "tickets"
	checkLaw(t, func(t *rapid.T) {
		const nodes = 3
		now := base + 10
		w := crdt.Windows{Waiting: crdt.DefaultWaitingWindow, History: 3, WaitingBy: true}
		nowSec := now*60 + rapid.Int64Range(0, 59).Draw(t, "second")
		ids := []crdt.ReplicaID{11, 22, 33}
		writers := make([]*crdt.State, nodes)
		for i := range writers {
			writers[i] = crdt.New()
		}
		var entries []crdt.Entry
		add := func(node int, k crdt.Key) {
			e, ok := writers[node].Add(k, ids[node], 1)
			if !ok {
				t.Fatalf("Add(%+v) refused", k)
			}
			entries = append(entries, e)
		}
		node := func() int { return rapid.IntRange(0, nodes-1).Draw(t, "node") }

		// A visitor is counted in one minute at a time; each later request
		// moves it, possibly to the minute after now (a peer whose clock
		// runs ahead). Ending (revocation, or leaving the queue) adds to
		// the minus side only.
		visit := func(plus, minus crdt.Kind, bucket int64, first int64) (int64, bool) {
			k := func(kind crdt.Kind, m int64) crdt.Key {
				return crdt.Key{Room: room, Kind: kind, Bucket: bucket, Minute: m}
			}
			m := first
			add(node(), k(plus, m))
			for range rapid.IntRange(0, 2).Draw(t, "moves") {
				next := m + rapid.Int64Range(1, 3).Draw(t, "later by")
				if next > now+1 {
					break
				}
				n := node()
				add(n, k(minus, m))
				add(n, k(plus, next))
				m = next
			}
			if rapid.IntRange(0, 3).Draw(t, "ends") == 0 {
				add(node(), k(minus, m))
				return m, false
			}
			return m, true
		}

		// A session is counted in the cell of its expiry second; each
		// renewal moves it to a later one.
		session := func(first int64) (int64, bool) {
			k := func(kind crdt.Kind, e int64) crdt.Key {
				return crdt.Key{Room: room, Kind: kind, Bucket: e, Minute: e / 60}
			}
			e := first
			add(node(), k(crdt.SessionPlus, e))
			for range rapid.IntRange(0, 2).Draw(t, "renewals") {
				next := e + 5*rapid.Int64Range(1, 24).Draw(t, "later by")
				n := node()
				add(n, k(crdt.SessionMinus, e))
				add(n, k(crdt.SessionPlus, next))
				e = next
			}
			if rapid.IntRange(0, 3).Draw(t, "revoked") == 0 {
				add(node(), k(crdt.SessionMinus, e))
				return e, false
			}
			return e, true
		}

		var wantActive int64
		wantWaiting := map[int64]int64{}
		for range rapid.IntRange(0, 4).Draw(t, "sessions") {
			e, live := session(nowSec + rapid.Int64Range(-300, 300).Draw(t, "expiry"))
			if live && e > nowSec {
				wantActive++
			}
		}
		for range rapid.IntRange(0, 4).Draw(t, "queued visitors") {
			b := now - rapid.Int64Range(0, 7).Draw(t, "arrival")
			m, live := visit(crdt.WaitingPlus, crdt.WaitingMinus, b, b)
			if live && m > now-int64(w.Waiting) {
				wantWaiting[b]++
			}
		}

		s := crdt.New()
		for _, e := range drawDelivery(t, entries, "entries") {
			s.Apply(e)
			snap := s.Snapshot(room, nowSec, w)
			if snap.Active < 0 || snap.TotalWaiting < 0 {
				t.Fatalf("negative total: active %d, waiting %d", snap.Active, snap.TotalWaiting)
			}
			var sum int64
			for i, bc := range snap.Waiting {
				if bc.N <= 0 {
					t.Fatalf("bucket %d listed with %d waiting", bc.Bucket-base, bc.N)
				}
				if i > 0 && snap.Waiting[i-1].Bucket >= bc.Bucket {
					t.Fatalf("buckets not sorted oldest first: %v", snap.Waiting)
				}
				sum += bc.N
			}
			if sum != snap.TotalWaiting {
				t.Fatalf("TotalWaiting %d, but the buckets sum to %d", snap.TotalWaiting, sum)
			}
			for i, c := range snap.WaitingBy {
				if !(c.N > 0) || (i > 0 && snap.WaitingBy[i-1].Replica >= c.Replica) {
					t.Fatalf("waiting by replica not positive and sorted: %v", snap.WaitingBy)
				}
			}
			if snap.TotalWaiting == 0 && len(snap.WaitingBy) > 0 {
				t.Fatalf("nobody waiting, but waiting by replica %v", snap.WaitingBy)
			}
		}

		snap := s.Snapshot(room, nowSec, w)
		if snap.Active != wantActive {
			t.Fatalf("active %d, want %d", snap.Active, wantActive)
		}
		var want []crdt.BucketCount
		var total int64
		for b, n := range wantWaiting {
			want = append(want, crdt.BucketCount{Bucket: b, N: n})
			total += n
		}
		slices.SortFunc(want, func(a, b crdt.BucketCount) int { return cmp.Compare(a.Bucket, b.Bucket) })
		if !slices.Equal(snap.Waiting, want) || snap.TotalWaiting != total {
			t.Fatalf("waiting %v (total %d), want %v (total %d)", snap.Waiting, snap.TotalWaiting, want, total)
		}
	})
}

// ---- Data-center aggregates ----

// The data center "east" whose replicas write, and "west", whose node reads
// east's aggregates as every node of another data center does.
const (
	eastDC = "east"
	westDC = "west"
)

// dcKeys are the cells the data-center histories write, few so that the
// replicas often share one.
var dcKeys = []crdt.Key{
	{Room: "tickets", Kind: crdt.Admitted, Minute: base + 1},
	{Room: "tickets", Kind: crdt.WaitingPlus, Bucket: base, Minute: base + 1},
	{Room: "vaccine", Kind: crdt.Arrivals, Minute: base + 2},
}

// dcWorld is one data center's history: one State per replica, written
// only through the public operations; which replicas are dead, the side of
// a split each is on; and every delta a carrier sent across.
type dcWorld struct {
	ids    []crdt.ReplicaID
	states []*crdt.State
	dead   []bool
	side   []int
	sent   []crdt.Delta
}

func newDCWorld(t *rapid.T) *dcWorld {
	w := &dcWorld{}
	for i := range rapid.IntRange(2, 5).Draw(t, "replicas") {
		w.ids = append(w.ids, crdt.ReplicaID(100+i))
		s := crdt.New()
		s.SetDatacenter(eastDC)
		w.states = append(w.states, s)
	}
	w.dead = make([]bool, len(w.ids))
	w.side = make([]int, len(w.ids))
	return w
}

// alive lists the live replicas, by index.
func (w *dcWorld) alive() []int {
	var out []int
	for i, d := range w.dead {
		if !d {
			out = append(out, i)
		}
	}
	return out
}

// members are the replicas replica i reaches: the live ones on its side.
func (w *dcWorld) members(i int) []crdt.ReplicaID {
	var out []crdt.ReplicaID
	for _, j := range w.alive() {
		if w.side[j] == w.side[i] {
			out = append(out, w.ids[j])
		}
	}
	return out
}

// carry has replica i write east's aggregates as its carrier and keeps what
// it would send.
func (w *dcWorld) carry(i int) {
	w.sent = append(w.sent, w.states[i].Carry(eastDC, w.members(i), nil))
}

// run draws steps operations: local increments, syncs within a side,
// carriers' writes, splits, heals and crashes (one replica always lives).
func (w *dcWorld) run(t *rapid.T, steps int, splits bool) {
	for range steps {
		live := w.alive()
		i := rapid.SampledFrom(live).Draw(t, "replica")
		switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
		case op < 4:
			k := rapid.SampledFrom(dcKeys).Draw(t, "key")
			w.states[i].Add(k, w.ids[i], rapid.Uint64Range(1, 3).Draw(t, "n"))
		case op < 7:
			j := rapid.SampledFrom(live).Draw(t, "peer")
			if w.side[i] == w.side[j] {
				w.states[i].MergeState(w.states[j])
			}
		case op < 8:
			w.carry(i)
		case op < 9 && splits:
			for _, j := range live {
				w.side[j] = rapid.IntRange(0, 1).Draw(t, "side")
			}
		case op < 9:
			clear(w.side)
		case len(live) > 1:
			w.dead[i] = true
		}
	}
}

// converge syncs every live replica on each side with every other on it
// until they hold the same entries.
func (w *dcWorld) converge() {
	for range 2 {
		for _, i := range w.alive() {
			for _, j := range w.alive() {
				if w.side[i] == w.side[j] {
					w.states[i].MergeState(w.states[j])
				}
			}
		}
	}
}

// truth is the true sum of cell k: each replica's own entry, the largest
// any replica holds of it.
func (w *dcWorld) truth(k crdt.Key) uint64 {
	var sum uint64
	for i, r := range w.ids {
		sum += w.states[i].Get(k, r)
	}
	return sum
}

// known is the sum of cell k over the largest entry of each replica that
// a live replica holds: what the data center can still tell of itself.
func (w *dcWorld) known(k crdt.Key) uint64 {
	var sum uint64
	for _, r := range w.ids {
		var v uint64
		for _, i := range w.alive() {
			v = max(v, w.states[i].Get(k, r))
		}
		sum += v
	}
	return sum
}

// reader is a node of west that heard the given deltas of east's carriers.
func reader(ds []crdt.Delta) *crdt.State {
	s := crdt.New()
	s.SetDatacenter(westDC)
	for _, d := range ds {
		s.Merge(d)
	}
	return s
}

func TestAggregateNeverExceedsTheTrueSum(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		w := newDCWorld(t)
		w.run(t, rapid.IntRange(0, 40).Draw(t, "steps"), true)
		// Whatever part of the carriers' writes reached it, in any order.
		heard := rapid.SliceOfDistinct(rapid.IntRange(0, max(len(w.sent)-1, 0)), rapid.ID[int]).Draw(t, "heard")
		var ds []crdt.Delta
		for _, i := range heard {
			if i < len(w.sent) {
				ds = append(ds, w.sent[i])
			}
		}
		r := reader(drawDelivery(t, ds, "deltas"))
		for _, k := range dcKeys {
			if got, truth := r.Value(k), w.truth(k); got > truth {
				t.Fatalf("%+v: west reads %d of east, more than the true sum %d", k, got, truth)
			}
		}
	})
}

func TestAggregateConvergesOnTheTrueSumOnceTheMembersHave(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		w := newDCWorld(t)
		w.run(t, rapid.IntRange(0, 40).Draw(t, "steps"), true)
		clear(w.side)
		w.converge()
		w.carry(rapid.SampledFrom(w.alive()).Draw(t, "carrier"))
		r := reader(drawDelivery(t, w.sent, "deltas"))
		w.requireWhole(t, r, "the converged east")
	})
}

// requireWhole checks that r reads every cell of east at no less than what
// east's live replicas hold (and so, while none died, exactly the true
// sum): a replica that died may have carried counts it never shared.
func (w *dcWorld) requireWhole(t *rapid.T, r *crdt.State, what string) {
	t.Helper()
	for _, k := range dcKeys {
		got, known, truth := r.Value(k), w.known(k), w.truth(k)
		if got < known || got > truth {
			t.Fatalf("%+v: west reads %d of %s, whose live replicas hold %d and whose true sum is %d", k, got, what, known, truth)
		}
	}
}

func TestAggregateLosesNothingWhenItsCarrierDies(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		w := newDCWorld(t)
		w.run(t, rapid.IntRange(0, 30).Draw(t, "steps"), false)
		live := w.alive()
		if len(live) < 2 {
			return
		}
		first := rapid.SampledFrom(live).Draw(t, "carrier that dies")
		w.carry(first)
		before := reader(w.sent)
		w.dead[first] = true
		// Another member that has the dead carrier's cells takes over.
		next := rapid.SampledFrom(w.alive()).Draw(t, "next carrier")
		w.states[next].MergeState(w.states[first])
		w.carry(next)
		after := reader(drawDelivery(t, w.sent, "deltas"))
		for _, k := range dcKeys {
			if got, was := after.Value(k), before.Value(k); got < was {
				t.Fatalf("%+v: west read %d of east from the first carrier, %d once the next took over", k, was, got)
			}
		}
	})
}

func TestAggregateLosesNothingWhenTheDatacenterSplits(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		w := newDCWorld(t)
		w.run(t, rapid.IntRange(0, 20).Draw(t, "steps before"), false)
		// Split the live replicas into two sides, each with one at least;
		// both go on counting, syncing and carrying on their own.
		live := w.alive()
		if len(live) < 2 {
			return
		}
		cut := rapid.IntRange(1, len(live)-1).Draw(t, "cut")
		for n, i := range rapid.Permutation(live).Draw(t, "sides") {
			w.side[i] = min(n/cut, 1)
		}
		w.run(t, rapid.IntRange(0, 30).Draw(t, "steps during"), false)
		// While the split lasts, once each side has converged and its
		// carrier has written, west reads every replica's latest count:
		// the sides' partial sums add up instead of hiding each other.
		w.converge()
		for s := 0; s <= 1; s++ {
			for _, i := range w.alive() {
				if w.side[i] == s {
					w.carry(i)
					break
				}
			}
		}
		r := reader(drawDelivery(t, w.sent, "deltas"))
		w.requireWhole(t, r, "the split east")
	})
}

// drawDCReader is a node of west: its own replica's entries, and a random
// part of east's carriers' writes.
func drawDCReader(t *rapid.T, w *dcWorld, label string) *crdt.State {
	s := crdt.New()
	s.SetDatacenter(westDC)
	for range rapid.IntRange(0, 3).Draw(t, label+" own adds") {
		s.Add(rapid.SampledFrom(dcKeys).Draw(t, label+" key"), 7, 1)
	}
	for _, d := range w.sent {
		if rapid.Bool().Draw(t, label+" heard") {
			s.Merge(d)
		}
	}
	if rapid.IntRange(0, 3).Draw(t, label+" prunes") == 0 {
		s.Prune(base + rapid.Int64Range(0, 2).Draw(t, label+" horizon"))
	}
	return s
}

func TestAggregateMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		w := newDCWorld(t)
		w.run(t, rapid.IntRange(0, 30).Draw(t, "steps"), true)
		a, b, c := drawDCReader(t, w, "a"), drawDCReader(t, w, "b"), drawDCReader(t, w, "c")

		requireEqual(t, "commutative", mergedOf(a, b), mergedOf(b, a))
		requireEqual(t, "associative", mergedOf(mergedOf(a, b), c), mergedOf(a, mergedOf(b, c)))
		requireEqual(t, "idempotent", mergedOf(a, a), a)
		// A full state sent as a delta (with its horizon, which push-pull
		// carries beside it) merges like the state itself.
		viaDelta := a.Clone()
		viaDelta.Merge(b.Full())
		viaDelta.Prune(b.Horizon())
		requireEqual(t, "full state as a delta", viaDelta, mergedOf(a, b))
		// Reading commutes too: the figure does not depend on the order.
		for _, k := range dcKeys {
			if x, y := mergedOf(a, b).Value(k), mergedOf(b, a).Value(k); x != y {
				t.Fatalf("%+v: a⊔b reads %d, b⊔a reads %d", k, x, y)
			}
		}
	})
}
