package fidelity

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A Go runtime crash as a node's stderr holds it, after its JSON log lines.
const crashLog = `{"level":"info","time":"2026-11-24T12:03:30Z","message":"waitroom node serving"}
panic: runtime error: index out of range [4001] with length 4001

goroutine 97 [running]:
github.com/waitroom/waitroom/policy.(*Allocation).lotteryForecast(0xc000a1e000, {0x3fd0000000000000, 0x3fe0000000000000, 0x3fe8000000000000})
	/work/main/policy/lottery.go:123 +0x6a5
github.com/waitroom/waitroom/policy.(*Allocation).Summary(0xc000a1e000)
	/work/main/policy/summary.go:40 +0x12e

goroutine 1 [select]:
main.serve(0xc0001b2000)
	/work/main/cmd/waitroom/serve.go:88 +0x3c5
`

func TestScanPanics(t *testing.T) {
	cases := []struct {
		name      string
		log       string
		want      int
		wantFirst string // the start of the first line told, when want > 0
	}{
		{
			name: "a log of plain serving has no panic",
			log: `{"level":"info","time":"2026-11-24T12:00:00Z","message":"waitroom node serving"}
{"level":"warn","room":"fidelity","message":"the room's allocation failed: deciding by stale_state until one is computed again"}
{"level":"info","message":"shutting down: not ready, no new connections, finishing requests in flight"}
`,
		},
		{
			name:      "a runtime panic and its goroutine dump count once",
			log:       crashLog,
			want:      1,
			wantFirst: "panic: runtime error: index out of range [4001]",
		},
		{
			name: "a panic raised again while recovering counts once",
			log: `panic: runtime error: integer divide by zero [recovered]
	panic: again

goroutine 7 [running]:
main.main()
`,
			want:      1,
			wantFirst: "panic: runtime error: integer divide by zero [recovered]",
		},
		{
			name: "a recovered panic's log line counts, with what panicked",
			log: `{"level":"error","where":"allocation","panic":"runtime error: index out of range [4001] with length 4001","stack":"goroutine 97 [running]:\nruntime/debug.Stack()","room":"fidelity","time":"2026-11-24T12:03:31Z","message":"recovered from a panic"}
`,
			want:      1,
			wantFirst: "error recovered from a panic: runtime error: index out of range [4001]",
		},
		{
			name: "net/http's panic of a handler, carried into the log, counts",
			log: `{"level":"warn","from":"net/http","message":"http: panic serving 127.0.0.1:40112: boom\ngoroutine 12 [running]:\nnet/http.(*conn).serve.func1()"}
`,
			want:      1,
			wantFirst: "warn http: panic serving 127.0.0.1:40112: boom",
		},
		{
			name:      "net/http's panic of a handler written plainly counts",
			log:       "2026/11/24 12:03:31 http: panic serving 127.0.0.1:40112: boom\n",
			want:      1,
			wantFirst: "2026/11/24 12:03:31 http: panic serving",
		},
		{
			name:      "a line at zerolog's panic level counts",
			log:       `{"level":"panic","message":"the state cannot be merged"}` + "\n",
			want:      1,
			wantFirst: "panic the state cannot be merged",
		},
		{
			name:      "a fatal runtime error counts once with its dump",
			log:       "fatal error: concurrent map writes\n\ngoroutine 33 [running]:\nruntime.throw()\n\ngoroutine 1 [chan receive]:\nmain.main()\n",
			want:      1,
			wantFirst: "fatal error: concurrent map writes",
		},
		{
			name:      "a goroutine dump without a panic line (a SIGQUIT) counts once",
			log:       "SIGQUIT: quit\nPC=0x46e3a1 m=0 sigcode=0\n\ngoroutine 0 [idle]:\nruntime.futex()\n\ngoroutine 1 [select]:\nmain.main()\n",
			want:      1,
			wantFirst: "goroutine 0 [idle]:",
		},
		{
			name:      "a node that crashed, was started again and crashed again counts twice",
			log:       crashLog + crashLog,
			want:      2,
			wantFirst: "panic: runtime error",
		},
		{
			name: "the word panic outside a message is not a panic",
			log: `{"level":"info","room":"fidelity","note":"panic","message":"room changed through the admin API"}
{"level":"info","message":"waitroom node stopped"}
`,
		},
		{
			name:      "the last line without a newline is read",
			log:       `{"level":"error","message":"recovered from a panic"}`,
			want:      1,
			wantFirst: "error recovered from a panic",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, lines := scanPanics(strings.NewReader(c.log))
			if n != c.want {
				t.Fatalf("%d panics (%q); want %d", n, lines, c.want)
			}
			if c.want == 0 {
				return
			}
			if len(lines) == 0 || !strings.HasPrefix(lines[0], c.wantFirst) {
				t.Fatalf("lines told %q; want the first to start with %q", lines, c.wantFirst)
			}
			for _, l := range lines {
				if strings.Contains(l, "\n") {
					t.Fatalf("line told %q spans lines; the report wants one each", l)
				}
			}
		})
	}
	t.Run("a long panic line is cut for the report", func(t *testing.T) {
		_, lines := scanPanics(strings.NewReader("panic: " + strings.Repeat("x", 5000) + "\n"))
		if len(lines) != 1 || len(lines[0]) > panicLineLen+len("…") {
			t.Fatalf("%d lines, the first %d bytes long", len(lines), len(lines[0]))
		}
	})
	t.Run("a log of many panics tells only the first few", func(t *testing.T) {
		n, lines := scanPanics(strings.NewReader(strings.Repeat(`{"level":"error","message":"recovered from a panic"}`+"\n", 10)))
		if n != 10 || len(lines) != maxPanicLines {
			t.Fatalf("%d panics, %d lines told; want 10 and %d", n, len(lines), maxPanicLines)
		}
	})
}

func TestSumMetric(t *testing.T) {
	cases := []struct {
		name string
		text string
		want float64
	}{
		{"a node without the metric counts zero", "# HELP waitroom_requests_total Requests.\n# TYPE waitroom_requests_total counter\nwaitroom_requests_total{room=\"fidelity\"} 812\n", 0},
		{"every label's sample is added up", "# HELP waitroom_panics_total Recovered panics.\n# TYPE waitroom_panics_total counter\nwaitroom_panics_total{where=\"allocation\"} 3\nwaitroom_panics_total{where=\"request\"} 2\n", 5},
		{"a sample without labels counts", "waitroom_panics_total 1\n", 1},
		{"a sample with a timestamp counts its value", "waitroom_panics_total{where=\"admin\"} 2 1732449811000\n", 2},
		{"a metric whose name only starts the same is not it", "waitroom_panics_totalled 9\nwaitroom_panics_total_created 1.7e9\n", 0},
		{"a label value with a brace does not confuse the value", "waitroom_panics_total{where=\"a}b\"} 4\n", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sumMetric(strings.NewReader(c.text), panicsMetric); got != c.want {
				t.Fatalf("%v; want %v", got, c.want)
			}
		})
	}
}

func TestHealthGoal(t *testing.T) {
	cases := []struct {
		name string
		h    Health
		met  bool
		show string // a part of what the table prints
	}{
		{"a ring that lived through the run without a panic meets it", Health{Nodes: 3, NodesAlive: 3}, true, "3 of 3 alive, 0 panics"},
		{"a node not running at the end misses it", Health{Nodes: 3, NodesAlive: 2}, false, "2 of 3 alive"},
		{"a node that exited on its own misses it, even if running again at the end",
			Health{Nodes: 3, NodesAlive: 3, Exits: []string{"pop-3 at 12:03:31.2: exit status 2"}}, false, "exited on its own: pop-3 at 12:03:31.2: exit status 2"},
		{"a recovered panic misses it though every node runs",
			Health{Nodes: 3, NodesAlive: 3, Panics: 1, PanicLines: []string{"pop-1: error recovered from a panic: boom"}}, false, "1 panics (first pop-1: error recovered from a panic: boom)"},
		{"the table tells the first panic line and how many more there are",
			Health{Nodes: 3, NodesAlive: 2, Panics: 4, PanicLines: []string{"pop-1: panic: a", "pop-1: panic: b", "pop-2: panic: c"}}, false, "4 panics (first pop-1: panic: a (2 more lines in --json))"},
		{"a log that could not be read misses it", Health{Nodes: 3, NodesAlive: 3, LogsUnread: 1}, false, "3 of 3 alive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := healthGoal(c.h)
			if g.Met != c.met || g.Key != GoalAlive {
				t.Fatalf("%+v; want key %s met %v", g, GoalAlive, c.met)
			}
			if !strings.Contains(g.Shown, c.show) {
				t.Fatalf("shown %q; want it to say %q", g.Shown, c.show)
			}
		})
	}
}

func TestANodeTellsItsOwnExitsFromTheRunsOnes(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to stand in for a node")
	}
	newNode := func(t *testing.T, script string) *node {
		return &node{name: "pop-1", args: []string{"-c", script}, logPath: t.TempDir() + "/pop-1.log"}
	}
	wait := func(t *testing.T, n *node) {
		t.Helper()
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			t.Fatal("the process did not exit")
		}
	}
	t.Run("a process that crashes is an exit of its own, and its log tells the panic", func(t *testing.T) {
		n := newNode(t, "echo 'panic: boom' >&2; echo 'goroutine 1 [running]:' >&2; exit 2")
		heard := make(chan string, 1)
		n.hearDeaths(func(d string) { heard <- d })
		if err := n.start(sh); err != nil {
			t.Fatal(err)
		}
		wait(t, n)
		deaths := n.deathsSeen()
		if len(deaths) != 1 || !strings.Contains(deaths[0], "pop-1 at ") || !strings.Contains(deaths[0], "exit status 2") {
			t.Fatalf("deaths %q; want one of pop-1 with exit status 2", deaths)
		}
		select {
		case d := <-heard:
			if d != deaths[0] {
				t.Fatalf("heard %q; want %q", d, deaths[0])
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the death was not told as it happened")
		}
		panics, lines, err := scanLogFile(n.logPath)
		if err != nil || panics != 1 || len(lines) != 1 || lines[0] != "panic: boom" {
			t.Fatalf("%d panics %q (%v); want the one", panics, lines, err)
		}
	})
	t.Run("a process that exits with code 0 unasked is an exit of its own too", func(t *testing.T) {
		n := newNode(t, "exit 0")
		if err := n.start(sh); err != nil {
			t.Fatal(err)
		}
		wait(t, n)
		if d := n.deathsSeen(); len(d) != 1 || !strings.Contains(d[0], "exit status 0") {
			t.Fatalf("deaths %q; want one with exit status 0", d)
		}
	})
	t.Run("the run's kill and its stop are no exits of the node's own", func(t *testing.T) {
		n := newNode(t, "exec sleep 60")
		if err := n.start(sh); err != nil {
			t.Fatal(err)
		}
		n.kill()
		if err := n.start(sh); err != nil {
			t.Fatal(err)
		}
		if n.hasExited() {
			t.Fatal("the process started again is not running")
		}
		n.stop(5 * time.Second)
		if d := n.deathsSeen(); len(d) != 0 {
			t.Fatalf("deaths %q; want none", d)
		}
	})
}
