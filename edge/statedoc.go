package edge

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// StateDoc is what GET /state answers: the node, the ring as it sees it and
// its merged picture of every room.
type StateDoc struct {
	Node        string          `json:"node"`
	Replica     string          `json:"replica"`
	Incarnation uint64          `json:"incarnation"`
	Time        time.Time       `json:"time"`
	Members     []gossip.Member `json:"members"`
	Gossip      gossip.Stats    `json:"gossip"`
	// Lag is the gossip delay the allocations assume, measured or
	// configured, with each peer's measured delay and clock offset.
	Lag   *LagDoc      `json:"lag,omitempty"`
	Rooms []RoomStatus `json:"rooms"`
}

// RoomStatus is one room's merged figures, named after Cloudflare's waiting
// room status API where it has a name for them.
type RoomStatus struct {
	Name                      string         `json:"name"`
	Host                      string         `json:"host"`
	Path                      string         `json:"path"`
	Status                    string         `json:"status"` // not_queueing, queueing, queue_all, suspended
	QueueingMethod            string         `json:"queueing_method"`
	TotalActiveUsers          int            `json:"total_active_users"`
	NewUsersPerMinute         int            `json:"new_users_per_minute"`
	SessionDuration           int            `json:"session_duration"`
	EstimatedTotalActiveUsers int64          `json:"estimated_total_active_users"`
	EstimatedQueuedUsers      int64          `json:"estimated_queued_users"`
	NewUsersThisMinute        int64          `json:"new_users_this_minute"`
	MaxEstimatedTimeMinutes   int            `json:"max_estimated_time_minutes"`
	OpenSlots                 int64          `json:"open_slots"`
	AdmissionsPerMinute       float64        `json:"admissions_per_minute"`
	Buckets                   []BucketStatus `json:"buckets"`
	Nodes                     []NodeShare    `json:"nodes"`
	// Cut is set while part of the ring is unreachable: the figures above
	// are then those of the part this node can reach, held to its share of
	// the limits.
	Cut *policy.CutSummary `json:"cut,omitempty"`
	// Last10Minutes are the room's analytics over the last ten minutes.
	Last10Minutes *Analytics `json:"last_10_minutes,omitempty"`
}

// BucketStatus is one arrival bucket of a room's queue.
type BucketStatus struct {
	Bucket        time.Time `json:"bucket"`
	Waiting       int64     `json:"waiting"`
	EligibleSlots int64     `json:"eligible_slots"`
}

// NodeShare is one node's part of a room's traffic.
type NodeShare struct {
	Node               string  `json:"node"`
	Replica            string  `json:"replica"`
	TrafficShare       float64 `json:"traffic_share"`
	ArrivalsThisMinute uint64  `json:"arrivals_this_minute"`
	AdmittedThisMinute uint64  `json:"admitted_this_minute"`
}

// FetchState asks a node's admin endpoint for its state with an
// [AdminClient]. It returns the decoded document and the raw JSON.
func FetchState(ctx context.Context, adminURL, token string, timeout time.Duration) (*StateDoc, []byte, error) {
	c := &AdminClient{URL: adminURL, Token: token, Timeout: timeout}
	return c.State(ctx)
}

// WriteStateTable prints a state document for a person.
func WriteStateTable(w io.Writer, d *StateDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "node %s (replica %s) at %s\n\n", d.Node, d.Replica, d.Time.Format(time.RFC3339))
	fmt.Fprintln(tw, "MEMBER\tADDRESS\tSTATE")
	for _, m := range d.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, m.Addr, m.State)
	}
	g := d.Gossip
	fmt.Fprintf(tw, "\ngossip: %d members, %d msgs in, %d msgs out, %s sent, %d entries merged, %d push-pulls",
		g.Members, g.MessagesIn, g.MessagesOut, humanBytes(g.BytesOut), g.EntriesMerged, g.PushPulls)
	if len(g.Dropped) > 0 {
		fmt.Fprintf(tw, ", dropped %v", g.Dropped)
	}
	fmt.Fprintln(tw)
	if l := d.Lag; l != nil {
		src := "configured"
		if l.Measured {
			src = "measured"
		}
		fmt.Fprintf(tw, "gossip lag in use: %s (%s; configured %s)\n", msDur(l.InUseMs), src, msDur(l.ConfiguredMs))
		if len(l.Ring.Peers) > 0 {
			fmt.Fprintln(tw, "PEER\tDELAY P99\tDELAY MAX\tSAMPLES\tCLOCK OFFSET")
			for _, p := range l.Ring.Peers {
				off := "unknown"
				if p.OffsetKnown {
					off = fmt.Sprintf("%s ± %s", msDur(p.ClockOffsetMs), msDur(p.OffsetRTTMs/2))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.Name, msDur(p.DelayMs), msDur(p.DelayMaxMs), p.Samples, off)
			}
		}
	}
	if len(d.Rooms) == 0 {
		fmt.Fprintln(tw, "\nno rooms on this node")
	}
	for _, r := range d.Rooms {
		host := r.Host
		if host == "" {
			host = "*"
		}
		fmt.Fprintf(tw, "\nroom %s  %s%s  [%s, %s]\n", r.Name, host, r.Path, r.Status, r.QueueingMethod)
		fmt.Fprintf(tw, "  active users\t%d / %d\n", r.EstimatedTotalActiveUsers, r.TotalActiveUsers)
		fmt.Fprintf(tw, "  new users this minute\t%d / %d\n", r.NewUsersThisMinute, r.NewUsersPerMinute)
		fmt.Fprintf(tw, "  queued\t%d\n", r.EstimatedQueuedUsers)
		fmt.Fprintf(tw, "  open slots\t%d\n", r.OpenSlots)
		fmt.Fprintf(tw, "  admissions per minute\t%.1f\n", r.AdmissionsPerMinute)
		fmt.Fprintf(tw, "  longest estimated wait\t%d min\n", r.MaxEstimatedTimeMinutes)
		if c := r.Cut; c != nil {
			fmt.Fprintf(tw, "  CUT OFF\t%d of %d nodes reachable: figures are this part's, held to %d active / %d per minute; the others last said %.0f active, %d admitted this minute\n",
				c.ReachableNodes, c.ExpectedNodes, c.TotalActiveUsers, c.NewUsersPerMinute, c.ElsewhereActive, c.ElsewhereAdmitted)
		}
		if len(r.Buckets) > 0 {
			fmt.Fprintln(tw, "  BUCKET\tWAITING\tELIGIBLE SLOTS")
			for _, b := range r.Buckets {
				fmt.Fprintf(tw, "  %s\t%d\t%d\n", b.Bucket.UTC().Format("15:04"), b.Waiting, b.EligibleSlots)
			}
		}
		if an := r.Last10Minutes; an != nil {
			t := an.Totals
			fmt.Fprintf(tw, "  last 10 min\tqueued %d, admitted %d, revoked %d\n", t["visitors_queued"], t["visitors_admitted"], t["sessions_revoked"])
			if t["challenges_issued"]+t["challenges_solved"]+t["challenges_failed"]+t["infinite_queue_refreshes"] > 0 {
				fmt.Fprintf(tw, "  challenges\tissued %d, solved %d (humans), failed %d (bots), unsolved check-ins %d (likely bots), infinite-queue refreshes %d\n",
					t["challenges_issued"], t["challenges_solved"], t["challenges_failed"], t["challenges_unsolved"], t["infinite_queue_refreshes"])
			}
			if an.TimeInQueue.Count > 0 {
				fmt.Fprintf(tw, "  time in queue\tp50 %s, p90 %s (%d visitors)\n", secs(an.TimeInQueue.P50Seconds), secs(an.TimeInQueue.P90Seconds), an.TimeInQueue.Count)
			}
			if an.TimeOnOrigin.Count > 0 {
				fmt.Fprintf(tw, "  time on origin\tp50 %s, p90 %s (%d sessions)\n", secs(an.TimeOnOrigin.P50Seconds), secs(an.TimeOnOrigin.P90Seconds), an.TimeOnOrigin.Count)
			}
		}
		if len(r.Nodes) > 0 {
			fmt.Fprintln(tw, "  NODE\tSHARE\tARRIVALS/MIN\tADMITTED/MIN")
			for _, n := range r.Nodes {
				fmt.Fprintf(tw, "  %s\t%.0f%%\t%d\t%d\n", n.Node, n.TrafficShare*100, n.ArrivalsThisMinute, n.AdmittedThisMinute)
			}
		}
	}
	return tw.Flush()
}

func msDur(ms float64) string {
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Millisecond).String()
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

// WaitingNow is the number of visitors waiting in the named room as the
// node's merged state says at its clock, summed afresh rather than taken from
// the last allocation (which the loop may not have recomputed yet): for tools
// that drive load and read the count right after, such as the bench. -1 for
// a room the node does not have.
func (s *Server) WaitingNow(name string) int64 {
	now := s.clock()
	for _, rm := range s.rooms() {
		if rm.name == name {
			return rm.s.node.Snapshot(rm.name, now.Unix(), rm.viewAt(now).win).TotalWaiting
		}
	}
	return -1
}
