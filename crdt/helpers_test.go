package crdt_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
)

// lawCases is how many cases every law runs in a plain `go test`.
const lawCases = 10_000

// TestMain raises rapid's number of checks per property from its default of
// 100 to lawCases, unless -rapid.checks or RAPID_CHECKS says otherwise, so that
// CI runs every law on lawCases cases without extra flags.
func TestMain(m *testing.M) {
	flag.Parse()
	userSet := false
	flag.Visit(func(f *flag.Flag) { userSet = userSet || f.Name == "rapid.checks" })
	if _, env := os.LookupEnv("RAPID_CHECKS"); !userSet && !env {
		if err := flag.Set("rapid.checks", strconv.Itoa(lawCases)); err != nil {
			fmt.Fprintln(os.Stderr, "crdt_test:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// checkLaw runs prop as a rapid property and fails if, in the default
// configuration, it ran on fewer than lawCases cases.
func checkLaw(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	t.Parallel()
	cases := 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		prop(rt)
	})
	want := lawCases
	if f := flag.Lookup("rapid.checks"); f != nil {
		want, _ = strconv.Atoi(f.Value.String())
	}
	if testing.Short() {
		want /= 5 // rapid's own reduction under -short
	}
	if want >= lawCases && cases < lawCases {
		t.Fatalf("the law ran on %d cases, want at least %d", cases, lawCases)
	}
	t.Logf("%d cases", cases)
}

// base is a unix minute in 2025; generated keys sit just after it.
const base int64 = 29_000_000

var (
	testRooms = []string{"tickets", "vaccine"}
	testKinds = []crdt.Kind{
		crdt.Arrivals, crdt.Admitted, crdt.ActivePlus, crdt.ActiveMinus,
		crdt.WaitingPlus, crdt.WaitingMinus, crdt.SessionPlus, crdt.SessionMinus,
		crdt.QueuedAt, crdt.LeftAt, crdt.AnalyticsBase + 1,
	}
	testRegisters = []string{"room/tickets", "room/vaccine", "node/1"}
)

func isWaiting(k crdt.Kind) bool { return k == crdt.WaitingPlus || k == crdt.WaitingMinus }

func isSession(k crdt.Kind) bool { return k == crdt.SessionPlus || k == crdt.SessionMinus }

// drawKey draws a cell key among two rooms, every kind, three arrival buckets
// and six minutes, so that independent writers often share a cell.
func drawKey(t *rapid.T) crdt.Key {
	k := crdt.Key{
		Room:   rapid.SampledFrom(testRooms).Draw(t, "room"),
		Kind:   rapid.SampledFrom(testKinds).Draw(t, "kind"),
		Minute: base + rapid.Int64Range(0, 5).Draw(t, "minute"),
	}
	if isWaiting(k.Kind) {
		k.Bucket = k.Minute - rapid.Int64Range(0, 2).Draw(t, "queued for")
	}
	if k.Kind == crdt.QueuedAt || k.Kind == crdt.LeftAt {
		// An arrival slot of the minute's bucket.
		k.Bucket = crdt.ArrivalSlot(k.Minute, uint16(rapid.IntRange(0, 599).Draw(t, "arrived")))
	}
	if isSession(k.Kind) {
		// Dated by the expiry second, a few slices apart.
		k.Bucket = k.Minute*60 + 15*rapid.Int64Range(0, 3).Draw(t, "slice")
	}
	return k
}

// cluster is a small simulated deployment: one State per replica, written only
// through the public operations, plus every delta those operations produced.
type cluster struct {
	ids     []crdt.ReplicaID
	states  []*crdt.State
	entries []crdt.Entry         // every Entry returned by Add
	regs    []crdt.RegisterEntry // every RegisterEntry returned by SetRegister
}

// drawCluster runs a random history on nodes replicas: local increments,
// register writes (with wall clocks so close that different replicas often
// produce equal stamps), syncs by full-state merge or by delta, and, if prune
// is set, pruning at a horizon each node picks on its own.
func drawCluster(t *rapid.T, nodes int, prune bool) *cluster {
	c := &cluster{}
	for i := range nodes {
		c.ids = append(c.ids, crdt.ReplicaID(i+1))
		c.states = append(c.states, crdt.New())
	}
	steps := rapid.IntRange(0, 40).Draw(t, "steps")
	for range steps {
		i := rapid.IntRange(0, nodes-1).Draw(t, "node")
		s := c.states[i]
		op := rapid.IntRange(0, 9).Draw(t, "op")
		switch {
		case op < 6:
			k := drawKey(t)
			if e, ok := s.Add(k, c.ids[i], rapid.Uint64Range(1, 3).Draw(t, "n")); ok {
				c.entries = append(c.entries, e)
			}
		case op < 8:
			name := rapid.SampledFrom(testRegisters).Draw(t, "register")
			now := rapid.Int64Range(1000, 1001).Draw(t, "now millis")
			value := fmt.Appendf(nil, "%d#%d", c.ids[i], len(c.regs))
			c.regs = append(c.regs, s.SetRegister(name, value, c.ids[i], now))
		case op < 9 || !prune:
			j := rapid.IntRange(0, nodes-1).Draw(t, "peer")
			if rapid.Bool().Draw(t, "full state") {
				s.MergeState(c.states[j])
			} else {
				s.Merge(c.states[j].Full())
			}
		default:
			s.Prune(base + rapid.Int64Range(0, 3).Draw(t, "horizon"))
		}
	}
	return c
}

// maxHorizon is the largest horizon of the cluster.
func (c *cluster) maxHorizon() int64 {
	var h int64
	for _, s := range c.states {
		h = max(h, s.Horizon())
	}
	return h
}

// merged folds every state of the cluster into a fresh one.
func (c *cluster) merged() *crdt.State {
	m := crdt.New()
	for _, s := range c.states {
		m.MergeState(s)
	}
	return m
}

// drawDelivery returns every item of all at least once and some of them
// twice, in a random order.
func drawDelivery[E any](t *rapid.T, all []E, label string) []E {
	if len(all) == 0 {
		return nil
	}
	seq := append([]E(nil), all...)
	dups := rapid.SliceOfN(rapid.IntRange(0, len(all)-1), 0, len(all)).Draw(t, label+" duplicates")
	for _, i := range dups {
		seq = append(seq, all[i])
	}
	return rapid.Permutation(seq).Draw(t, label+" order")
}

// dump renders a state for failure messages.
func dump(s *crdt.State) string {
	d := s.Full()
	out := fmt.Sprintf("horizon %d, %d entries, %d registers:", s.Horizon(), len(d.Entries), len(d.Registers))
	for _, e := range d.Entries {
		out += fmt.Sprintf("\n  %s/%d/b%d/m%d r%d=%d", e.Key.Room, e.Key.Kind, e.Key.Bucket-base, e.Key.Minute-base, e.Replica, e.Value)
	}
	for _, r := range d.Registers {
		out += fmt.Sprintf("\n  %s = %q @%d.%d r%d", r.Name, r.Reg.Value, r.Reg.Stamp.Wall, r.Reg.Stamp.Logical, r.Reg.Replica)
	}
	for _, e := range d.Aggregates {
		out += fmt.Sprintf("\n  aggregate %s/%d/b%d/m%d g%x=%d", e.Key.Room, e.Key.Kind, e.Key.Bucket-base, e.Key.Minute-base, uint64(e.Replica), e.Value)
	}
	for _, g := range d.Groups {
		out += fmt.Sprintf("\n  group %x: %s %v", uint64(g.ID()), g.Datacenter, g.Replicas)
	}
	return out
}

func requireEqual(t *rapid.T, law string, got, want *crdt.State) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: states differ\ngot  %s\nwant %s", law, dump(got), dump(want))
	}
}

func mergedOf(a, b *crdt.State) *crdt.State {
	m := a.Clone()
	m.MergeState(b)
	return m
}
