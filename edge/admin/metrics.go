package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/api"
)

// The merged rooms' figures and the gossip's, as gauges that GET /metrics
// computes at scrape time, beside the node's own counters.

// stateCollector exports the merged room figures and gossip counters as
// Prometheus metrics at scrape time.
type stateCollector struct{ a *API }

var (
	descActive    = prometheus.NewDesc("waitroom_room_active_users", "Estimated users on the origin, merged over all nodes.", []string{"room"}, nil)
	descLimit     = prometheus.NewDesc("waitroom_room_total_active_users", "The room's total_active_users limit.", []string{"room"}, nil)
	descQueued    = prometheus.NewDesc("waitroom_room_queued_users", "Estimated users waiting, merged over all nodes.", []string{"room"}, nil)
	descNew       = prometheus.NewDesc("waitroom_room_new_users_this_minute", "Users admitted in the current minute, merged over all nodes.", []string{"room"}, nil)
	descNewLimit  = prometheus.NewDesc("waitroom_room_new_users_per_minute", "The room's new_users_per_minute limit.", []string{"room"}, nil)
	descWait      = prometheus.NewDesc("waitroom_room_max_estimated_wait_minutes", "Estimated wait of the newest visitor.", []string{"room"}, nil)
	descQueueing  = prometheus.NewDesc("waitroom_room_queueing", "1 while the room queues visitors.", []string{"room", "status"}, nil)
	descMembers   = prometheus.NewDesc("waitroom_gossip_members", "Members of the gossip ring this node sees.", nil, nil)
	descBytesOut  = prometheus.NewDesc("waitroom_gossip_sent_bytes_total", "Bytes of gossip traffic sent.", nil, nil)
	descMsgsIn    = prometheus.NewDesc("waitroom_gossip_messages_received_total", "Gossip messages received.", nil, nil)
	descMerged    = prometheus.NewDesc("waitroom_gossip_entries_merged_total", "Entries from peers that changed this node's state.", nil, nil)
	descPushPulls = prometheus.NewDesc("waitroom_gossip_push_pulls_total", "Full state exchanges merged.", nil, nil)
	descDropped   = prometheus.NewDesc("waitroom_gossip_dropped_messages_total", "Gossip messages dropped as bad input, by reason.", []string{"reason"}, nil)
	descCells     = prometheus.NewDesc("waitroom_state_entries", "Counter entries held in the replicated state.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAnalytics, descQueueTime, descOrigin, descActive, descLimit, descQueued, descNew, descNewLimit, descWait, descQueueing, descMembers, descBytesOut, descMsgsIn, descMerged, descPushPulls, descDropped, descCells} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.s
	now := s.RingNow()
	for _, rc := range s.Rooms() {
		name := rc.Name
		sum, cfg, ok := s.Current(name, now)
		if !ok {
			continue // deleted since Rooms
		}
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, sum.ActiveUsers, name)
		ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(cfg.TotalActiveUsers), name)
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(sum.QueuedUsers), name)
		ch <- prometheus.MustNewConstMetric(descNew, prometheus.GaugeValue, float64(sum.AdmittedThisMinute), name)
		ch <- prometheus.MustNewConstMetric(descNewLimit, prometheus.GaugeValue, float64(cfg.NewUsersPerMinute), name)
		ch <- prometheus.MustNewConstMetric(descWait, prometheus.GaugeValue, float64(sum.MaxWaitMinutes), name)
		q := 0.0
		if sum.Status != "not_queueing" && sum.Status != "suspended" {
			q = 1
		}
		ch <- prometheus.MustNewConstMetric(descQueueing, prometheus.GaugeValue, q, name, string(sum.Status))
		c.collectAnalytics(ch, name, now)
	}
	st := s.Node().Stats()
	ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(st.Members))
	ch <- prometheus.MustNewConstMetric(descBytesOut, prometheus.CounterValue, float64(st.BytesOut))
	ch <- prometheus.MustNewConstMetric(descMsgsIn, prometheus.CounterValue, float64(st.MessagesIn))
	ch <- prometheus.MustNewConstMetric(descMerged, prometheus.CounterValue, float64(st.EntriesMerged))
	ch <- prometheus.MustNewConstMetric(descPushPulls, prometheus.CounterValue, float64(st.PushPulls))
	for reason, n := range st.Dropped {
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(descCells, prometheus.GaugeValue, float64(st.State.Entries))
}

// lagCollector exports the gossip lag the allocations assume and each live
// peer's measured delay and clock offset, at scrape time.
type lagCollector struct{ s *edge.Server }

var (
	descLagInUse   = prometheus.NewDesc("waitroom_gossip_lag_seconds", "The gossip delay the allocations assume (measured, or the configured gossip_lag); measured is 1 when it comes from measurement.", []string{"measured"}, nil)
	descPeerDelay  = prometheus.NewDesc("waitroom_gossip_peer_delay_seconds", "How late a peer's counts reach this node: the 99th percentile over the last minute.", []string{"peer"}, nil)
	descPeerOffset = prometheus.NewDesc("waitroom_gossip_peer_clock_offset_seconds", "A peer's clock minus this node's, measured over gossip probes.", []string{"peer"}, nil)
	descRingOffset = prometheus.NewDesc("waitroom_clock_ring_offset_seconds", "The correction from this node's clock to the ring's time (the median of the ring's clocks), by which buckets and minute budgets are dated.", nil, nil)
	descClockSkew  = prometheus.NewDesc("waitroom_clock_skew_seconds", "How far this node's clock is ahead of the median of its peers' clocks.", nil, nil)
	descClockOff   = prometheus.NewDesc("waitroom_clock_far_off", "1 when this node's clock is more than 5 minutes off the median of its peers' clocks.", nil, nil)
)

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLagInUse
	ch <- descPeerDelay
	ch <- descPeerOffset
	ch <- descRingOffset
	ch <- descClockSkew
	ch <- descClockOff
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	d := lagDoc(c.s.Lag(c.s.Now()))
	measured := "0"
	if d.Measured {
		measured = "1"
	}
	ch <- prometheus.MustNewConstMetric(descLagInUse, prometheus.GaugeValue, d.InUseMs/1000, measured)
	far := 0.0
	if d.Ring.ClockFarOff {
		far = 1
	}
	ch <- prometheus.MustNewConstMetric(descRingOffset, prometheus.GaugeValue, d.Ring.RingOffsetMs/1000)
	ch <- prometheus.MustNewConstMetric(descClockSkew, prometheus.GaugeValue, d.Ring.SkewMs/1000)
	ch <- prometheus.MustNewConstMetric(descClockOff, prometheus.GaugeValue, far)
	for _, p := range d.Ring.Peers {
		if p.Samples > 0 {
			ch <- prometheus.MustNewConstMetric(descPeerDelay, prometheus.GaugeValue, p.DelayMs/1000, p.Name)
		}
		if p.OffsetKnown {
			ch <- prometheus.MustNewConstMetric(descPeerOffset, prometheus.GaugeValue, p.ClockOffsetMs/1000, p.Name)
		}
	}
}

// lagDoc is the lag section of the state document.
func lagDoc(l edge.Lag) *api.LagDoc {
	return &api.LagDoc{
		InUseMs:      durMs(l.InUse),
		Measured:     l.Measured,
		ConfiguredMs: durMs(l.Configured),
		MeasuringOn:  l.MeasuringOn,
		Ring:         l.Ring,
	}
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
