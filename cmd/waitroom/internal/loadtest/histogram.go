package loadtest

import (
	"math"
	"math/bits"
	"time"
)

// Histogram is a log-linear (HDR-style) histogram of durations with a fixed
// relative error: values below 2^subBits ns are counted exactly, larger ones
// in buckets 1/2^(subBits-1) of their magnitude wide, so any percentile it
// returns is within 1/64 (1.6%) of the true value, from 1 ns to hours, in a
// fixed 30 KiB. It is not safe for concurrent use; merge per-worker
// histograms instead.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      uint64 // ns
	min, max uint64 // ns
}

const (
	subBits    = 7
	subCount   = 1 << subBits // 128: values below are exact
	halfCount  = subCount / 2 // 64 buckets per power of two above
	maxShift   = 64 - subBits // largest shift of a uint64
	numBuckets = subCount + maxShift*halfCount
)

// bucketOf is the index of v's bucket.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // ≥ 1
	m := v >> uint(shift)            // in [64, 128)
	return subCount + (shift-1)*halfCount + int(m-halfCount)
}

// bucketBounds is the lowest and highest value counted in bucket i.
func bucketBounds(i int) (lo, hi uint64) {
	if i < subCount {
		return uint64(i), uint64(i)
	}
	j := i - subCount
	shift := uint(j/halfCount + 1)
	m := uint64(j%halfCount + halfCount)
	lo = m << shift
	hi = lo + (1 << shift) - 1
	return lo, hi
}

// Record counts one duration (negative ones count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.n }

// Min, Max and Mean are exact.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max is the longest recorded duration.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean is the average recorded duration.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Percentile returns the smallest recorded value v such that at least q
// (0–100) percent of the values are ≤ v, within the histogram's relative
// error: the upper edge of the bucket where the rank falls, clamped to the
// exact minimum and maximum.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return time.Duration(h.min)
	}
	if q >= 100 {
		return time.Duration(h.max)
	}
	rank := uint64(math.Ceil(q / 100 * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			_, hi := bucketBounds(i)
			hi = min(max(hi, h.min), h.max)
			return time.Duration(hi)
		}
	}
	return time.Duration(h.max)
}

// Summary is a histogram's figures for a report.
type Summary struct {
	Count uint64        `json:"count"`
	Min   time.Duration `json:"min_ns"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summary returns the usual percentiles.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.n,
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   h.Percentile(50),
		P90:   h.Percentile(90),
		P99:   h.Percentile(99),
		P999:  h.Percentile(99.9),
		Max:   h.Max(),
	}
}
