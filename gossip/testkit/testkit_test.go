package testkit_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// recorder is a testing.TB that keeps a failure instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestPoll(t *testing.T) {
	t.Run("a condition that holds at once returns without waiting a tick", func(t *testing.T) {
		took, ok := testkit.Poll(time.Second, time.Hour, func() bool { return true })
		if !ok || took >= time.Hour {
			t.Fatalf("Poll = %v, %v", took, ok)
		}
	})
	t.Run("a condition made true by another goroutine ends the wait", func(t *testing.T) {
		var v atomic.Bool
		go v.Store(true)
		if _, ok := testkit.Poll(10*time.Second, time.Millisecond, v.Load); !ok {
			t.Fatal("the condition held but Poll gave up")
		}
	})
	t.Run("a condition that never holds reports false after the timeout", func(t *testing.T) {
		var checks atomic.Int32
		_, ok := testkit.Poll(30*time.Millisecond, time.Millisecond, func() bool { checks.Add(1); return false })
		if ok {
			t.Fatal("Poll reported a condition that never held")
		}
		if checks.Load() < 2 {
			t.Fatalf("checked %d times, want the condition re-checked", checks.Load())
		}
	})
}

func TestEventually(t *testing.T) {
	t.Run("a timeout fails the test with what was awaited and the last value seen", func(t *testing.T) {
		r := &recorder{TB: t}
		n := 0
		testkit.Eventually(r, testkit.Wait{What: "three members", Timeout: 20 * time.Millisecond, Tick: time.Millisecond, Seen: func() string { return fmt.Sprintf("%d checks", n) }}, func() bool { n++; return false })
		if !strings.Contains(r.failed, "three members: not within 20ms") || !strings.Contains(r.failed, "last seen: ") {
			t.Fatalf("failure %q does not say what was awaited and seen", r.failed)
		}
	})
	t.Run("a condition that holds does not fail the test", func(t *testing.T) {
		r := &recorder{TB: t}
		testkit.Eventually(r, testkit.Wait{What: "anything", Timeout: time.Second}, func() bool { return true })
		if r.failed != "" {
			t.Fatalf("failed: %s", r.failed)
		}
	})
}

func TestClock(t *testing.T) {
	start := time.Date(2030, 6, 1, 12, 0, 5, 0, time.UTC)
	tests := []struct {
		name string
		move func(c *testkit.Clock)
		want time.Time
	}{
		{"a new clock stands still at its start", func(*testkit.Clock) {}, start},
		{"advance moves it on", func(c *testkit.Clock) { c.Advance(time.Minute) }, start.Add(time.Minute)},
		{"set moves it forward", func(c *testkit.Clock) { c.Set(start.Add(time.Hour)) }, start.Add(time.Hour)},
		{"set never moves it back", func(c *testkit.Clock) { c.Set(start.Add(-time.Hour)) }, start},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.NewClock(start)
			tc.move(c)
			if got := c.Now(); !got.Equal(tc.want) {
				t.Fatalf("Now = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunningClock(t *testing.T) {
	// A running clock reads the real clock, so each case checks that Now lies
	// between two real readings taken around it, moved by what the case
	// moved: bounds, not timings.
	tests := []struct {
		name  string
		move  func(c *testkit.Clock)
		shift time.Duration
	}{
		{"a new running clock is the real clock", func(*testkit.Clock) {}, 0},
		{"advance shifts it from the real clock", func(c *testkit.Clock) { c.Advance(time.Minute) }, time.Minute},
		{"set moves it forward", func(c *testkit.Clock) { c.Set(time.Now().Add(time.Hour)) }, time.Hour},
		{"set never moves it back", func(c *testkit.Clock) { c.Set(time.Now().Add(-time.Hour)) }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.NewRunningClock()
			tc.move(c)
			before := time.Now().Add(tc.shift)
			got := c.Now()
			after := time.Now().Add(tc.shift)
			// Set reads the real clock a moment before the clock does: allow
			// the time between the two readings.
			if got.Before(before.Add(-time.Second)) || got.After(after) {
				t.Fatalf("Now = %v, want between %v and %v", got, before, after)
			}
		})
	}
}

func TestBuffer(t *testing.T) {
	t.Run("writers in parallel lose nothing", func(t *testing.T) {
		var b testkit.Buffer
		done := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 100 {
					_, _ = b.Write([]byte("x"))
					_ = b.Tail(3)
				}
			}()
		}
		for range 4 {
			<-done
		}
		if got := len(b.String()); got != 400 {
			t.Fatalf("%d bytes, want 400", got)
		}
	})
	tests := []struct {
		name, written string
		n             int
		want          string
	}{
		{"the tail of a long output is its last bytes", "chromium: started\nchromium: crashed", 7, "crashed"},
		{"the tail of a short output is all of it", "short", 100, "short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b testkit.Buffer
			_, _ = b.Write([]byte(tc.written))
			if got := b.Tail(tc.n); got != tc.want {
				t.Fatalf("Tail(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := testkit.FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	more, err := testkit.FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, more...) {
		t.Run(fmt.Sprintf("port %d is given once, below the ephemeral range, and binds for TCP and UDP", p), func(t *testing.T) {
			if seen[p] {
				t.Fatal("given twice")
			}
			seen[p] = true
			if p < 1024 || p >= 32768 {
				t.Fatal("not below the ephemeral range (32768 and up)")
			}
			addr := fmt.Sprintf("127.0.0.1:%d", p)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			u, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			u.Close()
		})
	}
}

func TestProcessCPU(t *testing.T) {
	t.Run("this process's CPU time is read and grows as it works", func(t *testing.T) {
		before, ok := testkit.ProcessCPU(os.Getpid())
		if !ok {
			t.Skip("no /proc here")
		}
		x := 0
		for i := 0; i < 200_000_000; i++ {
			x += i
		}
		after, ok := testkit.ProcessCPU(os.Getpid())
		if !ok || after <= before {
			t.Fatalf("CPU %v then %v (ok %v) after a loop to %d", before, after, ok, x)
		}
	})
	t.Run("a process that does not exist has none", func(t *testing.T) {
		if cpu, ok := testkit.ProcessCPU(-1); ok {
			t.Fatalf("pid -1 read %v", cpu)
		}
	})
}
