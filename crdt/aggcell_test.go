package crdt

import (
	"testing"

	"pgregory.net/rapid"
)

// TestAggCellIsAMaxMap holds the packed cell to its model, a map of index
// to the largest value observed, through single observes and batch merges.
func TestAggCellIsAMaxMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c aggCell
		model := map[uint32]uint64{}
		idx := rapid.Custom(func(t *rapid.T) uint32 {
			// Mostly neighbours, so that runs form and split; now and then
			// far off.
			if rapid.IntRange(0, 9).Draw(t, "far") == 0 {
				return rapid.Uint32().Draw(t, "any index")
			}
			return rapid.Uint32Range(0, 40).Draw(t, "near index")
		})
		val := rapid.OneOf(rapid.Uint64Range(0, 300), rapid.Uint64())
		for range rapid.IntRange(0, 60).Draw(t, "ops") {
			if rapid.Bool().Draw(t, "batch") {
				var in []aggEntry
				for range rapid.IntRange(0, 6).Draw(t, "batch size") {
					in = append(in, aggEntry{idx.Draw(t, "idx"), val.Draw(t, "v")})
				}
				want := 0
				for _, e := range sortAggEntries(append([]aggEntry(nil), in...)) {
					if e.v > model[e.idx] {
						want++
					}
				}
				changed := c.merge(sortAggEntries(in))
				if len(changed) != want {
					t.Fatalf("merge reported %d changed, want %d", len(changed), want)
				}
				for _, e := range changed {
					model[e.idx] = e.v
				}
				continue
			}
			i, v := idx.Draw(t, "idx"), val.Draw(t, "v")
			if got, want := c.observe(i, v), v > model[i]; got != want {
				t.Fatalf("observe(%d, %d) over %d reported %v", i, v, model[i], got)
			}
			model[i] = max(model[i], v)
		}
		n := 0
		var prev int64 = -1
		c.each(func(i uint32, v uint64) {
			if int64(i) <= prev {
				t.Fatalf("index %d after %d", i, prev)
			}
			prev = int64(i)
			if v == 0 || model[i] != v {
				t.Fatalf("entry %d = %d, model %d", i, v, model[i])
			}
			n++
		})
		want := 0
		for i, v := range model {
			if v > 0 {
				want++
			}
			if got := c.get(i); got != v {
				t.Fatalf("get(%d) = %d, want %d", i, got, v)
			}
		}
		if n != want || c.count() != want {
			t.Fatalf("%d entries, count %d, want %d", n, c.count(), want)
		}
	})
}
