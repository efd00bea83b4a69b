package statetable_test

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/statetable"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// busyShop is the state document of a node whose room "shop" holds two
// admitted visitors at its limit of two and queues three more, the one the
// edge's admin tests read from a node at 12:00:07.
func busyShop() *api.StateDoc {
	at := time.Date(2030, 6, 1, 12, 0, 7, 0, time.UTC)
	return &api.StateDoc{
		Node: "node-a", Replica: "3f2a9c01", Time: at, RingTime: at,
		Members: []gossip.Member{{Name: "node-a", Addr: "127.0.0.1:41234", Alive: true, State: "alive"}},
		Gossip:  gossip.Stats{Members: 1, MessagesIn: 0, MessagesOut: 0, BytesOut: 2048},
		Rooms: []api.RoomStatus{{
			Name: "shop", Host: "shop.test", Path: "/", Status: "queueing", QueueingMethod: "fifo",
			TotalActiveUsers: 2, NewUsersPerMinute: 2, SessionDuration: 5,
			EstimatedTotalActiveUsers: 2, EstimatedQueuedUsers: 3, NewUsersThisMinute: 2, OpenSlots: 0,
			AdmissionsPerMinute: 0.4, MaxEstimatedTimeMinutes: 8,
			Buckets: []api.BucketStatus{{Bucket: at.Truncate(time.Minute), Waiting: 3, EligibleSlots: 0}},
			Nodes:   []api.NodeShare{{Node: "node-a", Replica: "3f2a9c01", TrafficShare: 1, ArrivalsThisMinute: 5, AdmittedThisMinute: 2}},
		}},
	}
}

// write prints d and fails the test if that fails.
func write(t *testing.T, d *api.StateDoc) string {
	t.Helper()
	var buf bytes.Buffer
	if err := statetable.Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestWrite(t *testing.T) {
	doc := busyShop()
	out := write(t, doc)
	tests := []struct {
		name string
		line string // a regular expression matched against one line
	}{
		{"the header names the node and the time", `^node node-a \(replica [0-9a-f]+\) at 2030-06-01T12:00:07Z$`},
		{"the members are listed", `^node-a\s+127\.0\.0\.1:\d+\s+alive`},
		{"the gossip summary is one line", `^gossip: 1 members, \d+ msgs in, \d+ msgs out, .* sent, \d+ entries merged, \d+ push-pulls`},
		{"the room line has host, path, status and method", `^room shop\s+shop\.test/\s+\[queueing, fifo\]$`},
		{"active users against the limit", `^\s+active users\s+2 / 2$`},
		{"new users this minute against the limit", `^\s+new users this minute\s+2 / 2$`},
		{"the queue", `^\s+queued\s+3$`},
		{"the open slots", `^\s+open slots\s+0$`},
		{"the admission rate", `^\s+admissions per minute\s+\d+\.\d$`},
		{"the longest wait", `^\s+longest estimated wait\s+\d+ min$`},
		{"the bucket table's header", `^\s+BUCKET\s+WAITING\s+ELIGIBLE SLOTS$`},
		{"one bucket at 12:00 with three waiting", `^\s+12:00\s+3\s+0$`},
		{"the node table's header", `^\s+NODE\s+SHARE\s+ARRIVALS/MIN\s+ADMITTED/MIN$`},
		{"this node with all of the traffic", `^\s+node-a\s+100%\s+5\s+2$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := regexp.MustCompile(tt.line)
			for _, l := range strings.Split(out, "\n") {
				if re.MatchString(l) {
					return
				}
			}
			t.Errorf("no line matches %q in:\n%s", tt.line, out)
		})
	}
	t.Run("a node cut off from part of the ring says so under the room", func(t *testing.T) {
		cut := *doc
		cut.Rooms = append([]api.RoomStatus(nil), doc.Rooms...)
		cut.Rooms[0].Cut = &policy.CutSummary{ReachableNodes: 2, ExpectedNodes: 5, TotalActiveUsers: 400, NewUsersPerMinute: 24, ElsewhereActive: 31.6, ElsewhereAdmitted: 7, ElsewhereWaiting: 12}
		want := regexp.MustCompile(`(?m)^\s+CUT OFF\s+2 of 5 nodes reachable: figures are this part's, held to 400 active / 24 per minute; the others last said 32 active, 7 admitted this minute, 12 waiting$`)
		if got := write(t, &cut); !want.MatchString(got) {
			t.Errorf("no cut line in:\n%s", got)
		}
		if strings.Contains(out, "CUT OFF") {
			t.Errorf("a whole ring shows a cut line:\n%s", out)
		}
	})
	t.Run("a suspected peer shows its state and how long ago it was last heard", func(t *testing.T) {
		d := *doc
		d.Members = append(slices.Clone(doc.Members), gossip.Member{Name: "node-b", Addr: "127.0.0.2:7946", Alive: true, State: "suspect", Suspected: true, LastHeard: doc.Time.Add(-12300 * time.Millisecond)})
		got := write(t, &d)
		if !regexp.MustCompile(`(?m)^node-b\s+127\.0\.0\.2:7946\s+suspect\s+12\.3s ago$`).MatchString(got) {
			t.Errorf("no suspect line in:\n%s", got)
		}
		if !regexp.MustCompile(`(?m)^node-a\s+\S+\s+alive\s+-$`).MatchString(got) {
			t.Errorf("this node's own line is not marked as never heard:\n%s", got)
		}
	})
	t.Run("a node without rooms says so", func(t *testing.T) {
		if got := write(t, &api.StateDoc{Node: "n"}); !strings.Contains(got, "no rooms on this node") {
			t.Errorf("no word of the rooms:\n%s", got)
		}
	})
}

// The lag a node's allocations assume, and the ring's time, as the edge's
// ring tests find them in a real node's document (a measured lag, a node
// 30 s behind its peers), are printed with where they come from.
func TestWriteShowsTheLagAndTheRingTime(t *testing.T) {
	lag := func(measured, farOff bool) *api.StateDoc {
		d := busyShop()
		d.Lag = &api.LagDoc{InUseMs: 412, Measured: measured, ConfiguredMs: 1000, MeasuringOn: true,
			Ring: gossip.RingLag{Measured: measured, RingOffsetMs: 30_000, SkewMs: -45_000, ClockFarOff: farOff}}
		return d
	}
	tests := []struct {
		name     string
		doc      *api.StateDoc
		want     []string
		wantNone string
	}{
		{name: "a measured lag says so", doc: lag(true, false),
			want: []string{"gossip lag in use: 412ms (measured; configured 1s)", "ring time: 2030-06-01T12:00:07Z (this node's clock corrected by +30s)"}, wantNone: "CLOCK FAR OFF"},
		{name: "a configured lag says so", doc: lag(false, false),
			want: []string{"gossip lag in use: 412ms (configured; configured 1s)", "ring time: "}},
		{name: "a clock far off its peers' is called out", doc: lag(true, true),
			want: []string{"CLOCK FAR OFF: this node's clock is -45s off its peers' median"}},
		{name: "a document without the lag leaves it out", doc: busyShop(), wantNone: "ring time: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := write(t, tt.doc)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in:\n%s", w, got)
				}
			}
			if tt.wantNone != "" && strings.Contains(got, tt.wantNone) {
				t.Errorf("%q in:\n%s", tt.wantNone, got)
			}
		})
	}
}

func TestWriteDatacenters(t *testing.T) {
	doc := busyShop()
	out := write(t, doc)
	if strings.Contains(out, "DATA CENTER") {
		t.Fatalf("a node of no data center lists data centers:\n%s", out)
	}
	doc.Datacenter = "ams"
	doc.Datacenters = []gossip.DatacenterView{
		{Name: "ams", Own: true, Nodes: 3, Members: []string{"node-a", "node-b", "node-c"}, Carriers: []string{"node-a", "node-c"}},
		{Name: "fra", Nodes: 2},
	}
	out = write(t, doc)
	for _, tt := range []struct{ name, line string }{
		{"the table's header", `^DATA CENTER\s+NODES\s+CARRIERS\s+MEMBERS$`},
		{"the node's own data center with its carriers and members", `^ams \(this node's\)\s+3\s+node-a node-c\s+node-a node-b node-c$`},
		{"another data center by its count of nodes", `^fra\s+2\s+-\s+-$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			re := regexp.MustCompile(tt.line)
			if !slices.ContainsFunc(strings.Split(out, "\n"), re.MatchString) {
				t.Errorf("no line matches %q in:\n%s", tt.line, out)
			}
		})
	}
}
