package admin

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/gossip"
)

// StateDoc is the node's state document, what GET /state answers: the
// node, the ring as it sees it, its merged picture of every room and its
// webhooks' deliveries. Reading it never changes an allocation.
func (a *API) StateDoc() *api.StateDoc {
	s := a.s
	now, ring := s.Now(), s.RingNow()
	d := &api.StateDoc{
		Node:        s.Config().Node,
		Replica:     s.Node().Replica().String(),
		Incarnation: s.Node().Incarnation(),
		Time:        now.UTC(),
		RingTime:    ring.UTC(),
		Members:     s.Node().Members(),
		Gossip:      s.Node().Stats(),
		Lag:         lagDoc(s.Lag(now)),
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
	for _, rc := range s.Rooms() {
		if rs, ok := a.RoomStatus(rc.Name, ring); ok {
			d.Rooms = append(d.Rooms, rs)
		}
	}
	if a.opts.Webhooks != nil {
		d.Webhooks = a.opts.Webhooks.Status()
	}
	return d
}

// RoomStatus reports the named room at the ring's time now, as GET
// /rooms/{name}/status answers it: from its current allocation (the
// policy's figures) and the merged snapshot (who sent how much traffic);
// false for a room the node does not have.
func (a *API) RoomStatus(name string, now time.Time) (api.RoomStatus, bool) {
	// The allocation the loop made last (at most 250 ms old): reading the
	// state never changes it, so what an operator or a monitor sees is
	// what the request path decides by.
	f, ok := a.s.Figures(name, now)
	if !ok {
		return api.RoomStatus{}, false
	}
	sum, cfg := f.Summary, f.Settings
	rs := api.RoomStatus{
		Name:                      name,
		Host:                      f.Room.Host,
		Path:                      f.Room.Path,
		Status:                    string(sum.Status),
		QueueingMethod:            string(sum.Method),
		TotalActiveUsers:          cfg.TotalActiveUsers,
		NewUsersPerMinute:         cfg.NewUsersPerMinute,
		SessionDuration:           cfg.SessionDuration,
		EstimatedTotalActiveUsers: int64(sum.ActiveUsers + 0.5),
		EstimatedQueuedUsers:      sum.QueuedUsers,
		NewUsersThisMinute:        sum.AdmittedThisMinute,
		MaxEstimatedTimeMinutes:   sum.MaxWaitMinutes,
		OpenSlots:                 sum.OpenSlots,
		AdmissionsPerMinute:       sum.AdmissionRate,
		Buckets:                   []api.BucketStatus{},
		Nodes:                     []api.NodeShare{},
		Cut:                       sum.Cut,
		AllocationFailing:         f.Failing,
	}
	for _, b := range sum.Buckets {
		rs.Buckets = append(rs.Buckets, api.BucketStatus{Bucket: time.Unix(b.Bucket*60, 0).UTC(), Waiting: b.Waiting, EligibleSlots: b.Eligible})
	}
	rs.Nodes = a.nodeShares(&f.Snapshot)
	an := a.analytics(name, 10, now)
	rs.Last10Minutes = &an
	return rs, true
}

// nodeShares lists each replica's arrivals and admissions in the current
// minute, and its share of the arrivals of the last two minutes, with the
// node names their registers give.
func (a *API) nodeShares(snap *crdt.RoomSnapshot) []api.NodeShare {
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
	names := a.s.Node().ReplicaNames()
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
