package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestBenchSmoke runs the whole bench, very short: every server answers,
// every comparison has figures, the memory steps count their visitors.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and drives it for a few seconds")
	}
	rep, err := Run(context.Background(), Options{Duration: 200 * time.Millisecond, Slice: 100 * time.Millisecond, Rounds: 1, Visitors: 300, Warmup: 50 * time.Millisecond, NoProxies: true}) // TestBenchDrivesProxies drives the proxies
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 {
		t.Errorf("%d errors", rep.Errors)
	}
	for _, c := range []Comparison{rep.AdmittedThroughput, rep.AdmittedP99, rep.QueuedThroughput, rep.SerialP50, rep.AccessLog, rep.AccessLogCPU} {
		if len(c.Base) != 1 || len(c.Room) != 1 || c.Base[0] <= 0 || c.Room[0] <= 0 {
			t.Errorf("%s: base %v waitroom %v", c.Name, c.Base, c.Room)
		}
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "admitted") || strings.Contains(n, "queued") {
			t.Errorf("note: %s", n)
		}
	}
	m := rep.Memory
	// One request each, without coming back with the cookie: a new
	// visitor waits from its proof on, so these take no place.
	if m.QueuedAfter != m.QueuedBefore {
		t.Errorf("the full room's waiting count went from %d to %d, want no change: cookieless first requests take no place", m.QueuedBefore, m.QueuedAfter)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"admitted throughput", "queued throughput", "admitted throughput, access log on", "memory per 300 waiting", "machine:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Error(err)
	}
}

// aheadLine is the default queue page's place in line.
var aheadLine = regexp.MustCompile(`<p class="ahead">[^<]*</p>`)

// TestEnvQueuePage checks the bench's premise: the bare server answers the
// very bytes the full room answers a new visitor, and the open room admits.
func TestEnvQueuePage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	env, err := StartEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	room, err := capture(context.Background(), env.FullURL, "")
	if err != nil {
		t.Fatal(err)
	}
	bare, err := capture(context.Background(), env.BareURL, "")
	if err != nil {
		t.Fatal(err)
	}
	// A new visitor's place in line counts the new visitors answered just
	// before it, the capture the bare server answers among them, so the
	// two pages may differ in that sentence alone.
	withoutPlace := func(b []byte) []byte { return aheadLine.ReplaceAll(b, nil) }
	if bare.Status != room.Status || len(withoutPlace(bare.Body)) != len(withoutPlace(room.Body)) || bare.Header.Get("Refresh") == "" {
		t.Errorf("bare server: %d, %d bytes; room: %d, %d bytes", bare.Status, len(bare.Body), room.Status, len(room.Body))
	}
	for _, h := range []string{"Content-Type", "Cache-Control", "Set-Cookie"} {
		if (bare.Header.Get(h) == "") != (room.Header.Get(h) == "") {
			t.Errorf("header %s: bare %q, room %q", h, bare.Header.Get(h), room.Header.Get(h))
		}
	}
	open, err := capture(context.Background(), env.OpenURL, "")
	if err != nil {
		t.Fatal(err)
	}
	if open.Status != 200 || !bytes.Equal(open.Body, OriginBody) || open.Header.Get("Set-Cookie") == "" {
		t.Errorf("open room: %d %q", open.Status, open.Body)
	}
	logged, err := capture(context.Background(), env.LoggedURL, "")
	if err != nil {
		t.Fatal(err)
	}
	if logged.Status != open.Status || !bytes.Equal(logged.Body, open.Body) {
		t.Errorf("the node with the access log answers otherwise: %d %q", logged.Status, logged.Body)
	}
	testkit.Eventually(t, testkit.Wait{What: "the admission's line in the access log", Timeout: 5 * time.Second}, func() bool {
		b, _ := os.ReadFile(env.AccessLogPath)
		return bytes.Contains(b, []byte(`"outcome":"admitted"`))
	})
}

// TestSoakMechanics runs the steady-memory check for a few seconds: it
// samples and judges. The real check is TestSoak.
func TestSoakMechanics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and drives it for a few seconds")
	}
	rep, err := Soak(context.Background(), SoakOptions{Duration: 3 * time.Second, Interval: 400 * time.Millisecond, Warmup: 400 * time.Millisecond, Rate: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Samples) < 5 || rep.Verdict == "" {
		t.Fatalf("%d samples, verdict %q", len(rep.Samples), rep.Verdict)
	}
	for i, r := range rep.Results {
		if r.Requests == 0 || r.Errors != 0 {
			t.Errorf("stream %d: %d requests, %d errors %v", i, r.Requests, r.Errors, r.ErrorKind)
		}
	}
	if rep.Results[0].Admitted == 0 || rep.Results[1].Queued == 0 || rep.Results[2].Queued == 0 {
		t.Errorf("streams: admitted %d, queued %d and %d", rep.Results[0].Admitted, rep.Results[1].Queued, rep.Results[2].Queued)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
}

// TestSoak checks that memory holds steady under load: five minutes of constant
// load, heap and goroutines sampled every 10 s, no growth allowed. Run it
// with
//
//	WAITROOM_SOAK=1 go test -run '^TestSoak$' -v -timeout 15m ./cmd/waitroom/internal/bench
//
// (WAITROOM_SOAK_DURATION=10m for longer).
func TestSoak(t *testing.T) {
	if os.Getenv("WAITROOM_SOAK") == "" {
		t.Skip("set WAITROOM_SOAK=1 to run the 5-minute steady-memory check")
	}
	d := 5 * time.Minute
	if v := os.Getenv("WAITROOM_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("WAITROOM_SOAK_DURATION: %v", err)
		}
	}
	rep, err := Soak(context.Background(), SoakOptions{Duration: d, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if !rep.OK {
		t.Fatal(rep.Verdict)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"three rounds of the five comparisons without proxies", Options{Rounds: 3, Duration: 5 * time.Second, NoProxies: true},
			"waitroom bench: 3 rounds of 5 comparisons, 5s per side each, then the memory steps (about 2m51s)"},
		{"no rounds asked for is one", Options{Duration: 2 * time.Second, NoProxies: true},
			"waitroom bench: 1 rounds of 5 comparisons, 2s per side each, then the memory steps (about 41s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.o.Plan(); got != c.want {
				t.Fatalf("%q; want %q", got, c.want)
			}
		})
	}
}

func TestSoakReportErr(t *testing.T) {
	t.Run("a steady soak is no error", func(t *testing.T) {
		if err := (&SoakReport{OK: true, Verdict: "steady"}).Err(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a soak that grew fails with its verdict", func(t *testing.T) {
		err := (&SoakReport{Verdict: "heap grew"}).Err()
		if err == nil || err.Error() != "steady memory: heap grew" {
			t.Fatalf("error %v; want the verdict", err)
		}
	})
}
