package fidelity

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// TestTheFrontOfTheLineIsToldTheTruth runs one real `waitroom serve` process
// with a room of one, one visitor let in, and two apps that ask for the
// queue answer's JSON form and come back with their cookie when it says, as
// a browser does: the first alone in line, the second a second later. Each
// is told, on its first answer and after its proof, exactly how many are
// ahead of it: nobody ahead of the first, the first ahead of the second.
func TestTheFrontOfTheLineIsToldTheTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a real process: not with -short")
	}
	t.Parallel() // a real process, mostly waiting on it: side by side
	bin := buildBinary(t)
	org := edgetest.NewOrigin(t)
	s := Scenario{Name: "places", Nodes: 1, Limits: Limits{TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: 5 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startTestCluster(t, ctx, bin, t.TempDir(), s, org.URL)
	target := c.url(0)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	in := crowd.NewVisitor(tr, http.Header{VisitorHeader: {"in"}}, 10*time.Second)
	if a := in.Get(ctx, target); a.Outcome != crowd.Admitted {
		t.Fatalf("the first visitor: %v (%v); want it let in", a.Outcome, a.Err)
	}
	app := func(name string) *crowd.Visitor {
		return crowd.NewVisitor(tr, http.Header{VisitorHeader: {name}, "Accept": {crowd.AcceptJSON}}, 10*time.Second)
	}
	// told asks for v's next answer and returns the place it gives.
	told := func(who string, v *crowd.Visitor) int64 {
		t.Helper()
		a := v.Get(ctx, target)
		if a.Outcome != crowd.Queued || a.Wait == nil || !a.Wait.PositionKnown {
			t.Fatalf("%s: %v, %+v (%v); want a queue answer with a place in line", who, a.Outcome, a.Wait, a.Err)
		}
		return a.Wait.Position
	}
	first, second := app("first"), app("second")
	start := time.Now()
	at := func(d time.Duration) { crowd.Sleep(ctx, time.Until(start.Add(d))) }
	steps := []struct {
		name  string
		at    time.Duration // after the first's first request
		who   *crowd.Visitor
		ahead int64
	}{
		{"the first, alone in line, is told 0 on its first answer", 0, first, 0},
		{"the second, a second later, is told 1 on its first answer", time.Second, second, 1},
		{"the first is told 0 after its proof", 2100 * time.Millisecond, first, 0},
		{"the second is told 1 after its proof", 3100 * time.Millisecond, second, 1},
		{"the first is told 0 at its next check-in", 9 * time.Second, first, 0},
		{"the second is told 1 at its next check-in", 10 * time.Second, second, 1},
	}
	for _, st := range steps {
		at(st.at)
		if got := told(st.name, st.who); got != st.ahead {
			t.Errorf("%s: told %d", st.name, got)
		}
	}
}
