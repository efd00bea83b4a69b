package truth

import (
	"cmp"
	"slices"
	"time"
)

// Curve is a count over time that changes at discrete instants: the active
// visitors or the waiting ones.
type Curve struct {
	at []time.Duration // instants at which the count changes, increasing
	n  []int           // the count from at[i] until at[i+1]
}

// CurveOf counts the spans alive at each instant.
func CurveOf(spans []Span) Curve {
	return curveOf(len(spans), func(i int) (time.Duration, time.Duration) { return spans[i].From, spans[i].To })
}

// curveOf counts the spans [from, to) alive at each instant; a span that
// ends when another starts hands over without counting twice.
func curveOf(spans int, span func(i int) (from, to time.Duration)) Curve {
	type step struct {
		at time.Duration
		d  int
	}
	steps := make([]step, 0, 2*spans)
	for i := range spans {
		from, to := span(i)
		if to <= from {
			continue
		}
		steps = append(steps, step{from, 1})
		if to != Never {
			steps = append(steps, step{to, -1})
		}
	}
	slices.SortFunc(steps, func(a, b step) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	var c Curve
	n := 0
	for _, s := range steps {
		n += s.d
		if k := len(c.at); k > 0 && c.at[k-1] == s.at {
			c.n[k-1] = n
			continue
		}
		c.at = append(c.at, s.at)
		c.n = append(c.n, n)
	}
	return c
}

// At is the count at instant d.
func (c Curve) At(d time.Duration) int {
	i, found := slices.BinarySearch(c.at, d)
	if found {
		return c.n[i]
	}
	if i == 0 {
		return 0
	}
	return c.n[i-1]
}

// Peak is the largest count in [from, to), and when it was first reached.
func (c Curve) Peak(from, to time.Duration) (int, time.Duration) {
	best, when := c.At(from), from
	i, _ := slices.BinarySearch(c.at, from)
	for ; i < len(c.at) && c.at[i] < to; i++ {
		if c.n[i] > best {
			best, when = c.n[i], c.at[i]
		}
	}
	return best, when
}

// Above is how long in [from, to) the count was above limit.
func (c Curve) Above(limit int, from, to time.Duration) time.Duration {
	var sum time.Duration
	for i := range c.at {
		a := max(c.at[i], from)
		b := to
		if i+1 < len(c.at) {
			b = min(c.at[i+1], to)
		}
		if b > a && c.n[i] > limit {
			sum += b - a
		}
	}
	return sum
}
