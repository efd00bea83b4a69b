package fidelity

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Every node alive, no panic in the logs: the figure a ring must hold in
// every scenario, whatever its limits. A state that makes the policy panic
// is merged by every node alike, so one panic is the whole ring down in
// the same second; and a node that recovers from it still has a room that
// misbehaved. So a run counts the serve processes that exited on their own
// (not the scenario's deliberate kill, nor the stop at its end), the nodes
// still running when the crowd ends, and the panics: Go's own crash dumps
// on a node's stderr, the node's log lines of recovered panics, and its
// waitroom_panics_total at the end, whichever saw more.

// Health is how the ring's processes lived through a run.
type Health struct {
	// Nodes is the ring's size; NodesAlive how many of its processes were
	// running when the crowd ended.
	Nodes      int `json:"nodes"`
	NodesAlive int `json:"nodes_alive"`
	// Exits are the processes that ended on their own: node, when, how.
	Exits []string `json:"exits,omitempty"`
	// Panics counts the panics seen, per node the more of its log's and
	// its waitroom_panics_total's (a restarted node's counter starts
	// again; its log goes on).
	Panics int `json:"panics"`
	// PanicLines are the first lines that told of them, by node.
	PanicLines []string `json:"panic_lines,omitempty"`
	// LogsUnread counts the node logs that could not be read: their panics
	// are not known, so the figure is not met.
	LogsUnread int `json:"logs_unread,omitempty"`
}

// Healthy reports whether every node lived through the run without a
// panic.
func (h Health) Healthy() bool {
	return h.NodesAlive == h.Nodes && len(h.Exits) == 0 && h.Panics == 0 && h.LogsUnread == 0
}

// String is the figure as the table prints it: the exits, and the first
// panic line (all of them are in the JSON).
func (h Health) String() string {
	s := fmt.Sprintf("%d of %d alive, %d panics", h.NodesAlive, h.Nodes, h.Panics)
	var also []string
	for _, e := range h.Exits {
		also = append(also, "exited on its own: "+e)
	}
	if len(h.PanicLines) > 0 {
		first := "first " + h.PanicLines[0]
		if len(h.PanicLines) > 1 {
			first += fmt.Sprintf(" (%d more lines in --json)", len(h.PanicLines)-1)
		}
		also = append(also, first)
	}
	if len(also) > 0 {
		s += " (" + strings.Join(also, "; ") + ")"
	}
	return s
}

// healthGoal holds a run's health to its goal.
func healthGoal(h Health) Goal {
	return Goal{Key: GoalAlive, Figure: "every node alive, no panic in the logs", Value: float64(h.Panics + len(h.Exits) + h.Nodes - h.NodesAlive),
		Shown: h.String(), Goal: "all alive, 0 panics", Met: h.Healthy()}
}

// maxPanicLines is how many panic lines a node's log gives the report.
const maxPanicLines = 3

// panicLineLen bounds each panic line in the report.
const panicLineLen = 240

// goroutineHeader starts each goroutine of a Go stack dump.
var goroutineHeader = regexp.MustCompile(`^goroutine \d+ \[`)

// scanPanics reads a node's log (its stderr: zerolog JSON lines, and
// whatever the Go runtime writes when the process crashes) and counts the
// panics in it: a runtime crash ("panic: …" or "fatal error: …", with its
// goroutine dump, counted once; a dump without either, once), and each log
// line of a recovered one (a message that speaks of a panic, as the node's
// "recovered from a panic" and net/http's "http: panic serving …" do, or a
// line at zerolog's panic level). lines are the first few that told.
func scanPanics(r io.Reader) (n int, lines []string) {
	see := func(line string) {
		n++
		if len(lines) < maxPanicLines {
			// A message may carry its stack: its first line says what
			// panicked.
			line, _, _ = strings.Cut(line, "\n")
			if len(line) > panicLineLen {
				line = line[:panicLineLen] + "…"
			}
			lines = append(lines, line)
		}
	}
	// inDump: the lines that follow belong to a crash already counted.
	inDump := false
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadString('\n')
		line := strings.TrimRight(raw, "\r\n")
		if line != "" {
			if msg, level, ok := logLine(line); ok {
				inDump = false
				if strings.Contains(strings.ToLower(msg), "panic") || level == "panic" {
					msg, _, _ = strings.Cut(msg, "\n")
					see(strings.TrimSpace(level + " " + msg + panicValue(line)))
				}
			} else {
				switch {
				case strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: "):
					see(line)
					inDump = true
				case goroutineHeader.MatchString(line):
					if !inDump {
						see(line)
						inDump = true
					}
				case strings.Contains(line, "http: panic serving"):
					see(line)
				}
			}
		}
		if err != nil {
			return n, lines
		}
	}
}

// logLine reads a zerolog JSON line's message and level; ok is false for
// a line that is not one.
func logLine(line string) (msg, level string, ok bool) {
	if !strings.HasPrefix(line, "{") {
		return "", "", false
	}
	var doc struct {
		Message string `json:"message"`
		Level   string `json:"level"`
	}
	if json.Unmarshal([]byte(line), &doc) != nil {
		return "", "", false
	}
	return doc.Message, doc.Level, true
}

// panicValue is ": " and the value a recovered panic's log line names, if
// it does: what panicked, for the report.
func panicValue(line string) string {
	var doc struct {
		Panic any `json:"panic"`
	}
	if json.Unmarshal([]byte(line), &doc) != nil || doc.Panic == nil {
		return ""
	}
	return ": " + fmt.Sprint(doc.Panic)
}

// scanLogFile counts the panics in a node's log file.
func scanLogFile(path string) (int, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	n, lines := scanPanics(f)
	return n, lines, nil
}

// panicsMetric is the counter of recovered panics a node exports.
const panicsMetric = "waitroom_panics_total"

// sumMetric adds up every sample of the named metric in a Prometheus text
// exposition; a metric that is not there counts zero.
func sumMetric(r io.Reader, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		// The value, then an optional timestamp.
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// panicsCounted reads a node's waitroom_panics_total from its admin
// endpoint; a node that does not answer counts zero (its exit or its log
// tells).
func (c *cluster) panicsCounted(ctx context.Context, n *node) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0
	}
	return int(sumMetric(resp.Body, panicsMetric))
}

// liveness is, at the crowd's end, how many nodes run, the processes that
// ended on their own, and each running node's count of recovered panics.
func (c *cluster) liveness(ctx context.Context) (alive int, exits []string, counted map[string]int) {
	counted = map[string]int{}
	for _, n := range c.nodes {
		exits = append(exits, n.deathsSeen()...)
		if n.hasExited() {
			continue
		}
		alive++
		counted[n.name] = c.panicsCounted(ctx, n)
	}
	return alive, exits, counted
}

// panicsLogged scans every node's log, once the ring has stopped, and
// adds them to h with the nodes' counted panics: per node the more of the
// two.
func (c *cluster) panicsLogged(h *Health, counted map[string]int) {
	for _, n := range c.nodes {
		logged, lines, err := scanLogFile(n.logPath)
		if err != nil {
			h.LogsUnread++
			h.PanicLines = append(h.PanicLines, fmt.Sprintf("%s: log not read: %v", n.name, err))
		}
		h.Panics += max(logged, counted[n.name])
		for _, l := range lines {
			h.PanicLines = append(h.PanicLines, n.name+": "+l)
		}
		if logged == 0 && counted[n.name] > 0 {
			h.PanicLines = append(h.PanicLines, fmt.Sprintf("%s: %s %d", n.name, panicsMetric, counted[n.name]))
		}
	}
}
