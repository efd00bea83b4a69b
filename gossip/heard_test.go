package gossip

import (
	"testing"
	"time"
)

func TestSuspectedMemberIsOneUnheardForTwoProbeRounds(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// LAN timings: a probe a second, half a second to answer.
	pi, pt := time.Second, 500*time.Millisecond
	tests := []struct {
		name    string
		members int
		ago     time.Duration
		never   bool
		want    bool
	}{
		{name: "a member acked a moment ago is not suspected", members: 3, ago: 100 * time.Millisecond},
		{name: "a member of three unheard for exactly two rounds and a timeout is not yet suspected", members: 3, ago: 4500 * time.Millisecond},
		{name: "a member of three unheard for longer than two rounds and a timeout is suspected", members: 3, ago: 4501 * time.Millisecond, want: true},
		{name: "a member of ten unheard for five seconds is not suspected: its turn comes every nine", members: 10, ago: 5 * time.Second},
		{name: "a member of ten unheard for twenty seconds is suspected", members: 10, ago: 20 * time.Second, want: true},
		{name: "a two-node ring still gives its peer two probes", members: 2, ago: 2 * time.Second},
		{name: "a lone node's threshold counts one peer", members: 1, ago: 3 * time.Second, want: true},
		{name: "a member never heard of is not suspected", members: 3, never: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			last := t0
			if tc.never {
				last = time.Time{}
			}
			now := t0.Add(tc.ago)
			if got := Suspected(last, now, SuspectAfter(tc.members, pi, pt)); got != tc.want {
				t.Errorf("Suspected(heard %s ago, %d members) = %v, want %v", tc.ago, tc.members, got, tc.want)
			}
		})
	}
}
