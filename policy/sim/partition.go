package sim

import (
	"math"
	"slices"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
)

// PartitionStat is what the room, and each side, did while the ring was cut
// (from the partition's start to its heal, in true time).
type PartitionStat struct {
	From float64 `json:"from_s"`
	To   float64 `json:"to_s"`
	// The whole room, by the truth: the most admissions in one wall-clock
	// minute that overlaps the cut, and the most visitors active during it,
	// over the limits.
	PeakNewPerMinute float64 `json:"peak_new_per_minute_over_limit"`
	PeakActive       float64 `json:"peak_active_over_limit"`
	// The same over the five minutes after the heal, while the sides merge
	// (zero when the run ends first).
	AfterHealPeakNewPerMinute float64 `json:"after_heal_peak_new_per_minute_over_limit"`
	AfterHealPeakActive       float64 `json:"after_heal_peak_active_over_limit"`
	// FIFOInversions is the share of the cut's admissions that were FIFO
	// inversions (package truth); AcrossInversions counts only those where the
	// earlier arrival waited at a node of another side: a later arrival went
	// in on one side while an earlier one waited on the other.
	FIFOInversions   float64    `json:"fifo_inversions"`
	AcrossInversions float64    `json:"fifo_inversions_across"`
	Sides            []SideStat `json:"sides"`
}

// SideStat is one side of a cut ring.
type SideStat struct {
	Nodes []int `json:"nodes"`
	// Part is the side's share of the nodes; a side cut off from the rest
	// runs on that part of each limit, rounded down (policy.Room.CutOff).
	Part         float64 `json:"part"`
	PartNew      int     `json:"part_new_users_per_minute"`
	PartActive   int     `json:"part_total_active_users"`
	Arrivals     int     `json:"arrivals"` // new visitors who reached the side during the cut
	Admitted     int     `json:"admitted"` // admissions at the side during the cut
	ArrivedAdmit int     `json:"arrived_and_admitted"`
	// AdmittedPerMinute counts the side's admissions in each minute of
	// true time that overlaps the cut (only the cut's part of a minute at
	// either end).
	AdmittedPerMinute []int `json:"admitted_per_minute"`
	// PeakActive is the most visitors active during the cut whose session
	// the side admitted.
	PeakActive int `json:"peak_active"`
	// WaitingAtHeal is how many of the side's visitors were waiting when
	// the ring healed.
	WaitingAtHeal int `json:"waiting_at_heal"`
	// Waits of the visitors who arrived at the side during the cut and were
	// admitted (at any time), in seconds.
	WaitP50 float64 `json:"wait_p50_s"`
	WaitP90 float64 `json:"wait_p90_s"`
}

// afterHeal is the span after a heal over which the merge is watched.
const afterHeal = 5 * time.Minute

// partOf is policy's part of a limit for a side of a cut ring: rounded
// down, never below one.
func partOf(part float64, limit int) int {
	return max(1, int(math.Floor(part*float64(limit)+1e-9)))
}

func (c *recorder) partitionStat(tr *truth.History, cs cutSpan, active truth.Curve, minutes []MinuteStat) PartitionStat {
	r := c.r
	p := cutStat{r: r, tr: tr, cs: cs, from: cs.from, to: min(cs.to, r.end), groups: slices.Max(cs.groups) + 1}
	p.ps = PartitionStat{From: p.from.Seconds(), To: cs.to.Seconds()}
	ps := &p.ps

	// The room, during the cut and after the heal.
	ps.PeakNewPerMinute, ps.PeakActive = p.peaks(active, minutes, p.from, p.to)
	ps.AfterHealPeakNewPerMinute, ps.AfterHealPeakActive = p.peaks(active, minutes, cs.to, min(cs.to+afterHeal, r.end))

	p.sides()
	p.admissions()
	p.sidesPeakActive()
	p.sidesVisitors()
	ps.PeakNewPerMinute, ps.PeakActive = round6(ps.PeakNewPerMinute), round6(ps.PeakActive)
	ps.AfterHealPeakNewPerMinute, ps.AfterHealPeakActive = round6(ps.AfterHealPeakNewPerMinute), round6(ps.AfterHealPeakActive)
	for g := range ps.Sides {
		ps.Sides[g].Part = round6(ps.Sides[g].Part)
	}
	return p.ps
}

// cutStat is one partitionStat in progress.
type cutStat struct {
	r        *run
	tr       *truth.History
	cs       cutSpan
	from, to time.Duration // the cut, ended at the run's end at the latest
	groups   int           // how many sides
	ps       PartitionStat
}

// peaks returns the most admissions in a minute that overlaps [a, b) and
// the most visitors active in it, over the limits.
func (p *cutStat) peaks(active truth.Curve, minutes []MinuteStat, a, b time.Duration) (perMin, act float64) {
	if b <= a {
		return 0, 0
	}
	N := float64(p.r.sc.Room.NewUsersPerMinute)
	for m := int(a / time.Minute); m < len(minutes) && time.Duration(m)*time.Minute < b; m++ {
		perMin = max(perMin, float64(minutes[m].Admitted)/N)
	}
	peak, _ := active.Peak(a, b)
	return perMin, float64(peak) / float64(p.r.sc.Room.TotalActiveUsers)
}

// side is the side of node, -1 for none.
func (p *cutStat) side(node int) int {
	if node < 0 {
		return -1
	}
	return p.cs.groups[node]
}

// sides sets each side's nodes, its part of the limits, and a zero count of
// admissions for each minute of the cut.
func (p *cutStat) sides() {
	room := p.r.sc.Room
	p.ps.Sides = make([]SideStat, p.groups)
	for g := range p.ps.Sides {
		s := &p.ps.Sides[g]
		for id, gg := range p.cs.groups {
			if gg == g {
				s.Nodes = append(s.Nodes, id)
			}
		}
		s.Part = float64(len(s.Nodes)) / float64(len(p.cs.groups))
		s.PartNew = partOf(s.Part, room.NewUsersPerMinute)
		s.PartActive = partOf(s.Part, room.TotalActiveUsers)
		first, last := int(p.from/time.Minute), int((p.to-1)/time.Minute)
		s.AdmittedPerMinute = make([]int, max(last-first+1, 0))
	}
}

// admissions counts the admissions during the cut, by side, and the
// inversions among them, in all and across sides.
func (p *cutStat) admissions() {
	var cutAdm []truth.Admission
	for _, a := range p.tr.Admissions() {
		if a.At < p.from || a.At >= p.to {
			continue
		}
		cutAdm = append(cutAdm, a)
		if g := p.side(a.Node); g >= 0 {
			s := &p.ps.Sides[g]
			s.Admitted++
			s.AdmittedPerMinute[int(a.At/time.Minute)-int(p.from/time.Minute)]++
		}
	}
	if len(cutAdm) == 0 {
		return
	}
	p.ps.FIFOInversions = round6(float64(len(truth.Inversions(cutAdm, p.tr.Waits(), p.r.end))) / float64(len(cutAdm)))
	across := 0
	for g := range p.groups {
		var adm []truth.Admission
		var waits []truth.Wait
		for _, a := range cutAdm {
			if p.side(a.Node) == g {
				adm = append(adm, a)
			}
		}
		for _, w := range p.tr.Waits() {
			if p.side(w.Node) != g {
				waits = append(waits, w)
			}
		}
		across += len(truth.Inversions(adm, waits, p.r.end))
	}
	p.ps.AcrossInversions = round6(float64(across) / float64(len(cutAdm)))
}

// sidesPeakActive sets the visitors active during the cut, by the side that
// admitted them.
func (p *cutStat) sidesPeakActive() {
	if p.to <= p.from {
		return
	}
	spans := p.tr.Spans()
	for g := range p.groups {
		var mine []truth.Span
		for _, sp := range spans {
			if p.side(sp.Node) == g {
				mine = append(mine, sp)
			}
		}
		p.ps.Sides[g].PeakActive, _ = truth.CurveOf(mine).Peak(p.from, p.to)
	}
}

// sidesVisitors sets each side's visitors: arrivals, waits, and who still
// waited at the heal.
func (p *cutStat) sidesVisitors() {
	r, from, to := p.r, p.from, p.to
	waits := make([][]float64, p.groups)
	for i := range r.vis {
		v := &r.vis[i]
		if v.node < 0 {
			continue
		}
		g := p.cs.groups[v.node]
		s := &p.ps.Sides[g]
		at := r.arr[i].at
		if at >= from && at < to {
			s.Arrivals++
			if v.admitted >= 0 {
				s.ArrivedAdmit++
				waits[g] = append(waits[g], (v.admitted - at).Seconds())
			}
		}
		if v.firstQueued >= 0 && v.firstQueued < to && (v.admitted < 0 || v.admitted >= to) && (v.abandoned < 0 || v.abandoned >= to) {
			s.WaitingAtHeal++
		}
	}
	for g := range waits {
		slices.Sort(waits[g])
		p.ps.Sides[g].WaitP50 = round6(truth.Quantile(waits[g], 0.5))
		p.ps.Sides[g].WaitP90 = round6(truth.Quantile(waits[g], 0.9))
	}
}
