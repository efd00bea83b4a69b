package gossip_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// The scale harness: hundreds of nodes in one process, grouped in data
// centers, over an in-memory network (gossip.MemNet) with a modelled delay
// between every pair (LAN within a data center, 50-150 ms one way between
// two) and packet loss. It reports how long a count added at one node takes
// to reach every node, and what gossip each node sends while the ring is
// idle and while it admits 1,000 visitors a second. Beside each figure it
// reports the process's share of the delays (how long goroutines waited for
// a CPU, how late the network delivered what was due, packets lost to full
// queues), and splits each count's time into its own data center, the
// crossing to the first node of each other one and the relay within it: a
// starved harness and a slow protocol look alike otherwise. It takes
// minutes, so it runs only on request:
//
//	WAITROOM_SCALE=1 go test -run '^TestScale$' -v -timeout 60m ./gossip/
//
// Knobs (defaults in brackets):
//
//	WAITROOM_SCALE_DCS=100        data centers
//	WAITROOM_SCALE_PER_DC=3       nodes per data center
//	WAITROOM_SCALE_CARRIERS=2     carriers per data center
//	WAITROOM_SCALE_IDLE=30s       idle window measured
//	WAITROOM_SCALE_LOAD=30s       loaded window measured
//	WAITROOM_SCALE_RATE=1000      admissions per second over the ring
//	WAITROOM_SCALE_WRITES=20      counts timed for convergence
//	WAITROOM_SCALE_LOSS=0.01      packet loss
//	WAITROOM_SCALE_LAN=500us      one-way delay within a data center
//	WAITROOM_SCALE_WAN_TUNE=interval=200ms,nodes=4,mult=2   the pool between data centers
func TestScale(t *testing.T) {
	if os.Getenv("WAITROOM_SCALE") != "1" {
		t.Skip("set WAITROOM_SCALE=1 to run the scale harness (it takes minutes)")
	}
	sc := scaleConfig{
		dcs:      envInt("WAITROOM_SCALE_DCS", 100),
		perDC:    envInt("WAITROOM_SCALE_PER_DC", 3),
		carriers: envInt("WAITROOM_SCALE_CARRIERS", 2),
		idle:     envDuration("WAITROOM_SCALE_IDLE", 30*time.Second),
		load:     envDuration("WAITROOM_SCALE_LOAD", 30*time.Second),
		rate:     envInt("WAITROOM_SCALE_RATE", 1000),
		writes:   envInt("WAITROOM_SCALE_WRITES", 20),
		loss:     envFloat("WAITROOM_SCALE_LOSS", 0.01),
		lan:      envDuration("WAITROOM_SCALE_LAN", 500*time.Microsecond),
	}
	runScale(t, sc)
}

type scaleConfig struct {
	dcs, perDC, carriers int
	idle, load           time.Duration
	rate, writes         int
	loss                 float64
	lan                  time.Duration
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic(name + ": " + err.Error())
		}
		return n
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v := os.Getenv(name); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(name + ": " + err.Error())
		}
		return f
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			panic(name + ": " + err.Error())
		}
		return d
	}
	return def
}

// scaleAddr is the address of node i of data center dc in the harness's
// network: one IP per node, the port telling its pool (7946) from the pool
// between data centers (7947).
func scaleAddr(dc, i, port int) string {
	return fmt.Sprintf("10.%d.%d.%d:%d", dc>>8, dc&0xff, i+1, port)
}

// scaleDC is the data center of an address of the harness's network.
func scaleDC(addr string) int {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host).To4()
	if ip == nil {
		return -1
	}
	return int(ip[1])<<8 | int(ip[2])
}

// wanDelay is the one-way delay between two data centers: 50 to 150 ms,
// the same both ways, fixed per pair.
func wanDelay(a, b int) time.Duration {
	if a > b {
		a, b = b, a
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%d-%d", a, b)
	return 50*time.Millisecond + time.Duration(h.Sum32()%101)*time.Millisecond
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scaleNode is a node of the harness's network: its address in its data
// center's pool and in the pool between data centers.
type scaleNode struct{ lan, wan string }

// scaleNodes are the n nodes of data centers of perDC nodes each.
func scaleNodes(n, perDC int) []scaleNode {
	out := make([]scaleNode, n)
	for i := range out {
		out[i] = scaleNode{lan: scaleAddr(i/perDC, i%perDC, 7946), wan: scaleAddr(i/perDC, i%perDC, 7947)}
	}
	return out
}

// perNodeRates are each node's bytes sent per second, over both its pools,
// between two readings of the network's counters.
func perNodeRates(mn *gossip.MemNet, names []scaleNode, before []uint64, elapsed time.Duration) []float64 {
	now := sentNow(mn, names)
	out := make([]float64, len(names))
	for i := range names {
		out[i] = float64(now[i]-before[i]) / elapsed.Seconds()
	}
	return out
}

func sentNow(mn *gossip.MemNet, names []scaleNode) []uint64 {
	out := make([]uint64, len(names))
	for i, name := range names {
		out[i] = mn.Sent(name.lan, name.wan)
	}
	return out
}

// wanShare is the part of the bytes sent between two readings that went
// between data centers, over every node.
func wanShare(mn *gossip.MemNet, names []scaleNode, before, beforeWAN []uint64) float64 {
	var all, wan uint64
	now := sentNow(mn, names)
	for i, name := range names {
		all += now[i] - before[i]
		wan += mn.Sent(name.wan) - beforeWAN[i]
	}
	if all == 0 {
		return 0
	}
	return float64(wan) / float64(all)
}

func wanSentNow(mn *gossip.MemNet, names []scaleNode) []uint64 {
	out := make([]uint64, len(names))
	for i, name := range names {
		out[i] = mn.Sent(name.wan)
	}
	return out
}

// rateSummary is the median, 90th percentile and largest of per-node rates,
// for every node and for the carriers alone.
func rateSummary(rates []float64, carriers []bool) string {
	pick := func(want bool, all bool) []float64 {
		var out []float64
		for i, r := range rates {
			if all || carriers[i] == want {
				out = append(out, r)
			}
		}
		slices.Sort(out)
		return out
	}
	q := func(s []float64, p float64) float64 {
		if len(s) == 0 {
			return 0
		}
		return s[min(int(float64(len(s))*p), len(s)-1)]
	}
	all, car, non := pick(false, true), pick(true, false), pick(false, false)
	return fmt.Sprintf("all nodes median %.0f B/s, p90 %.0f, max %.0f; carriers (%d) median %.0f, max %.0f; others (%d) median %.0f, max %.0f",
		q(all, .5), q(all, .9), q(all, 1), len(car), q(car, .5), q(car, 1), len(non), q(non, .5), q(non, 1))
}

func runScale(t *testing.T, sc scaleConfig) {
	n := sc.dcs * sc.perDC
	mn := gossip.NewMemNet(1)
	mn.SetLoss(sc.loss)
	mn.SetPairDelay(func(from, to string) time.Duration {
		a, b := scaleDC(from), scaleDC(to)
		if a == b {
			return sc.lan
		}
		return wanDelay(a, b)
	})
	index := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "node-%d", &i); err != nil {
			panic("scale harness: node name " + name)
		}
		return i
	}
	var wanSeeds []string
	for d := 0; d < min(3, sc.dcs); d++ {
		for j := range sc.perDC {
			wanSeeds = append(wanSeeds, scaleAddr(d, j, 7947))
		}
	}
	tune, _ := tuneFrom("WAITROOM_SCALE_WAN_TUNE")
	probe := newConvergenceProbe(n)
	names := scaleNodes(n, sc.perDC)
	start := time.Now()
	cpu0 := cpuTime()
	c := newCluster(t, n, clusterOpts{
		profile:    gossip.LAN,
		wanProfile: gossip.WAN,
		wanTune:    tune,
		quiet:      os.Getenv("WAITROOM_MEASURE_LOGS") != "1",
		onChange:   probe.onChange,
		carriers:   sc.carriers,
		datacenter: func(i int) string { return fmt.Sprintf("dc%03d", i/sc.perDC) },
		transport: func(t testing.TB, name string) memberlist.Transport {
			i := index(name)
			tr, err := mn.Transport(scaleAddr(i/sc.perDC, i%sc.perDC, 7946))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		wanTransport: func(t testing.TB, name string) func() (memberlist.Transport, error) {
			i := index(name)
			return func() (memberlist.Transport, error) {
				return mn.Transport(scaleAddr(i/sc.perDC, i%sc.perDC, 7947))
			}
		},
		wanSeeds: wanSeeds,
	})
	for i, node := range c.nodes {
		probe.nodes[i].Store(node)
	}
	c.waitMembers(sc.perDC, 5*time.Minute)
	c.waitCarriers(10 * time.Minute)
	t.Logf("%d data centers × %d nodes (%d carriers each), loss %.1f%%, LAN %v, WAN 50-150 ms: every pool whole and every carrier seeing every data center after %v (CPU %.1f s), load %s",
		sc.dcs, sc.perDC, sc.carriers, 100*sc.loss, sc.lan, time.Since(start).Round(time.Second), (cpuTime() - cpu0).Seconds(), testkit.LoadAverage())
	// Let the joins' push-pulls and the first carriers' handovers settle:
	// the members that carried before their data centers' pools were whole
	// stop after the hold, and every carrier learns of every other.
	if _, settled := testkit.Poll(time.Minute, time.Second, func() bool {
		k := 0
		for _, node := range c.nodes {
			if node.Carrying() {
				k++
			}
		}
		return k == sc.dcs*min(sc.carriers, sc.perDC)
	}); !settled {
		t.Logf("more members than the carriers still carrying after a minute; measuring anyway")
	}
	waitQuiet(t, c, time.Minute)
	if _, whole := testkit.Poll(5*time.Minute, time.Second, func() bool { return wanWhole(c) }); !whole {
		t.Logf("carriers' views between data centers still partial after 5 minutes; measuring anyway")
	}
	t.Logf("between data centers after %v: %s", time.Since(start).Round(time.Second), wanViews(c))

	carriers := func() []bool {
		out := make([]bool, n)
		for i, node := range c.nodes {
			out[i] = node.Carrying()
		}
		return out
	}

	// Idle: nothing is counted; what flows is membership, probes, beats and
	// push-pull.
	before, at, cpu, sched := sentNow(mn, names), time.Now(), cpuTime(), sampleSched(mn)
	idleWAN := wanSentNow(mn, names)
	time.Sleep(sc.idle) // the window measured
	elapsed := time.Since(at)
	idle := perNodeRates(mn, names, before, elapsed)
	t.Logf("idle, %v: gossip sent per node: %s; %.0f%% of it between data centers (CPU %.0f%% of one core, load %s)", elapsed.Round(time.Second), rateSummary(idle, carriers()), 100*wanShare(mn, names, before, idleWAN), 100*(cpuTime()-cpu).Seconds()/elapsed.Seconds(), testkit.LoadAverage())
	t.Logf("idle, the process: %s", starvation(sched, sampleSched(mn)))

	// Convergence: one count at a time at a random node, timed until every
	// node's merged state holds it.
	var all, perNode, locals, crossings, relays []time.Duration
	timeouts := 0
	m := nowMinute()
	sched = sampleSched(mn)
	cpu, at = cpuTime(), time.Now()
	for j := range sc.writes {
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond) // writes at a random phase of the rounds
		key := crdt.Key{Room: "conv", Kind: crdt.AnalyticsBase, Bucket: int64(j), Minute: m}
		w := rand.IntN(n)
		d, per, ok := probe.write(w, key, envDuration("WAITROOM_SCALE_TIMEOUT", 30*time.Second))
		local, crossing, relay := hops(probe.sightings(), w, sc.perDC)
		locals, crossings, relays = append(locals, local), append(crossings, crossing...), append(relays, relay...)
		if !ok {
			timeouts++
			t.Logf("count %d at node %d (%s) missed: %s", j, w, c.dcs[w], c.missing(key))
			continue
		}
		all = append(all, d)
		perNode = append(perNode, per...)
	}
	t.Logf("convergence, %d counts: every node p50 %v, p99 %v, max %v; one node p50 %v, p99 %v; %d timed out (30 s)",
		sc.writes, percentile(all, .5).Round(time.Millisecond), percentile(all, .99).Round(time.Millisecond), slices.Max(append(all, 0)).Round(time.Millisecond),
		percentile(perNode, .5).Round(time.Millisecond), percentile(perNode, .99).Round(time.Millisecond), timeouts)
	t.Logf("convergence by stage: own data center's last p50 %v, p99 %v; first node of another data center p50 %v, p99 %v; from there to its last p50 %v, p99 %v",
		percentile(locals, .5).Round(time.Millisecond), percentile(locals, .99).Round(time.Millisecond),
		percentile(crossings, .5).Round(time.Millisecond), percentile(crossings, .99).Round(time.Millisecond),
		percentile(relays, .5).Round(time.Millisecond), percentile(relays, .99).Round(time.Millisecond))
	t.Logf("convergence, the process: %s (CPU %.0f%% of one core, load %s)", starvation(sched, sampleSched(mn)), 100*(cpuTime()-cpu).Seconds()/time.Since(at).Seconds(), testkit.LoadAverage())

	// Load: sc.rate admissions a second at random nodes, each with what the
	// counter rule moves for an admission of a waiting visitor and for a
	// renewed session.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		scaleLoad(c.nodes, sc.rate, stop)
	}()
	time.Sleep(5 * time.Second) // the load settles before the window
	before, at, cpu = sentNow(mn, names), time.Now(), cpuTime()
	beforeWAN := wanSentNow(mn, names)
	time.Sleep(sc.load) // the window measured
	elapsed = time.Since(at)
	loaded := perNodeRates(mn, names, before, elapsed)
	loadWAN := wanShare(mn, names, before, beforeWAN)
	loadCPU := 100 * (cpuTime() - cpu).Seconds() / elapsed.Seconds()
	// While the load goes on, a few counts of a cell of their own are
	// timed as before: the figures of a busy data center wait for its
	// budget.
	var underLoad, underLoadPer []time.Duration
	locals, crossings, relays = nil, nil, nil
	sched = sampleSched(mn)
	lost := 0
	for j := range max(sc.writes/4, 3) {
		key := crdt.Key{Room: "conv", Kind: crdt.AnalyticsBase, Bucket: int64(1000 + j), Minute: nowMinute()}
		w := rand.IntN(n)
		d, per, ok := probe.write(w, key, 60*time.Second)
		local, crossing, relay := hops(probe.sightings(), w, sc.perDC)
		locals, crossings, relays = append(locals, local), append(crossings, crossing...), append(relays, relay...)
		if !ok {
			lost++
			t.Logf("count at node %d (%s) under load missed: %s", w, c.dcs[w], c.missing(key))
			continue
		}
		underLoad = append(underLoad, d)
		underLoadPer = append(underLoadPer, per...)
	}
	loadSched := starvation(sched, sampleSched(mn))
	close(stop)
	<-done
	t.Logf("%d admissions a second over the ring, %v: gossip sent per node: %s; %.0f%% of it between data centers (CPU %.0f%% of one core, load %s)", sc.rate, elapsed.Round(time.Second), rateSummary(loaded, carriers()), 100*loadWAN, loadCPU, testkit.LoadAverage())
	var every []float64
	for _, node := range c.nodes {
		if st := node.Stats(); st.Carrier && st.WAN != nil {
			every = append(every, st.WAN.FiguresEveryMs)
		}
	}
	slices.Sort(every)
	if len(every) > 0 {
		t.Logf("under load, a carrier's budget sends its data center's figures every %.0f ms (median; %.0f to %.0f)", every[len(every)/2], every[0], every[len(every)-1])
	}

	t.Logf("convergence under that load, %d counts: every node p50 %v, max %v; one node p50 %v, p90 %v; %d timed out (60 s)", len(underLoad)+lost, percentile(underLoad, .5).Round(time.Millisecond), slices.Max(append(underLoad, 0)).Round(time.Millisecond),
		percentile(underLoadPer, .5).Round(time.Millisecond), percentile(underLoadPer, .9).Round(time.Millisecond), lost)
	t.Logf("under load by stage: own data center's last p50 %v, p99 %v; first node of another data center p50 %v, p99 %v; from there to its last p50 %v, p99 %v",
		percentile(locals, .5).Round(time.Millisecond), percentile(locals, .99).Round(time.Millisecond),
		percentile(crossings, .5).Round(time.Millisecond), percentile(crossings, .99).Round(time.Millisecond),
		percentile(relays, .5).Round(time.Millisecond), percentile(relays, .99).Round(time.Millisecond))
	t.Logf("under load, the process: %s", loadSched)
	st := c.nodes[0].Stats()
	var full int
	c.nodes[0].Read(func(s *crdt.State) {
		b, err := gossip.EncodeFull(s.Full(), s.Horizon())
		if err == nil {
			full = len(b)
		}
	})
	t.Logf("node 0 after the load: %d own cells (%d entries), %d aggregate cells (%d aggregates, %d groups), %d registers; its push-pull state %d bytes; dropped %v",
		st.State.Cells, st.State.Entries, st.State.AggregateCells, st.State.Aggregates, st.State.Groups, st.State.Registers, full, st.Dropped)
}

// scaleLoad admits rate visitors a second at random nodes until stop.
func scaleLoad(nodes []*gossip.Node, rate int, stop chan struct{}) {
	const tick = 10 * time.Millisecond
	tk := time.NewTicker(tick)
	defer tk.Stop()
	g := policy.SessionSlice(measureRoom.SessionDuration)
	owed := 0.0
	for {
		select {
		case <-stop:
			return
		case now := <-tk.C:
			owed += float64(rate) * tick.Seconds()
			for ; owed >= 1; owed-- {
				sec := now.Unix()
				m := sec / 60
				b := m - 1
				waiting := policy.Counting{Bucket: b, Counted: m, LastCheckIn: sec - 20, RefreshInterval: 20, ExpiresAt: sec + 280}
				incs, _ := policy.Count(nil, measureRoom, "shop", waiting, policy.Event{Step: policy.StepDecided, Outcome: policy.Admit, At: sec})
				browsing := policy.Counting{Bucket: b, AcceptedAt: sec - 60, LastCheckIn: sec - 10}
				browsing.Counted = policy.SessionCell(sec-10+60*int64(measureRoom.SessionDuration), g)
				incs, _ = policy.Count(incs, measureRoom, "shop", browsing, policy.Event{Step: policy.StepSession, At: sec})
				nodes[rand.IntN(len(nodes))].Add(incs...)
			}
		}
	}
}

// missing describes the nodes that do not hold cell k yet, with whether a
// node of their data center does and carries.
func (c *cluster) missing(k crdt.Key) string {
	var b strings.Builder
	for i, node := range c.nodes {
		var v uint64
		node.Read(func(s *crdt.State) { v = s.Value(k) })
		if v > 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  node %d (%s, carrying %v, dropped %v) reads 0", i, c.dcs[i], node.Carrying(), node.Stats().Dropped)
		node.Read(func(s *crdt.State) {
			for _, e := range s.Full().Aggregates {
				if e.Key == k {
					_, known := s.Group(e.Replica)
					fmt.Fprintf(&b, " [aggregate %x=%d, group known %v]", uint64(e.Replica), e.Value, known)
				}
			}
		})
		fmt.Fprintf(&b, ";")
		for j, other := range c.nodes {
			if c.dcs[j] == c.dcs[i] && j != i {
				var ov uint64
				other.Read(func(s *crdt.State) { ov = s.Value(k) })
				fmt.Fprintf(&b, " node %d (carrying %v) reads %d;", j, other.Carrying(), ov)
			}
		}
	}
	return b.String()
}

// wanViews sums up how many members each carrier sees between data
// centers, against how many carry.
func wanViews(c *cluster) string {
	carrying := 0
	var seen []int
	for _, node := range c.nodes {
		if node.Carrying() {
			carrying++
			seen = append(seen, len(node.WANMembers()))
		}
	}
	slices.Sort(seen)
	if len(seen) == 0 {
		return "no carrier"
	}
	return fmt.Sprintf("%d carrying; each sees from %d to %d members (median %d)", carrying, seen[0], seen[len(seen)-1], seen[len(seen)/2])
}

// wanWhole reports whether every carrier sees every carrier between data
// centers.
func wanWhole(c *cluster) bool {
	carrying := 0
	for _, node := range c.nodes {
		if node.Carrying() {
			carrying++
		}
	}
	for _, node := range c.nodes {
		if node.Carrying() && len(node.WANMembers()) != carrying {
			return false
		}
	}
	return carrying > 0
}

// schedSample is the Go scheduler's histogram of how long goroutines
// waited, runnable, for a processor: a count the harness reads before and
// after a window to tell a process starved of CPU from a slow protocol.
type schedSample struct {
	counts  []uint64
	buckets []float64
	net     gossip.NetStats
}

func sampleSched(mn *gossip.MemNet) schedSample {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	h := s[0].Value.Float64Histogram()
	return schedSample{counts: slices.Clone(h.Counts), buckets: h.Buckets, net: mn.Stats()}
}

// starvation says, between two samples, how long goroutines waited for a
// processor (median, 99th percentile) and how late the network's delayed
// packets reached their receivers (mean, largest), and how many packets a
// full receive queue lost: the process's share of the blame for slow
// convergence.
func starvation(a, b schedSample) string {
	var total uint64
	d := make([]uint64, len(b.counts))
	for i := range b.counts {
		d[i] = b.counts[i] - a.counts[i]
		total += d[i]
	}
	q := func(p float64) time.Duration {
		if total == 0 {
			return 0
		}
		want := uint64(math.Ceil(p * float64(total)))
		var c uint64
		for i, n := range d {
			c += n
			if c >= want {
				up := b.buckets[i+1]
				if math.IsInf(up, 1) {
					up = b.buckets[i]
				}
				return time.Duration(up * float64(time.Second))
			}
		}
		return 0
	}
	delayed := b.net.Delayed - a.net.Delayed
	mean := time.Duration(0)
	if delayed > 0 {
		mean = (b.net.LateTotal - a.net.LateTotal) / time.Duration(delayed)
	}
	return fmt.Sprintf("goroutines waited for a CPU p50 %v, p99 %v; delayed packets late by mean %v (largest so far %v); %d packets lost to full queues, %d to modelled loss",
		q(.5).Round(time.Microsecond), q(.99).Round(time.Microsecond), mean.Round(time.Microsecond), b.net.LateMax.Round(time.Millisecond),
		b.net.Overflow-a.net.Overflow, b.net.Lost-a.net.Lost)
}

// hops splits the sightings of one count written at node w into its
// stages: the last node of w's own data center to see it (the pool's
// spread), the first node of each other data center (the crossing between
// data centers, the carriers' wait for their round and budget included),
// and in each other data center the time from its first node to its last
// (the relay into the data center). A node that never saw it is left out.
func hops(seen []time.Duration, w, perDC int) (local time.Duration, crossing, relay []time.Duration) {
	for dc := 0; dc*perDC < len(seen); dc++ {
		first, last := time.Duration(0), time.Duration(0)
		for i := dc * perDC; i < min((dc+1)*perDC, len(seen)); i++ {
			if i == w || seen[i] == 0 {
				continue
			}
			if first == 0 || seen[i] < first {
				first = seen[i]
			}
			last = max(last, seen[i])
		}
		if first == 0 {
			continue
		}
		if dc == w/perDC {
			local = last
			continue
		}
		crossing = append(crossing, first)
		relay = append(relay, last-first)
	}
	return local, crossing, relay
}

// sightings is a copy of when each node saw the last count written.
func (p *convergenceProbe) sightings() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}
