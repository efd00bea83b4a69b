package statetable

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom/edge/api"
)

// Write prints a state document for a person.
func Write(w io.Writer, d *api.StateDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "node %s (replica %s) at %s\n\n", d.Node, d.Replica, d.Time.Format(time.RFC3339))
	fmt.Fprintln(tw, "MEMBER\tADDRESS\tSTATE\tLAST HEARD")
	for _, m := range d.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, m.Addr, m.State, heardAgo(m.LastHeard, d.Time))
	}
	if len(d.Datacenters) > 0 {
		fmt.Fprintf(tw, "\nDATA CENTER\tNODES\tCARRIERS\tMEMBERS\n")
		for _, dc := range d.Datacenters {
			name := dc.Name
			if dc.Own {
				name += " (this node's)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", name, dc.Nodes, orDash(strings.Join(dc.Carriers, " ")), orDash(strings.Join(dc.Members, " ")))
		}
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
		fmt.Fprintf(tw, "ring time: %s (this node's clock corrected by %s)\n", d.RingTime.Format(time.RFC3339), signedMs(l.Ring.RingOffsetMs))
		if l.Ring.ClockFarOff {
			fmt.Fprintf(tw, "CLOCK FAR OFF: this node's clock is %s off its peers' median; the ring's time is used for counts, but set the clock right (NTP)\n", signedMs(l.Ring.SkewMs))
		}
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
	if len(d.Webhooks) > 0 {
		fmt.Fprintln(tw, "\nWEBHOOK\tDELIVERED\tFAILED ATTEMPTS\tGIVEN UP\tPENDING\tLAST ERROR")
		for _, h := range d.Webhooks {
			last := "-"
			if h.LastError != "" {
				last = h.LastErrAt.UTC().Format(time.RFC3339) + " " + h.LastError
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", h.Name, h.Delivered, h.Failed, h.GivenUp, h.Pending, last)
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
		if r.Source != "" {
			fmt.Fprintf(tw, "  settings from\t%s\n", r.Source)
		}
		fmt.Fprintf(tw, "  active users\t%d / %d\n", r.EstimatedTotalActiveUsers, r.TotalActiveUsers)
		fmt.Fprintf(tw, "  new users this minute\t%d / %d\n", r.NewUsersThisMinute, r.NewUsersPerMinute)
		fmt.Fprintf(tw, "  queued\t%d\n", r.EstimatedQueuedUsers)
		fmt.Fprintf(tw, "  open slots\t%d\n", r.OpenSlots)
		fmt.Fprintf(tw, "  admissions per minute\t%.1f\n", r.AdmissionsPerMinute)
		fmt.Fprintf(tw, "  longest estimated wait\t%d min\n", r.MaxEstimatedTimeMinutes)
		if c := r.Cut; c != nil {
			fmt.Fprintf(tw, "  CUT OFF\t%d of %d nodes reachable: figures are this part's, held to %d active / %d per minute; the others last said %.0f active, %d admitted this minute, %d waiting\n",
				c.ReachableNodes, c.ExpectedNodes, c.TotalActiveUsers, c.NewUsersPerMinute, c.ElsewhereActive, c.ElsewhereAdmitted, c.ElsewhereWaiting)
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
			writePriorityGroups(tw, an.PriorityGroups)
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

// signedMs is a duration in ms with its sign always shown.
func signedMs(ms float64) string {
	if ms < 0 {
		return msDur(ms)
	}
	return "+" + msDur(ms)
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

// heardAgo is how long before the document's time a member last acked a
// probe: "-" for this node itself, which has no such time.
func heardAgo(last, at time.Time) string {
	if last.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s ago", max(at.Sub(last), 0).Round(100*time.Millisecond))
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
