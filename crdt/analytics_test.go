package crdt_test

import (
	"math"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestHistogram(t *testing.T) {
	t.Run("a duration lands in a bin whose middle is within ten percent of it", func(t *testing.T) {
		for _, sec := range []float64{1, 2, 3, 7, 20, 61, 300, 1800, 3600, 7200} {
			var h crdt.Histogram
			b := crdt.HistogramBin(sec)
			h.Bins[b]++
			h.Count++
			got := h.Quantile(0.5)
			if math.Abs(got-sec)/sec > 0.10 {
				t.Errorf("%v s reads back as %v s", sec, got)
			}
		}
	})
	t.Run("durations under a second and beyond the last bin are clamped", func(t *testing.T) {
		if b := crdt.HistogramBin(0.2); b != 0 {
			t.Errorf("0.2 s in bin %d, want 0", b)
		}
		if b := crdt.HistogramBin(1e12); b != crdt.HistogramBins-1 {
			t.Errorf("1e12 s in bin %d, want the last", b)
		}
	})
	t.Run("an empty histogram has no quantiles", func(t *testing.T) {
		var h crdt.Histogram
		if q := h.Quantile(0.9); q != 0 {
			t.Errorf("p90 of nothing = %v", q)
		}
	})
}

func TestAnalytics(t *testing.T) {
	const m = 29_000_000
	a, b := crdt.New(), crdt.New()
	ra, rb := crdt.NewReplicaID("a", 1), crdt.NewReplicaID("b", 1)
	// adder writes counts to one node's state as its replica.
	adder := func(s *crdt.State, r crdt.ReplicaID) func(k crdt.Kind, bucket, minute int64, n uint64) {
		return func(k crdt.Kind, bucket, minute int64, n uint64) {
			s.Add(crdt.Key{Room: "shop", Kind: k, Bucket: bucket, Minute: minute}, r, n)
		}
	}
	addA, addB := adder(a, ra), adder(b, rb)
	addA(crdt.ChallengesIssued, 0, m, 5)
	addB(crdt.ChallengesIssued, 0, m, 3)
	addB(crdt.ChallengesIssued, 0, m+1, 2)
	addA(crdt.ChallengesFailed, 0, m+1, 1)
	for i := 0; i < 9; i++ {
		addA(crdt.TimeInQueue, crdt.HistogramBin(60), m, 1)
	}
	addB(crdt.TimeInQueue, crdt.HistogramBin(600), m+1, 1)
	addB(crdt.Admitted, 0, m, 7) // not an analytics kind
	c := crdt.New()
	c.MergeState(a)
	c.MergeState(b)
	got := c.Analytics("shop", m, m+1)

	t.Run("counters written on two nodes add up on a third", func(t *testing.T) {
		if n := got.Counters[crdt.ChallengesIssued]; n != 10 {
			t.Errorf("challenges issued = %d, want 10", n)
		}
		if n := got.Counters[crdt.ChallengesFailed]; n != 1 {
			t.Errorf("challenges failed = %d, want 1", n)
		}
	})
	t.Run("counters are also given minute by minute", func(t *testing.T) {
		if n := got.ByMinute[0].Counters[crdt.ChallengesIssued]; n != 8 {
			t.Errorf("first minute = %d, want 8", n)
		}
		if n := got.ByMinute[1].Counters[crdt.ChallengesIssued]; n != 2 {
			t.Errorf("second minute = %d, want 2", n)
		}
	})
	t.Run("histograms merge bin by bin and give percentiles", func(t *testing.T) {
		h := got.Histograms[crdt.TimeInQueue]
		if h == nil || h.Count != 10 {
			t.Fatalf("time in queue histogram = %+v, want 10 samples", h)
		}
		if p50 := h.Quantile(0.5); math.Abs(p50-60)/60 > 0.1 {
			t.Errorf("p50 = %v s, want about 60", p50)
		}
		if p90 := h.Quantile(0.9); math.Abs(p90-60)/60 > 0.1 {
			t.Errorf("p90 = %v s, want about 60 (9 of 10 waited a minute)", p90)
		}
		if p100 := h.Quantile(1); math.Abs(p100-600)/600 > 0.1 {
			t.Errorf("max = %v s, want about 600", p100)
		}
	})
	t.Run("admission counters are not analytics", func(t *testing.T) {
		if _, ok := got.Counters[crdt.Admitted]; ok {
			t.Error("Admitted leaked into analytics")
		}
	})
	t.Run("a span outside the data reads as zero", func(t *testing.T) {
		empty := c.Analytics("shop", m+5, m+6)
		if len(empty.Counters) != 0 || len(empty.ByMinute) != 2 {
			t.Errorf("empty span = %+v", empty)
		}
	})
	t.Run("kinds have names for reports", func(t *testing.T) {
		if crdt.InfiniteQueueRefreshes.String() != "infinite_queue_refreshes" {
			t.Errorf("name = %q", crdt.InfiniteQueueRefreshes.String())
		}
	})
}

func TestTimeOnOriginMoves(t *testing.T) {
	const m = 29_000_000
	s := crdt.New()
	r := crdt.NewReplicaID("a", 1)
	add := func(k crdt.Kind, sec float64) {
		s.Add(crdt.Key{Room: "shop", Kind: k, Bucket: crdt.HistogramBin(sec), Minute: m}, r, 1)
	}
	// One session admitted, then seen at 30 s and at 300 s: it moves from
	// bin to bin and counts once, at its latest duration.
	add(crdt.TimeOnOrigin, 0)
	add(crdt.TimeOnOriginMinus, 0)
	add(crdt.TimeOnOrigin, 30)
	add(crdt.TimeOnOriginMinus, 30)
	add(crdt.TimeOnOrigin, 300)
	h := s.Analytics("shop", m, m).Histograms[crdt.TimeOnOrigin]
	t.Run("a session that moved between bins counts once, at its latest duration", func(t *testing.T) {
		if h == nil || h.Count != 1 {
			t.Fatalf("histogram = %+v, want one session", h)
		}
		if got := h.Quantile(0.5); math.Abs(got-300)/300 > 0.1 {
			t.Errorf("duration = %v s, want about 300", got)
		}
	})
	t.Run("a minus that arrives before its plus never makes a bin negative", func(t *testing.T) {
		o := crdt.New()
		o.Add(crdt.Key{Room: "shop", Kind: crdt.TimeOnOriginMinus, Bucket: crdt.HistogramBin(30), Minute: m}, r, 1)
		if h := o.Analytics("shop", m, m).Histograms[crdt.TimeOnOrigin]; h != nil && h.Count != 0 {
			t.Errorf("histogram = %+v, want empty", h)
		}
	})
}
