package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// lines is an io.Writer that keeps what the demo prints and tells when a
// line holding want has come.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if strings.Contains(l.buf.String(), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return len(p), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestTheDemoRunsARingAndPrintsItsState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ring of two nodes")
	}
	// The state line that shows both nodes in the ring: gossip joins them
	// shortly after they start.
	out := &lines{want: "nodes 2 alive", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", Nodes: 2, TotalActiveUsers: 2, NewUsersPerMinute: 2, Visitors: 3, QueueingMethod: "fifo", AccessLogDir: t.TempDir()}, out, zerolog.Nop())
	}()
	select {
	case <-out.seen:
	case err := <-done:
		t.Fatalf("the demo ended before printing a state line: %v\n%s", err, out)
	case <-time.After(time.Minute):
		t.Fatalf("no state line with both nodes within a minute:\n%s", out)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the demo stopped with %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"waitroom demo: 2 nodes in front of http://127.0.0.1:",
		`room "demo": total_active_users 2, new_users_per_minute 2, session_duration 1 min, fifo`,
		"| crowd:",
		"demo stopped",
	} {
		t.Run("it prints "+want, func(t *testing.T) {
			if !strings.Contains(got, want) {
				t.Errorf("no %q in:\n%s", want, got)
			}
		})
	}
}

// demoLine is the part of an access-log line that following a visitor
// reads.
type demoLine struct {
	Time    string `json:"time"`
	Node    string `json:"node"`
	Outcome string `json:"outcome"`
	Visitor string `json:"visitor"`
}

// visitorPaths reads every node's access log in dir and groups the lines
// by visitor, each visitor's lines in time order.
func visitorPaths(t *testing.T, dir string, nodes int) map[string][]demoLine {
	t.Helper()
	paths := map[string][]demoLine{}
	for i := range nodes {
		raw, err := os.ReadFile(AccessLogPath(dir, fmt.Sprintf("pop-%d", i+1)))
		if err != nil {
			continue // not written yet
		}
		for _, text := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var l demoLine
			if text == "" {
				continue
			}
			if err := json.Unmarshal([]byte(text), &l); err != nil {
				t.Fatalf("a line that is not JSON: %v: %s", err, text)
			}
			if l.Visitor != "" {
				paths[l.Visitor] = append(paths[l.Visitor], l)
			}
		}
	}
	for _, p := range paths {
		slices.SortStableFunc(p, func(a, b demoLine) int { return strings.Compare(a.Time, b.Time) })
	}
	return paths
}

// TestAVisitorCanBeFollowedThroughTheRingsAccessLogs runs the demo's ring
// of three with a small crowd and follows visitors through the nodes'
// access logs: one who waited, from its first page to the origin, and one
// whose pages were served by more than one node, under the same id.
func TestAVisitorCanBeFollowedThroughTheRingsAccessLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a ring of three nodes and a crowd for up to a few minutes")
	}
	dir := t.TempDir()
	out := &lines{want: "nodes 3 alive", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// new_users_per_minute is the limit that binds: the crowd's first
		// two go in at once and the next two at the next minute, whether or
		// not the first ones' sessions have ended.
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", Nodes: 3, TotalActiveUsers: 10, NewUsersPerMinute: 2, Visitors: 6,
			QueueingMethod: "fifo", AccessLogDir: dir, Rush: time.Second}, out, zerolog.Nop())
	}()
	var waited, travelled []demoLine
	testkit.Eventually(t, testkit.Wait{What: "a visitor who waited and was let in, and one served by two nodes", Timeout: 3 * time.Minute, Tick: time.Second,
		Seen: func() string { return fmt.Sprintf("waited %v, travelled %v", waited, travelled) }}, func() bool {
		for _, p := range visitorPaths(t, dir, 3) {
			nodes := map[string]bool{}
			var outcomes []string
			for _, l := range p {
				nodes[l.Node] = true
				outcomes = append(outcomes, l.Outcome)
			}
			path := strings.Join(outcomes, " ")
			if waited == nil && strings.HasPrefix(path, "first_page queued") && strings.Contains(path, "queued admitted") {
				waited = p
			}
			if travelled == nil && len(nodes) >= 2 {
				travelled = p
			}
		}
		return waited != nil && travelled != nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the demo stopped with %v", err)
	}
	t.Logf("a visitor who waited: %v", waited)
	t.Logf("a visitor served by more than one node: %v", travelled)
	t.Run("the demo says where the logs are and how to follow a visitor", func(t *testing.T) {
		for _, want := range []string{"access logs, one per node: " + AccessLogPath(dir, "*"), `grep -h '"visitor":"ID"'`} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in:\n%s", want, out)
			}
		}
	})
}
