package fidelity

import (
	"time"
)

// randomQueue is the optional scenario of a room that queues at random, for
// the truth of a random queue's page (the share of visitors let in within
// its 25th, 50th and 75th percentile estimates): sessions-1min's crowd for
// 40 % of the run, then nobody new, until the queue has drained, as in
// longQueue. A percentile is judged once it has run out, so a run that
// ended with its queue standing (the crowd for three quarters of ten
// minutes) judged the 75th percentile of 300 of 1,900 pages, the first
// four minutes' ones, the crowd young and still growing; drained, it judges
// every page. FIFO order is no goal there.
func randomQueue(length time.Duration, weights []float64) Scenario {
	s := Scenario{
		Name:           "random-queue",
		Description:    "a random queue: 1-minute sessions, arrivals at 1.5× new_users_per_minute at random for 40% of the run, then nobody new until the queue has drained, visitors browse 20–90 s",
		Nodes:          len(weights),
		Limits:         Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:         length,
		Weights:        weights,
		QueueingMethod: "random",
	}
	s.Waves = []Wave{{For: s.Length * 2 / 5, PerMinute: 60}}
	s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax = 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second
	return s
}

// longQueue is the optional scenario of a queue long enough for its
// estimates to be judged (truth.MinJudgedWait or more left): 2.5× the
// new_users_per_minute for six minutes, then nobody new, until the queue
// has drained; 15 minutes in all (7 when short).
func longQueue(length time.Duration, weights []float64) Scenario {
	s := Scenario{
		Name:        "long-queue",
		Description: "a queue long enough to judge its estimates: 1-minute sessions, arrivals at 2.5× new_users_per_minute for 40% of the run, visitors browse 20–90 s",
		Nodes:       len(weights),
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length,
		Weights:     weights,
	}
	s.Waves = []Wave{{For: s.Length * 2 / 5, PerMinute: 100}}
	s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax = 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second
	return s
}

// queueingGoals sets aside two goals of a room that queues at random for
// all or part of the run, which are FIFO's: the order, since a random queue
// lets visitors in out of it by design, and the longest free slot, since a
// random queue has no front of the line to check in sooner, so a slot
// waits for the next draw of anyone's ~20 s refresh. Both are still shown,
// as how far from FIFO the room was.
func queueingGoals(s Scenario, goals []Goal) []Goal {
	if !s.queuesAtRandom() {
		return goals
	}
	why := "none (random queue)"
	if len(s.Switches) > 0 {
		why = "none (random queue for a while)"
	}
	for i := range goals {
		if goals[i].Key == GoalFIFO || goals[i].Key == GoalFreeSlot {
			goals[i].Goal, goals[i].Met = why, true
		}
	}
	return goals
}
