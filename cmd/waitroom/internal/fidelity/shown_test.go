package fidelity

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

func TestJudgeShown(t *testing.T) {
	told := func(s float64, wait int) Shown {
		return Shown{At: at(s), First: true, Wait: crowd.Wait{WaitTimeKnown: true, WaitTime: wait, WaitTime25: wait, WaitTime50: wait, WaitTime75: wait}}
	}
	placed := func(s float64, pos int64) Shown {
		return Shown{At: at(s), Wait: crowd.Wait{WaitTimeKnown: true, WaitTime: 6, WaitTime25: 6, WaitTime50: 6, WaitTime75: 6, PositionKnown: true, Position: pos}}
	}
	// Three visitors queued 10, 11 and 12 s into the run and let in at 6,
	// 7 and 8 minutes; the third held a priority code. Each read its wait
	// on its first page and its place in line on its second, 2 s later.
	log := Log{End: at(900),
		Arrivals: []Arrival{
			{Visitor: "q1", Arrived: at(10), Queued: at(10), Pages: []Shown{told(10, 6), placed(12, 0)}},  // 5:50 left: 6 min is within a fifth, and so at 5:48
			{Visitor: "q2", Arrived: at(11), Queued: at(11), Pages: []Shown{told(11, 10), placed(13, 1)}}, // 6:49 left: 10 min is not, but 6 at 6:47 is; q1 is ahead
			{Visitor: "q3", Arrived: at(12), Queued: at(12), Pages: []Shown{told(12, 1), placed(14, 0)}, Priority: true},
			{Visitor: "b", Arrived: at(13), Queued: at(13)}, // a browser: nothing read
		},
		Hits: join(hits("q1", 360), hits("q2", 420), hits("q3", 480), hits("b", 540)),
	}
	got := Judge(log, oneMinute).Shown
	if got == nil {
		t.Fatal("no figures for what the apps were told")
	}
	if got.Samples != 2 || got.EstimateSamples != 4 || got.FirstEstimateSamples != 2 || got.PositionSamples != 2 || got.RandomSamples != 0 {
		t.Fatalf("judged %d told, %d estimates (%d first), %d positions, %d random; want the two apps without a code, every page, no random",
			got.Samples, got.EstimateSamples, got.FirstEstimateSamples, got.PositionSamples, got.RandomSamples)
	}
	if *got.EstimateWithin20 != 0.75 || *got.FirstEstimateWithin20 != 0.5 || *got.PositionWithin10 != 1 || got.Heads != 1 || *got.HeadsToldZero != 1 {
		t.Fatalf("estimates within 20%%: %v (first pages %v), positions within 10%%: %v, told 0 with nobody ahead: %v of %d; want 0.75, 0.5, 1 and 1 of 1",
			*got.EstimateWithin20, *got.FirstEstimateWithin20, *got.PositionWithin10, *got.HeadsToldZero, got.Heads)
	}
	var b bytes.Buffer
	if err := WriteText(&b, []Result{{Scenario: Scenario{Name: "s"}, Truth: Truth{Shown: got}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"estimates within ±20% of the wait, every page", "75.0% of 4", "places in line within ±10%, every page", "100.0% of 2", "nobody ahead, told 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	if Judge(Log{Hits: hits("a", 0)}, oneMinute).Shown != nil {
		t.Error("a run where nobody was told anything has figures for it")
	}
}

// TestTheCrowdsAppsNoteWhatTheyWereTold runs a crowd of a browser and an app
// against a room that queues each new visitor once, refreshing at once.
func TestTheCrowdsAppsNoteWhatTheyWereTold(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := r.Cookie("room"); err == nil {
			w.WriteHeader(http.StatusOK) // the origin
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "room", Value: "queued", Path: "/"})
		w.Header().Set("Refresh", "0")
		if r.Header.Get("Accept") == crowd.AcceptJSON {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":4,"waitTime25Percentile":4,"waitTime50Percentile":4,"waitTime75Percentile":4,"position":17,"positionKnown":true}}`))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>About 17 people ahead of you</p>"))
	}))
	defer srv.Close()
	ps := []plan{{id: "v1"}, {id: "v2", app: isApp(1)}}
	cl := runCrowd(context.Background(), ps, time.Now(), func(int) string { return srv.URL })
	if len(cl.arrivals) != 2 {
		t.Fatalf("%d arrivals logged; want 2", len(cl.arrivals))
	}
	for _, a := range cl.arrivals {
		switch {
		case a.Queued.IsZero():
			t.Errorf("%s was never queued", a.Visitor)
		case a.Visitor == "v1" && a.Pages != nil:
			t.Errorf("the browser noted %+v; a page is not read", a.Pages)
		case a.Visitor == "v2" && (len(a.Pages) != 1 || !a.Pages[0].First || a.Pages[0].WaitTime != 4 || a.Pages[0].Position != 17 || !a.Pages[0].At.Equal(a.Queued)):
			t.Errorf("the app noted %+v; want its one page, the first, with the wait 4 and the place 17 at %v", a.Pages, a.Queued)
		}
	}
}

func TestARandomQueueIsNotHeldToFIFO(t *testing.T) {
	s, err := Select(OptionalScenarios(true, 3), []string{"random-queue"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range OptionalScenarios(true, 3) {
		if err := o.Validate(); err != nil {
			t.Errorf("optional scenario: %v", err)
		}
	}
	if !strings.Contains(string(roomConfig(s[0], "http://127.0.0.1:1")), "queueing_method: random\n") {
		t.Fatalf("the room is not a random queue:\n%s", roomConfig(s[0], "http://127.0.0.1:1"))
	}
	inverted := Truth{Admissions: 10, Inversions: 5}
	for _, c := range []struct {
		name string
		s    Scenario
		met  bool
	}{
		{"a random queue's inversions miss no goal", s[0], true},
		{"a FIFO queue's miss the FIFO goal", mustScenario(t, "sessions-1min"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, g := range queueingGoals(c.s, Goals(inverted, c.s.Limits, 0)) {
				if g.Key == GoalFIFO && g.Met != c.met {
					t.Fatalf("FIFO goal %+v; want met %v", g, c.met)
				}
			}
		})
	}
}

// A random queue's page speaks of the lottery: once the operator switches
// the room back to FIFO, its percentiles that had not run out yet are not
// judged, as those that run out after the run's end are not.
func TestARandomQueuesPercentilesAreJudgedUntilTheMethodChanges(t *testing.T) {
	drawn := func(s float64) Shown {
		return Shown{At: at(s), Wait: crowd.Wait{WaitTimeKnown: true, IsRandomQueue: true, WaitTime: 2, WaitTime25: 1, WaitTime50: 2, WaitTime75: 4}}
	}
	// Two apps queued 10 and 11 s into the run, each told 1 / 2 / 4
	// minutes, let in at 1:40 and 3:40.
	log := Log{End: at(900),
		Arrivals: []Arrival{
			{Visitor: "a", Arrived: at(10), Queued: at(10), Pages: []Shown{drawn(10)}},
			{Visitor: "b", Arrived: at(11), Queued: at(11), Pages: []Shown{drawn(11)}},
		},
		Hits: join(hits("a", 100), hits("b", 220)),
	}
	for _, c := range []struct {
		name     string
		switches []time.Time
		judged   [3]int
	}{
		{"without a switch every percentile is judged", nil, [3]int{2, 2, 2}},
		{"a switch back to FIFO at 2:30 leaves out the 75th percentiles", []time.Time{at(150)}, [3]int{2, 2, 0}},
		{"a switch before the pages leaves nothing out", []time.Time{at(5)}, [3]int{2, 2, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := log
			l.Switches = c.switches
			got := Judge(l, oneMinute).Shown
			if got == nil || got.RandomSamplesBy != c.judged {
				t.Fatalf("judged %+v, want the 25th, 50th and 75th percentiles of %v pages", got, c.judged)
			}
		})
	}
}
