package fidelity

import "time"

// Data centers. A scenario can group its nodes in data centers (serve's
// --datacenter): the nodes of one meet in a pool of their own, share its
// slots, and two of them carry the data center's figures to the others
// over the pool between data centers. On one machine's loopback that pool
// would be as fast as the other; WANLink puts the data centers far apart,
// through serve's hidden, test-only flags that delay and lose what a node
// sends between data centers (--test-wan-delay, --test-wan-jitter,
// --test-wan-loss). Each node delays what it sends, so each direction of a
// link is delayed once.

// WANLink is the link between data centers: every packet and stream write
// one sends to another leaves Delay plus a uniform draw in [0, Jitter)
// late, and Loss of the packets are lost.
type WANLink struct {
	Delay  time.Duration `json:"delay_ns"`
	Jitter time.Duration `json:"jitter_ns"`
	Loss   float64       `json:"loss"`
}

// datacenterNames are the data centers of the datacenters-3x3 scenario,
// three nodes each.
var datacenterNames = []string{"paris", "tokyo", "sydney"}

// datacenters is the datacenters-3x3 scenario, at its full length (ten
// minutes) or its short one (three): nine nodes in three data centers a WAN
// apart (50–150 ms one way, 1 % of packets lost), the crowd of
// sessions-1min arriving unevenly over them, half at paris's nodes, a third
// at tokyo's and a sixth at sydney's, evenly over each data center's nodes
// as a round-robin balancer spreads them.
func datacenters(short bool) Scenario {
	const perDC = 3
	s := Scenario{
		Name:        "datacenters-3x3",
		Description: "3 data centers × 3 nodes, 50–150 ms one way and 1% packet loss between data centers: 1-minute sessions, arrivals at 1.5× new_users_per_minute at random, half at paris's nodes, a third at tokyo's, a sixth at sydney's",
		Nodes:       perDC * len(datacenterNames),
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      10 * time.Minute,
		WAN:         &WANLink{Delay: 50 * time.Millisecond, Jitter: 100 * time.Millisecond, Loss: 0.01},
	}
	if short {
		s.Length = 3 * time.Minute
	}
	share := []float64{3, 2, 1}
	for i, dc := range datacenterNames {
		for range perDC {
			s.Datacenters = append(s.Datacenters, dc)
			s.Weights = append(s.Weights, share[i])
		}
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 60}}
	s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax = 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second
	return s
}
