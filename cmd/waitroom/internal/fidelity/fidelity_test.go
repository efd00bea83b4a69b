package fidelity

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestFidelityShort runs every scenario's short version against real
// `waitroom serve` processes, side by side, and holds each to the goals.
// It takes about six minutes, so it runs only with WAITROOM_FIDELITY=1.
func TestFidelityShort(t *testing.T) {
	if os.Getenv("WAITROOM_FIDELITY") != "1" {
		t.Skip("real processes for about six minutes: set WAITROOM_FIDELITY=1")
	}
	bin := buildBinary(t)
	scenarios := Scenarios(true, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	results, err := Run(ctx, Options{Binary: bin, Scenarios: scenarios, Parallel: len(scenarios), Seed: 1, Dir: dir, Progress: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = WriteText(&table, results)
	t.Log("\n" + table.String())
	for _, r := range results {
		t.Run(r.Scenario.Name+" holds every goal", func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("not measured: %s", r.Error)
			}
			for _, g := range r.Goals {
				if !g.Met {
					t.Errorf("%s is %s; the goal is %s", g.Figure, g.Shown, g.Goal)
				}
			}
		})
	}
}

// buildBinary builds the waitroom command for a test of real processes.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "waitroom")
	build := exec.Command("go", "build", "-o", bin, "github.com/waitroom/waitroom/cmd/waitroom")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startTestCluster starts the ring of scenario s for a test, behind the
// origin at originURL, and stops it when the test ends.
func startTestCluster(t *testing.T, ctx context.Context, bin, dir string, s Scenario, originURL string) *cluster {
	t.Helper()
	c, err := startCluster(ctx, bin, dir, s, originURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

func TestPlans(t *testing.T) {
	t.Run("the same seed draws the same crowd", func(t *testing.T) {
		s := Scenarios(true, 3)[0]
		a, b := plans(s, 7), plans(s, 7)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%d and %d visitors", len(a), len(b))
		}
		for i := range a {
			if a[i].arrive != b[i].arrive || a[i].node != b[i].node || a[i].browse != b[i].browse {
				t.Fatalf("visitor %d differs: %+v vs %+v", i, a[i], b[i])
			}
		}
	})
	t.Run("an even wave brings exactly its count within its span", func(t *testing.T) {
		for _, s := range Scenarios(true, 3) {
			if s.Name != "fresh-flood" {
				continue
			}
			ps := plans(s, 1)
			if len(ps) != 120 {
				t.Fatalf("%d visitors; want 120", len(ps))
			}
			perNode := map[int]int{}
			for _, p := range ps {
				if p.arrive < 5*time.Second || p.arrive >= 15*time.Second {
					t.Fatalf("arrival at %v, outside 5–15 s", p.arrive)
				}
				perNode[p.node]++
			}
			for n := range 3 {
				if perNode[n] < 25 || perNode[n] > 55 {
					t.Fatalf("node %d gets %d of 120; want about 40", n, perNode[n])
				}
			}
		}
	})
	t.Run("a regional crowd sends about four times the traffic to the first node", func(t *testing.T) {
		s := mustScenario(t, "regional-4-1-1")
		perNode := map[int]int{}
		for _, p := range plans(s, 1) {
			perNode[p.node]++
		}
		r := float64(perNode[0]) / float64(perNode[1]+perNode[2]) * 2
		if r < 3.3 || r > 4.8 {
			t.Fatalf("the first node gets %.2f× each other's traffic (%v); want about 4", r, perNode)
		}
	})
	t.Run("a visitor's pages fit in its browsing time", func(t *testing.T) {
		for _, s := range Scenarios(true, 3) {
			for _, p := range plans(s, 1) {
				var d time.Duration
				for _, g := range p.pageEvery {
					if g < s.PageEveryMin || g > s.PageEveryMax {
						t.Fatalf("%s: a gap of %v outside %v–%v", s.Name, g, s.PageEveryMin, s.PageEveryMax)
					}
					d += g
				}
				if d > p.browse {
					t.Fatalf("%s: pages over %v in a stay of %v", s.Name, d, p.browse)
				}
			}
		}
	})
}

func mustScenario(t *testing.T, name string) Scenario {
	t.Helper()
	s, err := Select(Scenarios(false, 3), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}

func TestChoose(t *testing.T) {
	var defaults []string
	for _, s := range Scenarios(true, 3) {
		defaults = append(defaults, s.Name)
	}
	cases := []struct {
		name  string
		names []string
		want  []string // nil: refused
	}{
		{"no names choose every default scenario and no optional one", nil, defaults},
		{"an optional scenario runs when named", []string{"priority-mix"}, []string{"priority-mix"}},
		{"default and optional scenarios run in the order named", []string{"long-queue", "steady-95"}, []string{"long-queue", "steady-95"}},
		{"an unknown name is refused", []string{"no-such-scenario"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Choose(true, 3, c.names)
			if c.want == nil {
				if err == nil {
					t.Fatalf("chose %d scenarios; want an error", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
				if s.Nodes != 3 {
					t.Errorf("%s has %d nodes; want 3", s.Name, s.Nodes)
				}
			}
			if !slices.Equal(names, c.want) {
				t.Fatalf("chose %v; want %v", names, c.want)
			}
		})
	}
}
