package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip"
)

// A room's analytics: its replicated per-minute counters summed over a span
// of minutes (GET /rooms/{name}/analytics, the state document's last ten
// minutes, the console's charts and the metrics' gauges).

// analyticsCounters are the counters reported, in order.
var analyticsCounters = []crdt.Kind{
	crdt.VisitorsQueued, crdt.VisitorsAdmitted, crdt.SessionsRevoked,
	crdt.ChallengesIssued, crdt.ChallengesSolved, crdt.ChallengesFailed, crdt.ChallengesUnsolved,
	crdt.InfiniteQueueRefreshes,
}

// analytics sums a room's analytics over the last minutes minutes,
// the current one included.
func (a *API) analytics(room string, minutes int, now time.Time) api.Analytics {
	to := now.Unix() / 60
	from := to - int64(minutes) + 1
	var ca crdt.Analytics
	a.s.Node().Read(func(st *crdt.State) { ca = st.Analytics(room, from, to) })
	out := api.Analytics{
		Room: room, From: time.Unix(from*60, 0).UTC(), To: time.Unix(to*60, 0).UTC(), Minutes: minutes,
		Totals: map[string]int64{}, PerMinute: []api.MinuteFigures{},
	}
	for _, k := range analyticsCounters {
		out.Totals[k.String()] = int64(ca.Counters[k])
	}
	if rc := a.s.Room(room); rc != nil {
		out.PriorityGroups = a.priorityFigures(rc, from, to)
	}
	out.TimeInQueue = distribution(ca.Histograms[crdt.TimeInQueue])
	out.TimeOnOrigin = distribution(ca.Histograms[crdt.TimeOnOrigin])
	for _, m := range ca.ByMinute {
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

// maxAnalyticsMinutes is how far back analytics reach: the counters kept.
const maxAnalyticsMinutes = gossip.DefaultRetention

var (
	descAnalytics = prometheus.NewDesc("waitroom_room_analytics_10m", "Replicated room counters over the last ten minutes, merged over all nodes.", []string{"room", "counter"}, nil)
	descQueueTime = prometheus.NewDesc("waitroom_room_time_in_queue_seconds", "Time in queue of visitors admitted in the last ten minutes, merged over all nodes.", []string{"room", "quantile"}, nil)
	descOrigin    = prometheus.NewDesc("waitroom_room_time_on_origin_seconds", "Time on the origin of sessions admitted in the last ten minutes, merged over all nodes.", []string{"room", "quantile"}, nil)
)

func (c *stateCollector) collectAnalytics(ch chan<- prometheus.Metric, room string, now time.Time) {
	a := c.a.analytics(room, 10, now)
	for _, k := range analyticsCounters {
		ch <- prometheus.MustNewConstMetric(descAnalytics, prometheus.GaugeValue, float64(a.Totals[k.String()]), room, k.String())
	}
	ch <- prometheus.MustNewConstMetric(descQueueTime, prometheus.GaugeValue, a.TimeInQueue.P50Seconds, room, "0.5")
	ch <- prometheus.MustNewConstMetric(descQueueTime, prometheus.GaugeValue, a.TimeInQueue.P90Seconds, room, "0.9")
	ch <- prometheus.MustNewConstMetric(descOrigin, prometheus.GaugeValue, a.TimeOnOrigin.P50Seconds, room, "0.5")
	ch <- prometheus.MustNewConstMetric(descOrigin, prometheus.GaugeValue, a.TimeOnOrigin.P90Seconds, room, "0.9")
}

// priorityFigures sums the room's priority counters by group over minutes
// from..to.
func (a *API) priorityFigures(rc *config.Room, from, to int64) map[string]api.GroupFigures {
	if len(rc.PriorityGroups) == 0 {
		return nil
	}
	var adm, uses map[int64]uint64
	a.s.Node().Read(func(st *crdt.State) {
		adm = st.SumByBucket(rc.Name, crdt.PriorityAdmitted, from, to)
		uses = st.SumByBucket(rc.Name, crdt.PriorityCodeUses, from, to)
	})
	out := map[string]api.GroupFigures{}
	for _, g := range rc.PriorityGroups {
		b := crdt.GroupBucket(g.Name)
		out[g.Name] = api.GroupFigures{Admitted: adm[b], CodeUses: uses[b]}
	}
	return out
}
