package edge

import (
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/gossip"
)

// AdminHandler serves the admin endpoint: GET /state, GET
// /rooms/{name}/status, GET /metrics, GET /healthz, GET /readyz, the room
// API, the webhook API and the console (GET /dashboard). It
// listens on loopback by default and never on the public listener; see
// adminGate for who may use it.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.StateDoc())
	})
	mux.HandleFunc("GET /rooms/{name}/status", func(w http.ResponseWriter, r *http.Request) {
		rm := s.room(r.PathValue("name"))
		if rm == nil {
			writeJSON(w, http.StatusNotFound, api.Error{Error: "no room named " + r.PathValue("name")})
			return
		}
		writeJSON(w, http.StatusOK, s.roomStatus(rm, s.ringNow()))
	})
	mux.HandleFunc("GET /rooms/{name}/analytics", s.serveAnalytics)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.registerRoomAPI(mux)
	s.registerCodeAPI(mux)
	s.consoleDash().Register(mux)
	s.registerWebhookAPI(mux)
	open := http.NewServeMux()
	open.HandleFunc("/healthz", s.serveHealth)
	open.HandleFunc("/readyz", s.serveReady)
	return s.adminRecover(newAdminGate(s.cfg, s.adminTok, open, mux))
}

// adminRecover answers a panic of the admin API with a 500 and its count,
// rather than a connection that breaks off.
func (s *Server) adminRecover(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			s.panicked(panicAdmin, "", p, debug.Stack(), true)
			writeJSON(w, http.StatusInternalServerError, api.Error{Error: "internal error (logged and counted in waitroom_panics_total)"})
		}()
		h.ServeHTTP(w, r)
	})
}

// serveHealth answers GET /healthz, open to anyone who reaches the admin
// listener (load balancers know no token), so it tells nothing but whether
// the node should get traffic: 503 while it is cut off from its peers and
// configured to fail closed (stale_state: closed), when it would queue every
// new visitor; 200 otherwise.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if s.staleClosed(s.clock()) {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{OK: false})
		return
	}
	writeJSON(w, http.StatusOK, api.Health{OK: true})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// StateDoc builds the node's state document.
func (s *Server) StateDoc() *api.StateDoc {
	now, ring := s.clock(), s.ringNow()
	d := &api.StateDoc{
		Node:        s.cfg.Node,
		Replica:     s.node.Replica().String(),
		Incarnation: s.node.Incarnation(),
		Time:        now.UTC(),
		RingTime:    ring.UTC(),
		Members:     s.node.Members(),
		Gossip:      s.node.Stats(),
		Lag:         s.lagDoc(now),
		Webhooks:    s.webhookStatus(),
	}
	slices.SortFunc(d.Members, func(a, b gossip.Member) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	for _, rm := range s.rooms() {
		d.Rooms = append(d.Rooms, s.roomStatus(rm, ring))
	}
	return d
}

// roomStatus reports a room from its current allocation (the policy's
// figures) and the merged snapshot (who sent how much traffic).
func (s *Server) roomStatus(rm *room, now time.Time) api.RoomStatus {
	// The allocation the loop made last (at most 250 ms old): reading the
	// state never changes it, so what an operator or a monitor sees is
	// what the request path decides by.
	a := rm.alloc.Load()
	sum := a.Summary()
	snap := s.node.Snapshot(rm.name, now.Unix(), a.view.win)
	rs := api.RoomStatus{
		Name:                      rm.name,
		Host:                      rm.cfg.Host,
		Path:                      rm.cfg.Path,
		Status:                    string(sum.Status),
		QueueingMethod:            string(sum.Method),
		TotalActiveUsers:          a.view.cfg.TotalActiveUsers,
		NewUsersPerMinute:         a.view.cfg.NewUsersPerMinute,
		SessionDuration:           a.view.cfg.SessionDuration,
		EstimatedTotalActiveUsers: int64(sum.ActiveUsers + 0.5),
		EstimatedQueuedUsers:      sum.QueuedUsers,
		NewUsersThisMinute:        sum.AdmittedThisMinute,
		MaxEstimatedTimeMinutes:   sum.MaxWaitMinutes,
		OpenSlots:                 sum.OpenSlots,
		AdmissionsPerMinute:       sum.AdmissionRate,
		Buckets:                   []api.BucketStatus{},
		Nodes:                     []api.NodeShare{},
		Cut:                       sum.Cut,
		AllocationFailing:         rm.failing.Load(),
	}
	for _, b := range sum.Buckets {
		rs.Buckets = append(rs.Buckets, api.BucketStatus{Bucket: time.Unix(b.Bucket*60, 0).UTC(), Waiting: b.Waiting, EligibleSlots: b.Eligible})
	}
	rs.Nodes = s.nodeShares(&snap)
	an := s.analytics(rm.name, 10, now)
	rs.Last10Minutes = &an
	return rs
}

// nodeShares lists each replica's arrivals and admissions in the current
// minute, and its share of the arrivals of the last two minutes, with the
// node names their registers give.
func (s *Server) nodeShares(snap *crdt.RoomSnapshot) []api.NodeShare {
	cur := snap.ArrivalsIn(snap.Minute)
	prev := snap.ArrivalsIn(snap.Minute - 1)
	adm := snap.AdmittedIn(snap.Minute)
	total := float64(cur.Total + prev.Total)
	seen := map[crdt.ReplicaID]bool{}
	var ids []crdt.ReplicaID
	for _, mc := range []crdt.MinuteCounts{cur, prev, adm} {
		for _, c := range mc.ByReplica {
			if !seen[c.Replica] {
				seen[c.Replica] = true
				ids = append(ids, c.Replica)
			}
		}
	}
	names := s.node.ReplicaNames()
	out := []api.NodeShare{}
	for _, id := range ids {
		ns := api.NodeShare{Node: names[id], Replica: id.String(), ArrivalsThisMinute: cur.Of(id), AdmittedThisMinute: adm.Of(id)}
		if ns.Node == "" {
			ns.Node = id.String()
		}
		if total > 0 {
			ns.TrafficShare = float64(cur.Of(id)+prev.Of(id)) / total
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b api.NodeShare) int {
		if a.Node < b.Node {
			return -1
		}
		if a.Node > b.Node {
			return 1
		}
		return 0
	})
	return out
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
