package edge

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// StateDoc builds the node's state document (GET /state), without the
// webhooks' deliveries, which edge/webhook/deliver adds. Reading it never
// changes an allocation.
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

// RoomStatus reports the named room at the ring's time now, as GET
// /rooms/{name}/status answers it; false for a room the node does not
// have.
func (s *Server) RoomStatus(name string, now time.Time) (api.RoomStatus, bool) {
	rm := s.room(name)
	if rm == nil || rm.alloc.Load() == nil {
		return api.RoomStatus{}, false
	}
	return s.roomStatus(rm, now), true
}

// Summary is the named room's last allocation's summary (the status, the
// queue, the admissions), as the request path decides by it; false for a
// room the node does not have. It reads the allocation and computes
// nothing else, for what looks at the rooms every round.
func (s *Server) Summary(name string) (policy.Summary, bool) {
	rm := s.room(name)
	if rm == nil {
		return policy.Summary{}, false
	}
	a := rm.alloc.Load()
	if a == nil {
		return policy.Summary{}, false
	}
	return a.Summary(), true
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

// WaitingNow is the number of visitors waiting in the named room as the
// node's merged state says at its clock, summed afresh rather than taken from
// the last allocation (which the loop may not have recomputed yet): for tools
// that drive load and read the count right after, such as the bench. -1 for
// a room the node does not have.
func (s *Server) WaitingNow(name string) int64 {
	now := s.ringNow()
	for _, rm := range s.rooms() {
		if rm.name == name {
			return rm.s.node.Snapshot(rm.name, now.Unix(), rm.viewAt(now).win).TotalWaiting
		}
	}
	return -1
}

// CurrentAllocation is the room's allocation as the request path reads it
// (nil for a room the node does not have), for whoever checks what
// replaces it: reading the state, for one, must not.
func (s *Server) CurrentAllocation(room string) *policy.Allocation {
	for _, rm := range s.rooms() {
		if rm.name == room {
			return rm.alloc.Load().Allocation
		}
	}
	return nil
}
