package agent_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// readyz asks a node's admin listener for /readyz over the network, as a
// probe does, and returns the status (0 when the listener does not answer).
func readyz(t *testing.T, adminAddr string) int {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + adminAddr + "/readyz")
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestGracefulShutdown stops a node of a ring of two with a visitor's
// request in flight, as SIGTERM does (the context of Serve ends): the node
// turns not ready at once, refuses new connections, lets the request
// finish, then hands its counts to its peer and leaves the ring.
func TestGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	slow := edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "finished after the stop began")
	})))
	c := edgetest.NewCluster(t, 2, edgetest.ClusterOptions{Serve: true, Origin: slow, Rooms: []config.Room{edgetest.Room("shop", 100, 100)}})
	a, b := c.Nodes[0], c.Nodes[1]
	testkit.Eventually(t, testkit.Wait{What: "both nodes ready", Timeout: 10 * time.Second}, func() bool {
		return readyz(t, a.Server.AdminAddr()) == http.StatusOK && readyz(t, b.Server.AdminAddr()) == http.StatusOK
	})

	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Get(b.URL() + "/slow")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(data), err}
	}()
	<-started // the edgetest.Visitor was admitted and the request is at the origin

	publicAddr, adminAddr := b.Server.PublicAddr(), b.Server.AdminAddr()
	stopped := make(chan struct{})
	go func() { b.StopServing(); close(stopped) }()

	t.Run("the stopping node says not ready while it drains", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "/readyz answering 503", Timeout: 5 * time.Second}, func() bool {
			return readyz(t, adminAddr) == http.StatusServiceUnavailable
		})
	})
	t.Run("the stopping node refuses new connections", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "a refused connection", Timeout: 5 * time.Second, Seen: func() string { return "the public listener still accepts" }}, func() bool {
			conn, err := net.DialTimeout("tcp", publicAddr, time.Second)
			if err == nil {
				_ = conn.Close()
			}
			return err != nil
		})
	})
	t.Run("the request in flight finishes", func(t *testing.T) {
		select {
		case <-stopped:
			t.Fatal("the node stopped serving before the request in flight finished")
		default:
		}
		close(release)
		got := <-answered
		if got.err != nil || got.status != http.StatusOK || got.body != "finished after the stop began" {
			t.Errorf("in-flight request: %d %q %v", got.status, got.body, got.err)
		}
		<-stopped
	})
	t.Run("the peer has the stopped node's counts and sees it leave", func(t *testing.T) {
		if err := b.Server.Close(); err != nil {
			t.Fatal(err)
		}
		b.Up = false
		testkit.Eventually(t, testkit.Wait{What: "node a alone, expecting only itself", Timeout: 10 * time.Second, Seen: func() string { return c.Membership([]*edgetest.Node{a}) }}, func() bool {
			n := a.Server.Node()
			return n.NumMembers() == 1 && n.ExpectedMembers(time.Now()) == 1
		})
		a.Server.RefreshAllocations()
		if rs := edgetest.RoomStatus(t, a.Admin, "shop"); rs.NewUsersThisMinute != 1 {
			t.Errorf("node a counts %d new users this minute, want the 1 node b admitted", rs.NewUsersThisMinute)
		}
	})
}

// TestShutdownTimeout checks the bound: a request still running when
// shutdown_timeout ends is cut, and the node stops anyway.
func TestShutdownTimeout(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	stuck := edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	})))
	// Before the origin closes (cleanups run last first): its Close waits
	// for the handler.
	t.Cleanup(func() { close(release) })
	cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, t.TempDir()), stuck.URL, edgetest.Room("shop", 100, 100))
	cfg.ShutdownTimeout = config.Duration(200 * time.Millisecond)
	srv := edgetest.StartServer(t, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- srv.Serve(ctx, func(*agent.Agent) { close(ready) }) }()
	<-ready
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + srv.PublicAddr() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		failed <- err
	}()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if err := <-failed; err == nil {
		t.Error("the request still at the origin at shutdown_timeout was answered whole; want it cut")
	}
}

// TestShutdownSettings checks the stop and readiness settings: a value out
// of range is refused naming the field and the range, and the flags
// override the file.
func TestShutdownSettings(t *testing.T) {
	base := "node: relay\nrooms: []\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a shutdown_timeout under 100ms is refused", "shutdown_timeout: 50ms\n", "shutdown_timeout: 50ms must be from 100ms to 10m0s (default 20s)"},
		{"a shutdown_timeout over 10m is refused", "shutdown_timeout: 11m\n", "shutdown_timeout: 11m0s must be from 100ms to 10m0s"},
		{"a ready_alone_after under 100ms is refused", "ready_alone_after: 1ms\n", "ready_alone_after: 1ms must be from 100ms to 10m0s (default 5s)"},
		{"values in range are taken", "shutdown_timeout: 25s\nready_alone_after: 2s\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) { edgetest.CheckParse(t, base+tc.yaml, tc.want) })
	}
	t.Run("the flags override the file", func(t *testing.T) {
		c, err := config.Parse([]byte(base + "shutdown_timeout: 25s\nready_alone_after: 2s\n"))
		if err != nil {
			t.Fatal(err)
		}
		o := config.Overrides{ShutdownTimeout: 3 * time.Second, ReadyAloneAfter: time.Second,
			Set: func(f string) bool { return f == "shutdown-timeout" || f == "ready-alone-after" }}
		if err := o.Apply(c); err != nil {
			t.Fatal(err)
		}
		if time.Duration(c.ShutdownTimeout) != 3*time.Second || time.Duration(c.ReadyAloneAfter) != time.Second {
			t.Errorf("shutdown_timeout %v, ready_alone_after %v; want the flags' 3s and 1s", c.ShutdownTimeout, c.ReadyAloneAfter)
		}
	})
}
