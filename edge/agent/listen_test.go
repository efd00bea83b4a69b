package agent_test

// The public listener against clients that hold it: slowloris, oversized
// headers, stalled bodies, clients that stop reading, more connections than
// the cap; and against what it must not cut: a slow origin's large answer.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// clientTimeout is the listener figures' scale in these tests: small, so
// that a stalled client is cut quickly.
const clientTimeout = 300 * time.Millisecond

// visitorClient is a browser-like client of the public listener: it keeps
// cookies and follows redirects.
func visitorClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// rawConn dials addr and sends head as it is.
func rawConn(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if head != "" {
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// closedWithin reads c until the node closes it, and fails the test if that
// takes longer than d.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the node did not close the connection within %v", d)
	}
}

func TestPublicListenerLimits(t *testing.T) {
	o := edgetest.NewOrigin(t)
	cfg := edgetest.NodeConfig("limits", edgetest.KeyFile(t, t.TempDir()), o.URL, edgetest.Room("shop", 1000, 1000))
	cfg.ReadHeaderTimeout = config.Duration(clientTimeout)
	cfg.ClientTimeout = config.Duration(clientTimeout)
	srv := edgetest.ServeNode(t, cfg, nil)
	addr := srv.PublicAddr()
	base := "http://" + addr

	served := func(t *testing.T) {
		t.Helper()
		resp, err := visitorClient(t).Get(base + "/page")
		if err != nil {
			t.Fatalf("an ordinary visitor: %v", err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "origin: /page") {
			t.Fatalf("an ordinary visitor: %d %s", resp.StatusCode, b)
		}
	}

	t.Run("a slowloris client is cut while others are served", func(t *testing.T) {
		c := rawConn(t, addr, "GET /page HTTP/1.1\r\nHost: shop.test\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			// One byte of a header at a time, never ending it.
			for {
				select {
				case <-stop:
					return
				case <-time.After(clientTimeout / 10):
				}
				if _, err := c.Write([]byte("X")); err != nil {
					return
				}
			}
		}()
		served(t)
		closedWithin(t, c, 20*clientTimeout)
	})

	t.Run("oversized headers are refused while others are served", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/page", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
		resp, err := visitorClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("100 KiB of headers: %d, want 431", resp.StatusCode)
		}
		served(t)
	})

	for _, path := range []string{"/upload", "/page"} {
		// /upload's origin reads the body, /page's answers without.
		t.Run("a client that stalls its request body to "+path+" is cut", func(t *testing.T) {
			c := rawConn(t, addr, "POST "+path+" HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100000\r\n\r\n0123456789")
			served(t)
			closedWithin(t, c, 20*clientTimeout)
		})
	}

	t.Run("a slow but steady upload is not cut", func(t *testing.T) {
		// Twenty bytes, one every sixth of client_timeout: the upload
		// takes several times the timeout, but the client never stalls
		// (a sixth leaves room for a loaded machine's scheduling delays).
		c := rawConn(t, addr, "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 20\r\n\r\n")
		for i := 0; i < 20; i++ {
			time.Sleep(clientTimeout / 6) // the client's pace is the input
			if _, err := c.Write([]byte{'a' + byte(i)}); err != nil {
				t.Fatalf("byte %d: %v", i, err)
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "origin: /upload 20 bytes" {
			t.Errorf("%d %q, want the origin to have read all twenty bytes", resp.StatusCode, b)
		}
	})

	t.Run("a slow origin's large answer is delivered whole", func(t *testing.T) {
		// Four MiB in four parts, the origin pausing longer than
		// client_timeout before each: the answer takes many times the
		// listener's timeouts, and nothing may cut it.
		const chunks, size = 4, 1 << 20
		pause := 2 * clientTimeout
		start := time.Now()
		resp, err := visitorClient(t).Get(fmt.Sprintf("%s/stream?chunks=%d&size=%d&pause=%s", base, chunks, size, pause))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || err != nil || n != chunks*size {
			t.Fatalf("status %d, %d of %d bytes, %v", resp.StatusCode, n, chunks*size, err)
		}
		t.Logf("%d MiB in %v through a listener with client_timeout %v", chunks*size>>20, time.Since(start).Round(time.Millisecond), clientTimeout)
	})

	t.Run("a client that stops reading the answer is cut", func(t *testing.T) {
		// 64 MiB: more than the socket buffers between the origin and the
		// client hold, so the node's writes block on the client.
		const chunks, size = 64, 1 << 20
		c := rawConn(t, addr, fmt.Sprintf("GET /stream?chunks=%d&size=%d HTTP/1.1\r\nHost: shop.test\r\n\r\n", chunks, size))
		// The client reads the status line, then nothing: the stall is the
		// behaviour under test, so it lasts for real.
		br := bufio.NewReader(c)
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
			t.Fatalf("status line %q, %v", line, err)
		}
		time.Sleep(10 * clientTimeout)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := io.Copy(io.Discard, br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the node kept the connection of a client that stopped reading")
		}
		if n >= chunks*size {
			t.Errorf("read %d bytes: the whole answer, want it cut", n)
		}
		served(t)
	})
}

func TestPublicConnectionCap(t *testing.T) {
	o := edgetest.NewOrigin(t)
	cfg := edgetest.NodeConfig("cap", edgetest.KeyFile(t, t.TempDir()), o.URL, edgetest.Room("shop", 1000, 1000))
	cfg.MaxConnections = 2
	srv := edgetest.ServeNode(t, cfg, nil)
	admin := srv.AdminHandler()
	addr := srv.PublicAddr()

	// Two clients connect and hold their connections.
	holders := []net.Conn{rawConn(t, addr, ""), rawConn(t, addr, "")}
	testkit.Eventually(t, testkit.Wait{What: "two connections open", Timeout: 5 * time.Second}, func() bool {
		return edgetest.Metric(t, admin, "waitroom_public_connections") == 2
	})

	type result struct {
		status int
		err    error
	}
	third := make(chan result, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/page")
		if err != nil {
			third <- result{err: err}
			return
		}
		resp.Body.Close()
		third <- result{status: resp.StatusCode}
	}()
	t.Run("a third connection waits while two are open", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "the third connection waiting", Timeout: 5 * time.Second}, func() bool {
			return edgetest.Metric(t, admin, "waitroom_public_connection_waits_total") >= 1
		})
		select {
		case r := <-third:
			t.Fatalf("the third client was answered while two connections were open: %+v", r)
		default:
		}
	})
	t.Run("it is served once one of the two closes", func(t *testing.T) {
		holders[0].Close()
		select {
		case r := <-third:
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("third client: %+v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the third client was not served after a connection closed")
		}
	})
}
