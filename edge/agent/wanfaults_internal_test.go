package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip"
)

func TestWANFaults(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want gossip.LinkFaults
		err  string // part of the error; "" for none
	}{
		{"none asked leaves gossip as it is", Options{}, gossip.LinkFaults{}, ""},
		{"a delay, a jitter and a loss reach the gossip between data centers",
			Options{WANDelay: 50 * time.Millisecond, WANJitter: 100 * time.Millisecond, WANLoss: 0.01},
			gossip.LinkFaults{Delay: 50 * time.Millisecond, Jitter: 100 * time.Millisecond, Loss: 0.01}, ""},
		{"a loss of one is refused, naming the loss", Options{WANLoss: 1}, gossip.LinkFaults{}, "loss"},
		{"a negative delay is refused, naming the delay", Options{WANDelay: -time.Second}, gossip.LinkFaults{}, "delay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tuned := false
			c.opts.GossipTune = func(*gossip.Config) { tuned = true }
			tune, err := wanFaults(c.opts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g gossip.Config
			tune(&g)
			if g.WANFaults != c.want || !tuned {
				t.Fatalf("gossip faults %+v (the caller's tune run: %v), want %+v and the caller's tune run", g.WANFaults, tuned, c.want)
			}
		})
	}
}
