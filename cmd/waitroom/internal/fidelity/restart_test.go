package fidelity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// A restart loses nothing: real `waitroom serve` processes, each with its
// data directory, are told things at run time mid-sale (a new room, new
// limits, a stop, a message, a webhook, a used code, visitors admitted and
// queued), then killed with SIGKILL, as a crash or a power cut does, and
// started again with the same flags: everything is back, and the visitors
// keep their places.

// TestAKilledNodeComesBackAsItWas is the single node of the README's first
// example, killed mid-sale.
func TestAKilledNodeComesBackAsItWas(t *testing.T) {
	t.Parallel() // real processes, mostly waiting on them: side by side
	testRestartLosesNothing(t, 1)
}

// TestAWholeRingKilledAtOnceComesBackAsItWas is a ring of three killed at
// once (a bad rollout, a power cut): no peer is left to hand anything
// back.
func TestAWholeRingKilledAtOnceComesBackAsItWas(t *testing.T) {
	t.Parallel()
	testRestartLosesNothing(t, 3)
}

// sale is the room added through the admin API mid-sale: two visitors at
// once, the others queued.
func sale() config.Room {
	return config.Room{Name: "sale", Path: "/sale", CookieSuffix: "sale", TotalActiveUsers: 2, NewUsersPerMinute: 2, SessionDuration: 5, JSONResponseEnabled: true}
}

// told is what the ring was told before the kill, to find again after it.
type told struct {
	code      string
	admitted  []*crowd.Visitor // in sale
	queued    []*crowd.Visitor // in sale, in order of arrival
	targets   []string         // where each of them checks in
	positions []int64          // their places in line before the kill
	waiting   int64            // the room's visitors in line before the kill
}

// crdtSlot is the length of an arrival slot in seconds
// (crdt.ArrivalSlotSeconds): a place in line counts the earlier slots whole.
const crdtSlot = 20

// prove has the visitor v, just queued, come back when its page says, as a
// browser does, until it is shown a place in line: the ring counts a
// visitor in line once its cookie has come back. It returns the place.
func prove(t *testing.T, ctx context.Context, v *crowd.Visitor, target string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var place *crowd.Wait
	_, _ = v.Follow(ctx, target, 0, func(a crowd.Answer) {
		if a.Outcome == crowd.Queued && a.Wait != nil && a.Wait.PositionKnown {
			place = a.Wait
			cancel()
		}
	})
	if place == nil {
		t.Fatalf("no place in line shown at %s within 30 s", target)
	}
	return place.Position
}

// placeOf checks the queued visitor v in at target until it is shown a
// place in line (its cookie has come back), and returns the place.
func placeOf(t *testing.T, ctx context.Context, v *crowd.Visitor, target string) int64 {
	t.Helper()
	var last crowd.Answer
	testkit.Eventually(t, testkit.Wait{What: "a place in line at " + target, Timeout: 15 * time.Second, Seen: func() string { return fmt.Sprintf("%s %+v", last.Outcome, last.Wait) }}, func() bool {
		last = v.Get(ctx, target)
		return last.Outcome == crowd.Queued && last.Wait != nil && last.Wait.PositionKnown
	})
	return last.Wait.Position
}

// waitingIn is the estimated visitors in line of room on node n's /state,
// -1 when it cannot say.
func waitingIn(ctx context.Context, n *node, room string) int64 {
	if r := statusOf(ctx, n, room); r != nil {
		return r.EstimatedQueuedUsers
	}
	return -1
}

// statusOf is room's status in node n's /state, nil when there is none.
func statusOf(ctx context.Context, n *node, room string) *api.RoomStatus {
	doc, _, err := adminClient(n).State(ctx)
	if err != nil {
		return nil
	}
	for i := range doc.Rooms {
		if doc.Rooms[i].Name == room {
			return &doc.Rooms[i]
		}
	}
	return nil
}

func testRestartLosesNothing(t *testing.T, nodes int) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes: not with -short")
	}
	bin := buildBinary(t)
	org := edgetest.NewOrigin(t)
	s := Scenario{Name: "restart", Nodes: nodes, Limits: Limits{TotalActiveUsers: 3, NewUsersPerMinute: 3, SessionDuration: 5 * time.Minute},
		Priority: &PriorityMix{Share: 0.5}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startTestCluster(t, ctx, bin, t.TempDir(), s, org.URL)
	first := adminClient(c.nodes[0])
	var was told

	// Mid-sale, through the first node's admin API, as an operator would.
	if _, err := first.Apply(ctx, sale()); err != nil {
		t.Fatal(err)
	}
	fid, err := first.Room(ctx, roomName)
	if err != nil {
		t.Fatal(err)
	}
	fid.TotalActiveUsers, fid.NewUsersPerMinute = 7, 7
	if _, err := first.Apply(ctx, *fid); err != nil {
		t.Fatal(err)
	}
	if _, err := first.SetMessage(ctx, "sale", "Back in ten minutes with more stock"); err != nil {
		t.Fatal(err)
	}
	putWebhook(t, c.nodes[0], "orders", org.URL+"/hook")
	was.code = mintCode(t, c.nodes[0])
	holder := crowd.NewVisitor(http.DefaultTransport, nil, 5*time.Second)
	if a := holder.Get(ctx, withCode(c.url(0), was.code)); a.Outcome != crowd.Admitted {
		t.Fatalf("the code's holder was not let in: %+v", a)
	}
	waitCodeUsed(t, ctx, c.nodes, was.code)
	// Every node sees the new room before the crowd comes.
	for _, n := range c.nodes {
		waitRoom(t, ctx, adminClient(n), "sale")
	}
	// The crowd, at each node in turn, until two are let in (each node
	// lets in its share of the room's slots); then four more, in line. A
	// place in line is shown once the visitor's cookie came back.
	for i := 0; len(was.admitted) < 2 || len(was.queued) < 4; i++ {
		if i > 40 {
			t.Fatalf("%d visitors: %d let in, %d in line", i, len(was.admitted), len(was.queued))
		}
		v := crowd.NewVisitor(http.DefaultTransport, http.Header{"Accept": {crowd.AcceptJSON}}, 5*time.Second)
		target := c.url(i%nodes) + "sale"
		switch a := v.Get(ctx, target); a.Outcome {
		case crowd.Admitted:
			was.admitted = append(was.admitted, v)
		case crowd.Queued:
			was.queued = append(was.queued, v)
			was.targets = append(was.targets, target)
		default:
			t.Fatalf("visitor %d: %s", i, a.Outcome)
		}
	}
	// A ring may let one more in than the room holds while a node's
	// admission is on its way to the others: the room is full either way.
	if len(was.admitted) > 3 {
		t.Fatalf("%d let into a room of 2", len(was.admitted))
	}
	for i, v := range was.queued {
		prove(t, ctx, v, was.targets[i])
	}
	// One more in the next arrival slot, with everyone before it ahead.
	next := time.Unix((time.Now().Unix()/crdtSlot+1)*crdtSlot, int64(500*time.Millisecond))
	if !crowd.Sleep(ctx, time.Until(next)) {
		t.Fatal(ctx.Err())
	}
	late := crowd.NewVisitor(http.DefaultTransport, http.Header{"Accept": {crowd.AcceptJSON}}, 5*time.Second)
	if a := late.Get(ctx, c.url(nodes-1)+"sale"); a.Outcome != crowd.Queued {
		t.Fatalf("the late visitor: %s, want queued", a.Outcome)
	}
	ahead := int64(len(was.queued))
	was.queued, was.targets = append(was.queued, late), append(was.targets, c.url(nodes-1)+"sale")
	if p := prove(t, ctx, late, c.url(nodes-1)+"sale"); p < ahead-1 {
		t.Fatalf("the late visitor has %d ahead, want the %d queued before it", p, ahead)
	}
	if _, err := first.Stop(ctx, roomName, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		waitActive(t, ctx, n, "sale", int64(len(was.admitted)))
		waitStopped(t, ctx, adminClient(n), roomName)
	}
	for _, n := range c.nodes {
		testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("the %d queued in line on %s", len(was.queued), n.name), Timeout: 10 * time.Second,
			Seen: func() string { return strconv.FormatInt(waitingIn(ctx, n, "sale"), 10) }}, func() bool {
			return waitingIn(ctx, n, "sale") == int64(len(was.queued))
		})
	}
	was.waiting = int64(len(was.queued))
	// The places the visitors are shown once every node has heard them
	// all; then what each node was told is on its disk.
	for i, v := range was.queued {
		was.positions = append(was.positions, placeOf(t, ctx, v, was.targets[i]))
	}
	for _, n := range c.nodes {
		waitSaved(t, ctx, n)
	}

	for _, n := range c.nodes {
		n.kill()
	}
	for _, n := range c.nodes {
		if err := n.start(bin); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitReady(ctx, c.nodes); err != nil {
		t.Fatal(err)
	}

	for i, n := range c.nodes {
		cl := adminClient(n)
		t.Run(fmt.Sprintf("node %d: the room added at run time is back, and says it was restored", i+1), func(t *testing.T) {
			r := listed(t, ctx, cl, "sale")
			if r == nil || r.TotalActiveUsers != 2 || r.Source != "restored" {
				t.Fatalf("sale after the restart: %+v", r)
			}
		})
		t.Run(fmt.Sprintf("node %d: the limits changed at run time are back, over the file's", i+1), func(t *testing.T) {
			r := listed(t, ctx, cl, roomName)
			if r == nil || r.TotalActiveUsers != 7 || r.NewUsersPerMinute != 7 {
				t.Fatalf("%s after the restart: %+v", roomName, r)
			}
		})
		t.Run(fmt.Sprintf("node %d: the stopped room is still stopped", i+1), func(t *testing.T) {
			if r := listed(t, ctx, cl, roomName); r == nil || !r.Stopped {
				t.Fatalf("%s after the restart: %+v", roomName, r)
			}
		})
		t.Run(fmt.Sprintf("node %d: the message is still shown", i+1), func(t *testing.T) {
			if r := listed(t, ctx, cl, "sale"); r == nil || r.Message != "Back in ten minutes with more stock" {
				t.Fatalf("sale after the restart: %+v", r)
			}
		})
		t.Run(fmt.Sprintf("node %d: the webhook is still registered", i+1), func(t *testing.T) {
			if !hasWebhook(t, n, "orders") {
				t.Fatal("no webhook orders after the restart")
			}
		})
		t.Run(fmt.Sprintf("node %d: the used code is still used", i+1), func(t *testing.T) {
			st, err := cl.CodesStatus(ctx, roomName, []string{was.code})
			if err != nil || len(st) != 1 || st[0].Used != 1 {
				t.Fatalf("code status %+v, %v; want used once", st, err)
			}
		})
		t.Run(fmt.Sprintf("node %d: the counts are back: the room is still full", i+1), func(t *testing.T) {
			if got := activeIn(ctx, n, "sale"); got != int64(len(was.admitted)) {
				t.Fatalf("%d active in sale after the restart, want the %d let in before", got, len(was.admitted))
			}
		})
	}
	t.Run("the visitors let in are still in", func(t *testing.T) {
		for i, v := range was.admitted {
			if a := v.Get(ctx, c.url(i%nodes)+"sale"); a.Outcome != crowd.Admitted {
				t.Errorf("admitted visitor %d: %s after the restart", i, a.Outcome)
			}
		}
	})
	t.Run("the line is as long as before", func(t *testing.T) {
		for _, n := range c.nodes {
			if got := waitingIn(ctx, n, "sale"); got != was.waiting {
				t.Errorf("%s: %d in line after the restart, %d before", n.name, got, was.waiting)
			}
		}
	})
	t.Run("the visitors in line keep their places", func(t *testing.T) {
		after := make([]int64, len(was.queued))
		for i, v := range was.queued {
			// The order inside an arrival slot, which only the nodes saw,
			// is saved in each node's data directory too: the same place.
			if after[i] = placeOf(t, ctx, v, was.targets[i]); after[i] != was.positions[i] {
				t.Errorf("queued visitor %d: %d ahead after the restart, %d before", i, after[i], was.positions[i])
			}
		}
		if t.Failed() {
			t.Logf("places before the restart %v, after %v; queued at %v", was.positions, after, was.targets)
		}
	})
	t.Run("a newcomer is not let into the full room", func(t *testing.T) {
		v := crowd.NewVisitor(http.DefaultTransport, http.Header{"Accept": {crowd.AcceptJSON}}, 5*time.Second)
		if a := v.Get(ctx, c.url(0)+"sale"); a.Outcome != crowd.Queued {
			t.Fatalf("a newcomer: %s, want queued behind the line", a.Outcome)
		}
	})
}

// TestAKillDuringAWriteLeavesAReadableFile kills a node inside a save of
// its data directory, with half of the new file written (the node pauses
// there, told so by a hidden test flag), again and again: every start
// takes back the whole file of the save before, and none is set aside.
func TestAKillDuringAWriteLeavesAReadableFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs a real process: not with -short")
	}
	bin := buildBinary(t)
	org := edgetest.NewOrigin(t)
	s := Scenario{Name: "kill-during-write", Nodes: 1, Limits: Limits{TotalActiveUsers: 100, NewUsersPerMinute: 100, SessionDuration: 5 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c := startTestCluster(t, ctx, bin, dir, s, org.URL)
	n, cl := c.nodes[0], adminClient(c.nodes[0])
	data := filepath.Join(dir, "pop-1.data")
	n.kill()
	n.args = append(n.args, "--test-data-write-pause", "3s")
	restart := func() {
		t.Helper()
		if err := n.start(bin); err != nil {
			t.Fatal(err)
		}
		if err := c.waitReady(ctx, c.nodes); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	const kills = 3
	for k := range kills {
		// The room of this round is saved whole; the next round's change
		// is cut halfway through its save.
		r := sale()
		r.Name, r.Path, r.CookieSuffix = fmt.Sprintf("r%d", k), fmt.Sprintf("/r%d", k), fmt.Sprintf("r%d", k)
		if _, err := cl.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
		waitSaves(t, ctx, n, 2) // the second began after the change
		r.TotalActiveUsers = 9
		if _, err := cl.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, testkit.Wait{What: "a save halfway written", Timeout: 10 * time.Second}, func() bool {
			return len(tempFiles(t, data)) > 0
		})
		n.kill()
		restart()
		t.Run(fmt.Sprintf("start %d takes back the whole file of the save before", k+1), func(t *testing.T) {
			if got := logLines(t, n, "data directory: state taken back"); got != k+2 {
				t.Fatalf("%d starts took the state back, want %d: %s", got, k+2, n.logTail())
			}
			if got := logLines(t, n, "set aside"); got != 0 {
				t.Fatalf("%d files set aside: %s", got, n.logTail())
			}
			if got := listed(t, ctx, cl, r.Name); got == nil || got.TotalActiveUsers != 2 {
				t.Fatalf("room %s after the restart: %+v, want it as last saved whole", r.Name, got)
			}
		})
	}
}

// tempFiles are the temporary files of writes in the data directory.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".state.tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// adminClient is the admin API's client for node n.
func adminClient(n *node) *api.Client {
	return &api.Client{URL: "http://" + n.admin, Timeout: 5 * time.Second}
}

// listed is the named room as GET /rooms lists it, nil when it is not.
func listed(t *testing.T, ctx context.Context, c *api.Client, name string) *api.ListedRoom {
	t.Helper()
	rooms, err := c.Rooms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rooms {
		if rooms[i].Name == name {
			return &rooms[i]
		}
	}
	return nil
}

func waitRoom(t *testing.T, ctx context.Context, c *api.Client, name string) {
	t.Helper()
	testkit.Eventually(t, testkit.Wait{What: "room " + name + " on " + c.Addr(), Timeout: 10 * time.Second}, func() bool {
		return listed(t, ctx, c, name) != nil
	})
}

func waitStopped(t *testing.T, ctx context.Context, c *api.Client, name string) {
	t.Helper()
	testkit.Eventually(t, testkit.Wait{What: "room " + name + " stopped on " + c.Addr(), Timeout: 10 * time.Second}, func() bool {
		r := listed(t, ctx, c, name)
		return r != nil && r.Stopped
	})
}

// activeIn is the estimated active visitors of room on node n's /state,
// -1 when it cannot say.
func activeIn(ctx context.Context, n *node, room string) int64 {
	if r := statusOf(ctx, n, room); r != nil {
		return r.EstimatedTotalActiveUsers
	}
	return -1
}

func waitActive(t *testing.T, ctx context.Context, n *node, room string, want int64) {
	t.Helper()
	testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("%d active in %s on %s", want, room, n.name), Timeout: 10 * time.Second,
		Seen: func() string { return strconv.FormatInt(activeIn(ctx, n, room), 10) }}, func() bool {
		return activeIn(ctx, n, room) == want
	})
}

// savesOK is the node's count of saves of its state.
func savesOK(ctx context.Context, n *node) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `waitroom_data_dir_writes_total{result="ok"} `); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

// waitSaved waits until what node n was told is on its disk: two saves
// (the second began after the call), or none for quietFor while the
// saver writes within a second of any change (nothing was left to save).
func waitSaved(t *testing.T, ctx context.Context, n *node) {
	t.Helper()
	const quietFor = 2500 * time.Millisecond
	from, last := savesOK(ctx, n), savesOK(ctx, n)
	lastAt := time.Now()
	testkit.Eventually(t, testkit.Wait{What: "the state saved on " + n.name, Timeout: 15 * time.Second,
		Seen: func() string { return fmt.Sprintf("%d saves, from %d", last, from) }}, func() bool {
		if got := savesOK(ctx, n); got != last {
			last, lastAt = got, time.Now()
		}
		return from >= 0 && (last >= from+2 || time.Since(lastAt) >= quietFor)
	})
}

// waitSaves waits until node n has saved its state k more times.
func waitSaves(t *testing.T, ctx context.Context, n *node, k int) {
	t.Helper()
	from := savesOK(ctx, n)
	testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("%d saves on %s", k, n.name), Timeout: 15 * time.Second,
		Seen: func() string { return fmt.Sprintf("%d saves, from %d", savesOK(ctx, n), from) }}, func() bool {
		return savesOK(ctx, n) >= from+k
	})
}

func putWebhook(t *testing.T, n *node, name, url string) {
	t.Helper()
	body, _ := json.Marshal(api.WebhookRequest{URL: url, Secret: "a-webhook-secret-of-enough-length"})
	req, _ := http.NewRequest(http.MethodPut, "http://"+n.admin+"/webhooks/"+name, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("PUT webhook: %s %s", resp.Status, b.String())
	}
}

func hasWebhook(t *testing.T, n *node, name string) bool {
	t.Helper()
	resp, err := http.Get("http://" + n.admin + "/webhooks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var hooks []api.Webhook
	if err := json.NewDecoder(resp.Body).Decode(&hooks); err != nil {
		t.Fatal(err)
	}
	for _, h := range hooks {
		if h.Name == name {
			return true
		}
	}
	return false
}

// mintCode mints one single-use code of the room's group vip.
func mintCode(t *testing.T, n *node) string {
	t.Helper()
	raw, err := adminClient(n).MintCodes(context.Background(), roomName, "vip", 1, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("minted %q, %v", raw, err)
	}
	return rows[1][0]
}

func waitCodeUsed(t *testing.T, ctx context.Context, nodes []*node, code string) {
	t.Helper()
	for _, n := range nodes {
		cl := adminClient(n)
		testkit.Eventually(t, testkit.Wait{What: "the code used, on " + n.name, Timeout: 10 * time.Second}, func() bool {
			st, err := cl.CodesStatus(ctx, roomName, []string{code})
			return err == nil && len(st) == 1 && st[0].Used == 1
		})
	}
}

// logLines counts the lines of the node's log that hold s.
func logLines(t *testing.T, n *node, s string) int {
	t.Helper()
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(s))
}
