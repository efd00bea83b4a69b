package fidelity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestSIGTERMStopsANodeGracefully stops one of two real `waitroom serve`
// processes with SIGTERM while a visitor's request is at the origin, as a
// deploy or Kubernetes does: the node turns not ready, refuses new
// connections, finishes the request, hands its last admission to its peer
// and exits with code 0.
func TestSIGTERMStopsANodeGracefully(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and runs two processes: not with -short")
	}
	bin := buildBinary(t)
	// The origin holds a request to /slow until the test releases it: a
	// request in flight when SIGTERM comes.
	started, release := make(chan struct{}, 1), make(chan struct{})
	org := edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "origin: "+r.URL.Path)
	})))
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	s := Scenario{Name: "sigterm", Nodes: 2, Limits: Limits{TotalActiveUsers: 100, NewUsersPerMinute: 100, SessionDuration: time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startTestCluster(t, ctx, bin, t.TempDir(), s, org.URL)
	peer, stopping := c.nodes[0], c.nodes[1]
	probe := &http.Client{Timeout: 2 * time.Second}
	readyz := func(n *node) int {
		resp, err := probe.Get("http://" + n.admin + "/readyz")
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	testkit.Eventually(t, testkit.Wait{What: "both nodes ready", Timeout: 20 * time.Second, Seen: func() string { return fmt.Sprintf("readyz %d and %d", readyz(peer), readyz(stopping)) }}, func() bool {
		return readyz(peer) == http.StatusOK && readyz(stopping) == http.StatusOK
	})

	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(c.url(1) + "slow")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(b), err}
	}()
	select {
	case <-started: // admitted, and at the origin
	case got := <-answered:
		t.Fatalf("the visitor was answered before reaching the origin: %+v", got)
	}
	if err := stopping.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	t.Run("the stopping node says not ready while it drains", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "/readyz answering 503", Timeout: 5 * time.Second, Seen: func() string { return fmt.Sprintf("readyz %d", readyz(stopping)) }}, func() bool {
			return readyz(stopping) == http.StatusServiceUnavailable
		})
	})
	t.Run("the stopping node refuses new connections", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "a refused connection", Timeout: 5 * time.Second, Seen: func() string { return "the public listener still accepts" }}, func() bool {
			conn, err := net.DialTimeout("tcp", stopping.listen, time.Second)
			if err == nil {
				_ = conn.Close()
			}
			return err != nil
		})
	})
	t.Run("the request in flight finishes", func(t *testing.T) {
		if stopping.hasExited() {
			t.Fatal("the process exited before the request in flight finished")
		}
		close(release)
		got := <-answered
		if got.err != nil || got.status != http.StatusOK {
			t.Errorf("in-flight request: %d %v", got.status, got.err)
		}
	})
	t.Run("the process exits with code 0", func(t *testing.T) {
		select {
		case <-stopping.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("still running 30s after SIGTERM: %s", stopping.logTail())
		}
		stopping.mu.Lock()
		err := stopping.waitErr
		stopping.mu.Unlock()
		if err != nil { // an *exec.ExitError names the code
			t.Errorf("exit: %v; want code 0. Log: %s", err, stopping.logTail())
		}
	})
	t.Run("the peer counts the stopped node's admission and sees it leave", func(t *testing.T) {
		var active int64
		var alive int
		testkit.Eventually(t, testkit.Wait{What: "the peer alone, counting 1 active visitor", Timeout: 10 * time.Second, Seen: func() string { return fmt.Sprintf("%d active, %d members alive", active, alive) }}, func() bool {
			active, alive = peerState(t, probe, peer)
			return active == 1 && alive == 1
		})
	})
}

// peerState reads a node's /state: the fidelity room's active visitors and
// the members it sees alive.
func peerState(t *testing.T, client *http.Client, n *node) (active int64, alive int) {
	t.Helper()
	resp, err := client.Get("http://" + n.admin + "/state")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	var doc struct {
		Members []struct {
			Alive bool `json:"alive"`
		} `json:"members"`
		Rooms []struct {
			Name   string `json:"name"`
			Active int64  `json:"estimated_total_active_users"`
		} `json:"rooms"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return -1, -1
	}
	for _, m := range doc.Members {
		if m.Alive {
			alive++
		}
	}
	for _, r := range doc.Rooms {
		if r.Name == roomName {
			active = r.Active
		}
	}
	return active, alive
}
