package crdt

import (
	"math"
	"strconv"
)

// Analytics kinds: per room and minute, plain G-counters that every node
// adds to and every node merges, so any node can report the whole cluster's
// figures.
const (
	ChallengesIssued       Kind = AnalyticsBase + iota // queue pages that carried a challenge
	ChallengesSolved                                   // challenge tokens the verifier accepted
	ChallengesFailed                                   // challenge tokens the verifier refused (bots)
	ChallengesUnsolved                                 // check-ins of challenged visitors without a solution (likely bots)
	InfiniteQueueRefreshes                             // check-ins of visitors held in the infinite queue
	SessionsRevoked                                    // sessions ended by an origin command
	VisitorsQueued                                     // visitors who got the queue page for the first time
	VisitorsAdmitted                                   // visitors let in (new admissions)
	TimeInQueue                                        // histogram: seconds from first request to admission
	TimeOnOrigin                                       // histogram: seconds from admission to the last request (plus side)
	TimeOnOriginMinus                                  // its minus side: a session's count leaves its old bin as it grows
	analyticsEnd
)

// IsHistogram reports whether cells of kind k are histogram bins: their
// Bucket field is the bin index rather than an arrival bucket.
func (k Kind) IsHistogram() bool {
	return k == TimeInQueue || k == TimeOnOrigin || k == TimeOnOriginMinus
}

// Histogram bins are log-scale: bin i holds durations d (in seconds) with
// 2^(i/4) ≤ d < 2^((i+1)/4), so each bin is about 19% wide and 64 bins reach
// past a day. A value is off by at most half a bin (±9%) when read back.
// Fixed bins make the histogram a plain vector of G-counters: nodes merge
// them entry by entry like any other cell.
const (
	histBinsPerOctave = 4
	HistogramBins     = 64
)

// HistogramBin returns the bin of a duration in seconds.
func HistogramBin(seconds float64) int64 {
	if seconds < 1 {
		return 0
	}
	b := int64(math.Floor(math.Log2(seconds) * histBinsPerOctave))
	return min(max(b, 0), HistogramBins-1)
}

// binValue is the representative duration of bin b: its geometric middle
// (bin 0 also holds everything under a second).
func binValue(b int64) float64 {
	return math.Exp2((float64(b) + 0.5) / histBinsPerOctave)
}

// Histogram is a merged distribution of durations.
type Histogram struct {
	Bins  [HistogramBins]uint64 `json:"-"`
	Count uint64                `json:"count"`
}

// Quantile returns the q-th quantile (0 < q ≤ 1) in seconds, or 0 when the
// histogram is empty.
func (h *Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.Count)))
	rank = max(rank, 1)
	var seen uint64
	for b, n := range h.Bins {
		seen += n
		if seen >= rank {
			return binValue(int64(b))
		}
	}
	return binValue(HistogramBins - 1)
}

// Analytics are a room's counters summed over a span of minutes.
type Analytics struct {
	From, To   int64           // unix minutes, inclusive
	Counters   map[Kind]uint64 // the plain analytics counters
	Histograms map[Kind]*Histogram
	ByMinute   []MinuteAnalytics // one per minute From..To
}

// MinuteAnalytics are one minute's counters.
type MinuteAnalytics struct {
	Minute   int64
	Counters map[Kind]uint64
}

// Analytics sums room's analytics cells over minutes from..to (inclusive).
// Minutes already pruned read as zero.
func (s *State) Analytics(roomName string, from, to int64) Analytics {
	a := Analytics{From: from, To: to, Counters: map[Kind]uint64{}, Histograms: map[Kind]*Histogram{}}
	if to < from {
		return a
	}
	a.ByMinute = make([]MinuteAnalytics, to-from+1)
	for i := range a.ByMinute {
		a.ByMinute[i] = MinuteAnalytics{Minute: from + int64(i), Counters: map[Kind]uint64{}}
	}
	r := s.rooms[roomName]
	if r == nil {
		return a
	}
	// Histograms may be PN (a session's time on origin moves from bin to
	// bin as it grows); bins are summed signed and clamped at zero, since a
	// minus can arrive before the plus it cancels.
	signedBins := map[Kind]*[HistogramBins]int64{}
	defer func() {
		for kind, b := range signedBins {
			h := &Histogram{}
			for i, n := range b {
				if n > 0 {
					h.Bins[i] = uint64(n)
					h.Count += uint64(n)
				}
			}
			a.Histograms[kind] = h
		}
	}()
	s.eachCell(r, func(ck cellKey, c cellCounts) {
		if ck.Kind < AnalyticsBase || ck.Kind >= analyticsEnd || ck.Minute < from || ck.Minute > to {
			return
		}
		v := c.sum()
		if ck.Kind.IsHistogram() {
			if ck.Bucket < 0 || ck.Bucket >= HistogramBins {
				return
			}
			kind := ck.Kind
			if kind == TimeOnOriginMinus {
				kind = TimeOnOrigin
			}
			b := signedBins[kind]
			if b == nil {
				b = &[HistogramBins]int64{}
				signedBins[kind] = b
			}
			if ck.Kind == TimeOnOriginMinus {
				b[ck.Bucket] -= int64(v)
			} else {
				b[ck.Bucket] += int64(v)
			}
			return
		}
		a.Counters[ck.Kind] += v
		a.ByMinute[ck.Minute-from].Counters[ck.Kind] += v
	})
	return a
}

var kindNames = map[Kind]string{
	Arrivals:               "arrivals",
	Admitted:               "admitted",
	ActivePlus:             "active_plus",
	ActiveMinus:            "active_minus",
	WaitingPlus:            "waiting_plus",
	WaitingMinus:           "waiting_minus",
	Revocations:            "revocations",
	QueuedAt:               "queued_at",
	LeftAt:                 "left_at",
	ChallengesIssued:       "challenges_issued",
	ChallengesSolved:       "challenges_solved",
	ChallengesFailed:       "challenges_failed",
	ChallengesUnsolved:     "challenges_unsolved",
	InfiniteQueueRefreshes: "infinite_queue_refreshes",
	SessionsRevoked:        "sessions_revoked",
	VisitorsQueued:         "visitors_queued",
	VisitorsAdmitted:       "visitors_admitted",
	TimeInQueue:            "time_in_queue",
	TimeOnOrigin:           "time_on_origin",
	TimeOnOriginMinus:      "time_on_origin_minus",
}

// String names the kind, as analytics and metrics show it.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "kind_" + strconv.Itoa(int(k))
}
