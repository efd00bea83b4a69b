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
