package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// addLoad records the machine's load average now (see Report.Load).
func (rep *Report) addLoad() {
	if v, err := strconv.ParseFloat(testkit.LoadAverage(), 64); err == nil {
		rep.Load = append(rep.Load, v)
	}
}

func loads(v []float64) string {
	parts := make([]string, len(v))
	for i, l := range v {
		parts[i] = fmt.Sprintf("%.1f", l)
	}
	return strings.Join(parts, ", ")
}

// WriteMarkdown writes the README's performance table from the report: the
// flood's three paths against nginx (and Caddy where it ran), each figure
// the range over the rounds, with the command, the machine and the load
// average beside them. command is how the report was made.
func (rep *Report) WriteMarkdown(w io.Writer, command string) error {
	find := func(name, proxy string) *Comparison {
		for i := range rep.External {
			c := &rep.External[i]
			if c.Name == name && strings.HasPrefix(c.Baseline, proxy+" ") {
				return c
			}
		}
		return nil
	}
	m := rep.Machine
	fmt.Fprintf(w, "Measured with `%s` on %s: %d CPUs (%s), %s, GOMAXPROCS %d, load average %s (1 min, at the start and after each of the %d rounds), %s UTC.\n",
		command, hostOf(m), m.NumCPU, m.CPUModel, m.GoVersion, m.GOMAXPROCS, loads(rep.Load), rep.Rounds, rep.Started.Format("2006-01-02 15:04"))
	fmt.Fprintf(w, "Each figure is the range over the rounds; the sides of a comparison alternate every %s for %s each per round, %d cookie-keeping visitors, a %d-byte origin page.\n\n",
		rep.Slice, rep.Duration, rep.Concurrency, rep.OriginSize)
	fmt.Fprintln(w, "| in this process | baseline | waitroom / baseline | goal |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, c := range []*Comparison{&rep.AdmittedThroughput, &rep.QueuedThroughput, &rep.AdmittedCPU, &rep.QueuedCPU} {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.Name, c.Baseline, ratios(c.PerRound), verdict(c))
	}
	fmt.Fprintln(w)
	if find("admitted throughput", "nginx") == nil {
		fmt.Fprintln(w, "(nginx was not installed: no table against it.)")
		return nil
	}
	fmt.Fprintln(w, "| path | nginx | Caddy | waitroom | waitroom / nginx | goal | CPU per request, waitroom / nginx |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	row := func(what string, c, cpu, caddy, caddyCPU *Comparison) {
		caddyCol, caddyRatio, caddyCPURatio := "—", "", ""
		if caddy != nil {
			caddyCol = span(caddy.Base, " req/s")
			caddyRatio = fmt.Sprintf(" (%s Caddy)", ratios(caddy.PerRound))
		}
		if caddyCPU != nil {
			caddyCPURatio = fmt.Sprintf(" (%s Caddy)", ratios(caddyCPU.PerRound))
		}
		cpuCol := "—"
		if cpu != nil {
			cpuCol = fmt.Sprintf("%s (%s vs %s µs)%s", ratios(cpu.PerRound), span(cpu.Base, ""), span(cpu.Room, ""), caddyCPURatio)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | **%s**%s | %s | %s |\n", what, span(c.Base, " req/s"), caddyCol, span(c.Room, " req/s"), ratios(c.PerRound), caddyRatio, verdict(c), cpuCol)
	}
	row("admitted, proxied to the origin", find("admitted throughput", "nginx"), find("CPU per admitted request", "nginx"),
		find("admitted throughput", "Caddy"), find("CPU per admitted request", "Caddy"))
	if c := find("queued throughput", "nginx"); c != nil {
		row(fmt.Sprintf("queued: every request a new visitor, the %d-byte first page (nginx: the same bytes as a static file)", rep.QueuePageSize), c, find("CPU per queued response", "nginx"), nil, nil)
	}
	if c := find("forward-auth admitted throughput", "nginx"); c != nil {
		row("admitted behind nginx `auth_request` (the shipped forward-auth file), against nginx `proxy_pass` alone", c, find("forward-auth CPU per request", "nginx"), nil, nil)
	}
	fmt.Fprintln(w, "\nCPU per request counts the whole process on each side (the generator and the origin, which both sides spend, included); on a busy machine it is the figure to judge by, since a separate process gets its own share of the CPUs.")
	for _, sp := range rep.Split {
		if strings.HasPrefix(sp.Proxy, "nginx ") && len(sp.Admitted) > 0 && len(sp.Queued) > 0 {
			fmt.Fprintf(w, "nginx's own process: %s µs per admitted request, %s µs per queued response.\n", span(sp.Admitted, ""), span(sp.Queued, ""))
		}
	}
	return nil
}

// span is the range of v, "a–b" (thousands as k above 10,000).
func span(v []float64, unit string) string {
	if len(v) == 0 {
		return "—"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	f := func(x float64) string {
		switch {
		case hi >= 10000:
			return fmt.Sprintf("%.1f", x/1000)
		case hi >= 100:
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.1f", x)
	}
	k := ""
	if hi >= 10000 {
		k = "k"
	}
	if f(lo) == f(hi) {
		return f(lo) + k + unit
	}
	return f(lo) + "–" + f(hi) + k + unit
}

// ratios is the range of the per-round ratios, "× a–b".
func ratios(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if fmt.Sprintf("%.2f", lo) == fmt.Sprintf("%.2f", hi) {
		return fmt.Sprintf("× %.2f", lo)
	}
	return fmt.Sprintf("× %.2f–%.2f", lo, hi)
}

func verdict(c *Comparison) string {
	switch {
	case c.Goal == "":
		return ""
	case c.OK:
		return c.Goal + " (median × " + strconv.FormatFloat(c.Value, 'f', 2, 64) + ": met)"
	}
	return c.Goal + " (median × " + strconv.FormatFloat(c.Value, 'f', 2, 64) + ": missed)"
}

func hostOf(m Machine) string {
	return m.OS + "/" + m.Arch
}
