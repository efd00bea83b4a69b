package visitors

import (
	"strconv"
	"testing"
	"time"
)

func TestGuessersAreSlowedAfterABurstOfFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	type step struct {
		at     time.Duration
		key    string
		fail   bool // a failure is recorded (else a success)
		slowed bool // whether key is slowed after the step
	}
	burst := func(key string) []step {
		var s []step
		for i := range GuessBurst {
			s = append(s, step{at: time.Duration(i) * time.Second, key: key, fail: true, slowed: i == GuessBurst-1})
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a guesser is slowed at its burst's last failure, not before", burst("a")},
		{"another guesser's failures slow only that one", append(burst("a"), step{at: 5 * time.Second, key: "b", fail: true, slowed: false})},
		{"a slowed guesser gets another attempt once the window has passed", append(burst("a"), step{at: 4*time.Second + GuessWindow, key: "a", fail: true, slowed: true}, step{at: 5*time.Second + 2*GuessWindow, key: "a", fail: false, slowed: false})},
		{"a success forgets the failures", append(burst("a"), step{at: 5 * time.Second, key: "a", fail: false, slowed: false})},
		{"a failure long after the last starts afresh", append(burst("a")[:GuessBurst-1], step{at: guessForget + 4*time.Second, key: "a", fail: true, slowed: false})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g Guessers
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if s.fail {
					g.Failed(s.key, now)
				} else {
					g.Succeeded(s.key)
				}
				if got := g.Slowed(s.key, now); got != s.slowed {
					t.Fatalf("step %d (%+v): slowed %v, want %v", i, s, got, s.slowed)
				}
			}
		})
	}
	t.Run("the guessers remembered are bounded", func(t *testing.T) {
		var g Guessers
		for i := range guessersMax + 10 {
			g.Failed(strconv.Itoa(i), t0)
		}
		if n := len(g.fails); n > guessersMax {
			t.Fatalf("%d guessers remembered, want at most %d", n, guessersMax)
		}
	})
}
