package loadtest

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the report for a person.
func (r *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	load := fmt.Sprintf("closed loop, %d visitors", r.Concurrency)
	if r.Mode == "open" {
		load = fmt.Sprintf("open loop, %g req/s", r.Rate)
	}
	fmt.Fprintf(tw, "target\t%s\n", strings.Join(r.Targets, ", "))
	fmt.Fprintf(tw, "load\t%s, %s\n", load, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(tw, "requests\t%d (%.0f/s answered)\n", r.Requests, r.Throughput)
	fmt.Fprintf(tw, "  admitted\t%d\t%.0f/s\n", r.Admitted, r.PerSecond(r.Admitted))
	fmt.Fprintf(tw, "  queued\t%d\t%.0f/s\n", r.Queued, r.PerSecond(r.Queued))
	fmt.Fprintf(tw, "  rejected\t%d\t%.0f/s\n", r.Rejected, r.PerSecond(r.Rejected))
	fmt.Fprintf(tw, "  errors\t%d\t%s\n", r.Errors, kinds(r.ErrorKind))
	if r.Missed > 0 {
		fmt.Fprintf(tw, "  missed starts\t%d\t(max in flight reached: the target is slower than the rate)\n", r.Missed)
	}
	fmt.Fprintf(tw, "status codes\t%s\n", statuses(r.Status))
	fmt.Fprintf(tw, "visitors\t%d: %d queued at some point, %d admitted (%d after waiting)\n",
		r.Visitors, r.VisitorsQueued, r.VisitorsAdmitted, r.VisitorsAdmittedAfter)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "latency\tcount\tmin\tmean\tp50\tp90\tp99\tp99.9\tmax")
	row := func(name string, s Summary) {
		if s.Count == 0 {
			fmt.Fprintf(tw, "%s\t0\n", name)
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Count,
			FormatDuration(s.Min), FormatDuration(s.Mean), FormatDuration(s.P50), FormatDuration(s.P90),
			FormatDuration(s.P99), FormatDuration(s.P999), FormatDuration(s.Max))
	}
	row("all", r.Latency)
	row("admitted", r.AdmittedLatency)
	row("queued", r.QueuedLatency)
	if r.WaitToAdmission.Count > 0 {
		row("wait to admission", r.WaitToAdmission)
	}
	return tw.Flush()
}

// FormatDuration prints a latency with three significant digits.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}

// kinds lists the errors by kind, in the kinds' order.
func kinds(m map[string]uint64) string { return sortedCounts(m, "%s %d") }

// statuses lists the answers by status code, in the codes' order.
func statuses(m map[int]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	return sortedCounts(m, "%d: %d")
}

// sortedCounts lists m's counts in the order of their keys, each written
// by format from the key and the count, separated by ", ".
func sortedCounts[K cmp.Ordered](m map[K]uint64, format string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, format, k, m[k])
	}
	return b.String()
}
