package edge

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/gossip"
)

// analyticsCounters are the counters reported, in order.
var analyticsCounters = []crdt.Kind{
	crdt.VisitorsQueued, crdt.VisitorsAdmitted, crdt.SessionsRevoked,
	crdt.ChallengesIssued, crdt.ChallengesSolved, crdt.ChallengesFailed, crdt.ChallengesUnsolved,
	crdt.InfiniteQueueRefreshes,
}

// analytics sums a room's analytics over the last minutes minutes,
// the current one included.
func (s *Server) analytics(room string, minutes int, now time.Time) api.Analytics {
	to := unixMinute(now)
	from := to - int64(minutes) + 1
	var a crdt.Analytics
	s.node.Read(func(st *crdt.State) { a = st.Analytics(room, from, to) })
	out := api.Analytics{
		Room: room, From: time.Unix(from*60, 0).UTC(), To: time.Unix(to*60, 0).UTC(), Minutes: minutes,
		Totals: map[string]int64{}, PerMinute: []api.MinuteFigures{},
	}
	for _, k := range analyticsCounters {
		out.Totals[k.String()] = int64(a.Counters[k])
	}
	if rm := s.room(room); rm != nil {
		out.PriorityGroups = s.priorityFigures(rm, from, to)
	}
	out.TimeInQueue = distribution(a.Histograms[crdt.TimeInQueue])
	out.TimeOnOrigin = distribution(a.Histograms[crdt.TimeOnOrigin])
	for _, m := range a.ByMinute {
		mf := api.MinuteFigures{Minute: time.Unix(m.Minute*60, 0).UTC(), Counters: map[string]int64{}}
		for _, k := range analyticsCounters {
			if n := m.Counters[k]; n > 0 {
				mf.Counters[k.String()] = int64(n)
			}
		}
		out.PerMinute = append(out.PerMinute, mf)
	}
	return out
}

func distribution(h *crdt.Histogram) api.Distribution {
	if h == nil {
		return api.Distribution{}
	}
	return api.Distribution{Count: h.Count, P50Seconds: h.Quantile(0.5), P90Seconds: h.Quantile(0.9)}
}

// MaxAnalyticsMinutes is how far back analytics reach: the counters kept.
const MaxAnalyticsMinutes = gossip.DefaultRetention

// Analytics sums the named room's analytics over the last minutes minutes
// up to the ring's time now, the current one included (GET
// /rooms/{name}/analytics); false for a room the node does not have.
// Counters older than MaxAnalyticsMinutes are pruned: asking for more
// returns what is kept.
func (s *Server) Analytics(room string, minutes int, now time.Time) (api.Analytics, bool) {
	if s.room(room) == nil {
		return api.Analytics{}, false
	}
	return s.analytics(room, min(minutes, MaxAnalyticsMinutes), now), true
}

var (
	descAnalytics = prometheus.NewDesc("waitroom_room_analytics_10m", "Replicated room counters over the last ten minutes, merged over all nodes.", []string{"room", "counter"}, nil)
	descQueueTime = prometheus.NewDesc("waitroom_room_time_in_queue_seconds", "Time in queue of visitors admitted in the last ten minutes, merged over all nodes.", []string{"room", "quantile"}, nil)
	descOrigin    = prometheus.NewDesc("waitroom_room_time_on_origin_seconds", "Time on the origin of sessions admitted in the last ten minutes, merged over all nodes.", []string{"room", "quantile"}, nil)
)

func (c *stateCollector) collectAnalytics(ch chan<- prometheus.Metric, room string, now time.Time) {
	a := c.s.analytics(room, 10, now)
	for _, k := range analyticsCounters {
		ch <- prometheus.MustNewConstMetric(descAnalytics, prometheus.GaugeValue, float64(a.Totals[k.String()]), room, k.String())
	}
	ch <- prometheus.MustNewConstMetric(descQueueTime, prometheus.GaugeValue, a.TimeInQueue.P50Seconds, room, "0.5")
	ch <- prometheus.MustNewConstMetric(descQueueTime, prometheus.GaugeValue, a.TimeInQueue.P90Seconds, room, "0.9")
	ch <- prometheus.MustNewConstMetric(descOrigin, prometheus.GaugeValue, a.TimeOnOrigin.P50Seconds, room, "0.5")
	ch <- prometheus.MustNewConstMetric(descOrigin, prometheus.GaugeValue, a.TimeOnOrigin.P90Seconds, room, "0.9")
}
