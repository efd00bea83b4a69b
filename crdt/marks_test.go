package crdt_test

// The CRDT laws of Marks, as rapid properties on lawCases cases each.

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
)

// drawMarks builds a set from local adds, observed marks and prunes over four
// ids and a few seconds, so that sets often share ids with other expiries.
func drawMarks(t *rapid.T, label string) *crdt.Marks {
	s := &crdt.Marks{}
	for range rapid.IntRange(0, 8).Draw(t, label+" ops") {
		m := drawMark(t, label)
		switch rapid.IntRange(0, 4).Draw(t, label+" op") {
		case 0, 1:
			s.Add(m.ID, m.Expires)
		case 2, 3:
			s.Observe(m)
		default:
			s.Prune(rapid.Int64Range(0, 6).Draw(t, label+" prune at"))
		}
	}
	return s
}

func drawMark(t *rapid.T, label string) crdt.Mark {
	return crdt.Mark{
		ID:      fmt.Sprintf("code-%d", rapid.IntRange(1, 4).Draw(t, label+" id")),
		Expires: rapid.Int64Range(0, 8).Draw(t, label+" expires"),
	}
}

func mergedMarks(a, b *crdt.Marks) *crdt.Marks {
	m := a.Clone()
	m.MergeSet(b)
	return m
}

// marksModel is the reference: every id of the given sets with its latest
// expiry, less those at or before the largest horizon.
func marksModel(ss ...*crdt.Marks) map[string]int64 {
	var h int64
	for _, s := range ss {
		h = max(h, s.Horizon())
	}
	m := map[string]int64{}
	for _, s := range ss {
		for _, e := range s.Entries() {
			if e.Expires > h {
				m[e.ID] = max(m[e.ID], e.Expires)
			}
		}
	}
	return m
}

func requireMarks(t *rapid.T, law string, s *crdt.Marks, want map[string]int64) {
	t.Helper()
	es := s.Entries()
	if len(es) != len(want) || s.Len() != len(want) {
		t.Fatalf("%s: %v, want %v", law, es, want)
	}
	for i, e := range es {
		if i > 0 && es[i-1].ID >= e.ID {
			t.Fatalf("%s: entries not strictly sorted: %v", law, es)
		}
		if want[e.ID] != e.Expires {
			t.Fatalf("%s: %v, want %v", law, es, want)
		}
		if e.Expires <= s.Horizon() {
			t.Fatalf("%s: mark %+v kept at or below the horizon %d", law, e, s.Horizon())
		}
	}
}

func requireEqualMarks(t *rapid.T, law string, got, want *crdt.Marks) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: %v (horizon %d), want %v (horizon %d)", law, got.Entries(), got.Horizon(), want.Entries(), want.Horizon())
	}
}

func TestMarksMergeIsCommutativeAssociativeAndIdempotent(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		a, b, c := drawMarks(t, "a"), drawMarks(t, "b"), drawMarks(t, "c")

		ab := a.Clone()
		changed := ab.MergeSet(b)
		requireEqualMarks(t, "commutative", ab, mergedMarks(b, a))
		requireMarks(t, "merge", ab, marksModel(a, b))
		if changed == a.Equal(ab) {
			t.Fatalf("merge reported changed=%v: a = %v, a⊔b = %v", changed, a.Entries(), ab.Entries())
		}
		requireEqualMarks(t, "associative", mergedMarks(ab, c), mergedMarks(a, mergedMarks(b, c)))

		aa := a.Clone()
		if aa.MergeSet(a) {
			t.Fatalf("idempotent: merging a set with itself reported a change")
		}
		requireEqualMarks(t, "idempotent", aa, a)
		requireEqualMarks(t, "merge is an upper bound", mergedMarks(ab, a), ab)
	})
}

func TestMarksInAnyOrderEqualTheMergedSets(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		owners := make([]*crdt.Marks, 3)
		var sent []crdt.Mark
		for i := range owners {
			owners[i] = &crdt.Marks{}
		}
		for range rapid.IntRange(0, 12).Draw(t, "adds") {
			i := rapid.IntRange(0, len(owners)-1).Draw(t, "owner")
			m := drawMark(t, "add")
			if out, ok := owners[i].Add(m.ID, m.Expires); ok {
				sent = append(sent, out)
			}
		}
		want := &crdt.Marks{}
		for _, o := range owners {
			want.MergeSet(o)
		}
		got := &crdt.Marks{}
		relayed := got.Merge(drawDelivery(t, sent, "marks"))
		requireEqualMarks(t, "delivery", got, want)
		// What a node relays brings a node that knew nothing to the same set.
		again := &crdt.Marks{}
		again.Merge(relayed)
		requireEqualMarks(t, "relay", again, got)
	})
}

func TestMarksPruneThenMergeEqualsMergeThenPrune(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		a, b := drawMarks(t, "a"), drawMarks(t, "b")
		h := rapid.Int64Range(0, 8).Draw(t, "horizon")

		want := mergedMarks(a, b)
		want.Prune(h)

		left := a.Clone()
		left.Prune(h)
		left.MergeSet(b)
		requireEqualMarks(t, "prune the receiver first", left, want)

		right := b.Clone()
		right.Prune(h)
		requireEqualMarks(t, "prune the sender first", mergedMarks(a, right), want)
	})
}

func TestMarksNeverResurrectAnExpiredMark(t *testing.T) {
	checkLaw(t, func(t *rapid.T) {
		s := drawMarks(t, "s")
		h := rapid.Int64Range(1, 6).Draw(t, "horizon")
		s.Prune(h)
		for range rapid.IntRange(1, 8).Draw(t, "late messages") {
			m := drawMark(t, "late")
			switch rapid.IntRange(0, 2).Draw(t, "message") {
			case 0:
				if s.Observe(m) && m.Expires <= h {
					t.Fatalf("Observe of expired mark %+v reported a change", m)
				}
			case 1:
				if _, ok := s.Add(m.ID, m.Expires); ok != (m.Expires > s.Horizon()) {
					t.Fatalf("Add(%+v) at horizon %d reported ok=%v", m, s.Horizon(), ok)
				}
			default:
				s.MergeSet(drawMarks(t, "peer"))
			}
			if s.Horizon() < h {
				t.Fatalf("horizon went back from %d to %d", h, s.Horizon())
			}
			for _, e := range s.Entries() {
				if e.Expires <= h {
					t.Fatalf("expired mark %+v is back", e)
				}
				if !s.Has(e.ID, h) {
					t.Fatalf("Has(%q, %d) is false for a held mark", e.ID, h)
				}
			}
		}
	})
}
