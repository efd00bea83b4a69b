package demo

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
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
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", Nodes: 2, TotalActiveUsers: 2, NewUsersPerMinute: 2, Visitors: 3, QueueingMethod: "fifo"}, out, zerolog.Nop())
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
