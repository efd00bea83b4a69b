package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestMarkdownTable holds the README's table to the report it is written
// from: each path's ranges over the rounds, the ratios, the goals, the
// command and the load average.
func TestMarkdownTable(t *testing.T) {
	rep := &Report{
		Machine: Machine{NumCPU: 2, CPUModel: "test CPU", GoVersion: "go1.x", GOMAXPROCS: 2, OS: "linux", Arch: "amd64"},
		Rounds:  2, Slice: time.Second / 2, Duration: 5 * time.Second, Concurrency: 32, OriginSize: 611, QueuePageSize: 3533,
		Load:             []float64{1.5, 2.25, 0.75},
		QueuedThroughput: Comparison{Name: "queued throughput", Baseline: "bare server", PerRound: []float64{0.93, 0.96}, Value: 0.945, Goal: "≥ 0.90", OK: true},
		Started:          time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC),
		External: []Comparison{
			{Name: "admitted throughput", Baseline: "nginx 1.22.1", Base: []float64{32800, 35900}, Room: []float64{19600, 19900}, PerRound: []float64{0.6, 0.55}, Value: 0.575, Goal: goalAdmitted},
			{Name: "CPU per admitted request", Baseline: "nginx 1.22.1", Base: []float64{40, 42}, Room: []float64{50, 52}, PerRound: []float64{1.2, 1.3}, Value: 1.25},
			{Name: "queued throughput", Baseline: "nginx 1.22.1 page", Base: []float64{64700, 67800}, Room: []float64{40300, 44900}, PerRound: []float64{0.62, 0.69}, Value: 0.655, Goal: goalQueued},
			{Name: "forward-auth admitted throughput", Baseline: "nginx 1.22.1", Base: []float64{33600, 35500}, Room: []float64{32000, 33000}, PerRound: []float64{0.95, 0.93}, Value: 0.94, Goal: goalForwardAuth, OK: true},
			{Name: "admitted throughput", Baseline: "Caddy 2.6.2", Base: []float64{16600, 18100}, Room: []float64{19600, 19900}, PerRound: []float64{1.08, 1.19}, Value: 1.135, Goal: goalAheadCaddy, OK: true},
		},
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b, "waitroom bench --rounds 2"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Measured with `waitroom bench --rounds 2`",
		"| queued throughput | bare server | × 0.93–0.96 | ≥ 0.90 (median × 0.94: met) |",
		"load average 1.5, 2.2, 0.8",
		"| admitted, proxied to the origin | 32.8–35.9k req/s | 16.6–18.1k req/s | 19.6–19.9k req/s | **× 0.55–0.60** (× 1.08–1.19 Caddy) | ≥ 0.80 (median × 0.57: missed) | × 1.20–1.30 (40.0–42.0 vs 50.0–52.0 µs) |",
		"| queued: every request a new visitor, the 3533-byte first page (nginx: the same bytes as a static file) | 64.7–67.8k req/s | — | 40.3–44.9k req/s | **× 0.62–0.69** | ≥ 0.85 (median × 0.66: missed) | — |",
		"against nginx `proxy_pass` alone | 33.6–35.5k req/s | — | 32.0–33.0k req/s | **× 0.93–0.95** | ≥ 0.90 (median × 0.94: met) | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}
