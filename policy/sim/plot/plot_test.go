package plot_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy/sim"
	"github.com/waitroom/waitroom/policy/sim/plot"
)

// TestEveryPlotIsWritten draws every plot of a small run of the reference
// experiment.
func TestEveryPlotIsWritten(t *testing.T) {
	sc, err := sim.Load("../../../testdata/scenarios/reference-random.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Room.TotalActiveUsers, sc.Room.NewUsersPerMinute = 500, 250
	sc.Visitors.Arrival.Visitors = 300
	sc.Visitors.Arrival.End = sim.Duration(10 * time.Minute)
	sc.Duration = sim.Duration(3 * time.Minute)
	rep, err := sim.RunScenario(sc, sim.StrategyOurs)
	if err != nil {
		t.Fatal(err)
	}
	files, err := plot.Write(rep, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(plot.Names) {
		t.Fatalf("wrote %v, want one file for each of %v", files, plot.Names)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", f, err)
		}
	}
}
