package edge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the node's Prometheus metrics. Counters on the request path are
// resolved per room once, so a request only does atomic adds.
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	cookieErrors    *prometheus.CounterVec
	originErrors    *prometheus.CounterVec
	challengeErrors *prometheus.CounterVec
	unrouted        prometheus.Counter
	unroutedPassed  prometheus.Counter
	malformed       *prometheus.CounterVec
	held            *prometheus.CounterVec
	panics          *prometheus.CounterVec
	prio            *priorityMetrics
}

// roomMetrics are one room's request counters.
type roomMetrics struct {
	admitted, admittedRequests, queued, earlyCheckIns, rejected, bypassed, revoked, stopped, infinite, challenged, cookiesRequired prometheus.Counter
	// Requests held for the next allocation (see holding).
	holds, holdAdmitted, holdQueued, holdGone, holdFull prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "requests_total",
		Help: "Requests by room and outcome: admitted (a new admission), session (an admitted visitor's request), queued, early_checkin (queued, not an attempt), rejected, bypassed, revoked, stopped (an admitted visitor held by the emergency stop), infinite_queue, challenged, cookies_required (a client back from its first queue page without the cookie it was given: told that cookies are required, not queued).",
	}, []string{"room", "outcome"})
	m.cookieErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "cookie_errors_total",
		Help: "Visitor tokens that did not open, by reason (revoked: a session revoked here, sent again); each visitor was treated as new.",
	}, []string{"room", "reason"})
	m.originErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "origin_errors_total",
		Help: "Requests the origin did not answer, by reason (unreachable, timeout, canceled).",
	}, []string{"room", "reason"})
	m.challengeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "challenge_verifier_errors_total",
		Help: "Challenge solutions the siteverify endpoint could not judge (timeout, network error, malformed answer); turnstile_on_error decides what the visitor gets.",
	}, []string{"room"})
	m.unrouted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "unrouted_requests_total",
		Help: "Requests that matched no room and were refused (unrouted: refuse, the default).",
	})
	m.unroutedPassed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "unrouted_passed_total",
		Help: "Requests that matched no room and went to the default origin uncounted (unrouted: pass).",
	})
	m.malformed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "malformed_requests_total",
		Help: "Requests refused with 400 before routing because their path or host has no single meaning (an encoded slash, a backslash, double encoding, a control character, a bad host), by part (path, host).",
	}, []string{"reason"})
	m.held = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "held_requests_total",
		Help: "Visitors the node would have queued only because it keeps the open slots it sees back for what the other nodes may have admitted unheard, whose requests were held for its next allocation instead, by event: wait (one wait for the next allocation), admitted and queued (how a hold ended), gone (the visitor went away while held), refused (queued at once: too many requests held already).",
	}, []string{"room", "event"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "panics_total",
		Help: "Panics recovered without stopping the node, by where they happened (allocation, request, allocation_loop, console, webhooks, webhook_delivery, admin, acme, and the gossip layer's gossip_*). Any is a bug; a room whose allocation panicked runs by stale_state until one is computed again.",
	}, []string{"where"})
	m.prio = newPriorityMetrics(m.reg)
	m.reg.MustRegister(m.requests, m.cookieErrors, m.originErrors, m.challengeErrors, m.unrouted, m.unroutedPassed, m.malformed, m.held, m.panics,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) forRoom(name string) roomMetrics {
	c := func(outcome string) prometheus.Counter { return m.requests.WithLabelValues(name, outcome) }
	return roomMetrics{
		admitted:         c("admitted"),
		admittedRequests: c("session"),
		queued:           c("queued"),
		earlyCheckIns:    c("early_checkin"),
		rejected:         c("rejected"),
		bypassed:         c("bypassed"),
		revoked:          c("revoked"),
		stopped:          c("stopped"),
		infinite:         c("infinite_queue"),
		challenged:       c("challenged"),
		cookiesRequired:  c("cookies_required"),
		holds:            m.held.WithLabelValues(name, "wait"),
		holdAdmitted:     m.held.WithLabelValues(name, "admitted"),
		holdQueued:       m.held.WithLabelValues(name, "queued"),
		holdGone:         m.held.WithLabelValues(name, "gone"),
		holdFull:         m.held.WithLabelValues(name, "refused"),
	}
}

// lagCollector exports the gossip lag the allocations assume and each live
// peer's measured delay and clock offset, at scrape time.
type lagCollector struct{ s *Server }

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
	d := c.s.lagDoc(c.s.clock())
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

// stateCollector exports the merged room figures and gossip counters as
// Prometheus metrics at scrape time.
type stateCollector struct{ s *Server }

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
	now := c.s.ringNow()
	for _, rm := range c.s.rooms() {
		name := rm.name
		a := rm.allocation(now)
		sum := a.Summary()
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, sum.ActiveUsers, name)
		ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(a.view.cfg.TotalActiveUsers), name)
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(sum.QueuedUsers), name)
		ch <- prometheus.MustNewConstMetric(descNew, prometheus.GaugeValue, float64(sum.AdmittedThisMinute), name)
		ch <- prometheus.MustNewConstMetric(descNewLimit, prometheus.GaugeValue, float64(a.view.cfg.NewUsersPerMinute), name)
		ch <- prometheus.MustNewConstMetric(descWait, prometheus.GaugeValue, float64(sum.MaxWaitMinutes), name)
		q := 0.0
		if sum.Status != "not_queueing" && sum.Status != "suspended" {
			q = 1
		}
		ch <- prometheus.MustNewConstMetric(descQueueing, prometheus.GaugeValue, q, name, string(sum.Status))
		c.collectAnalytics(ch, name, now)
	}
	st := c.s.node.Stats()
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

// priorityMetrics count what codes did on this node.
type priorityMetrics struct {
	codes      *prometheus.CounterVec
	admissions *prometheus.CounterVec
}

func newPriorityMetrics(reg *prometheus.Registry) *priorityMetrics {
	m := &priorityMetrics{
		codes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "priority_codes_total",
			Help: "Priority codes presented, by room and result: accepted (a use recorded), kept (the visitor already held the code's group), used (no use left), revoked, expired, invalid (malformed, forged or for another room), unknown_group (the room has no such group), slowed (the address failed too often and was answered 429 without a check).",
		}, []string{"room", "result"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "priority_admissions_total",
			Help: "Admissions of priority code holders, by room, group and way: ahead (ahead of the line, within the group's share) or line (in the line like any visitor).",
		}, []string{"room", "group", "way"}),
	}
	reg.MustRegister(m.codes, m.admissions)
	return m
}

// priority returns the node's priority metrics.
func (m *metrics) priority() *priorityMetrics { return m.prio }
