package edge_test

// Forward-auth behind a real Traefik v3, started from the shipped
// docs/deploy/forward-auth/traefik.yaml (only its addresses and its site's
// host changed) in front of two waitroom nodes and the test origin, with the
// harness of proxies_test.go. Traefik is not a Debian package: CI builds it
// (.ci/install-traefik.sh, about 8 minutes of CPU the first time) only when
// WAITROOM_TRAEFIK=1, and then sets WAITROOM_REQUIRE_TRAEFIK=1, which makes
// this test fail rather than skip when traefik is missing.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// traefikNodes is the dynamic configuration the test adds beside the
// shipped file: forwardAuth's address takes one URL, so, as an operator
// without a Kubernetes Service would, Traefik itself balances its questions
// over the nodes, on an entry point of its own that trusts the
// X-Forwarded headers Traefik set (it is asked by Traefik alone).
const traefikNodes = `http:
  routers:
    waitroom-nodes:
      entryPoints: [waitroom]
      rule: "PathPrefix(` + "`/`" + `)"
      service: waitroom-nodes
  services:
    waitroom-nodes:
      loadBalancer:
        servers:
%s`

// startTraefik runs Traefik with the shipped traefik.yaml in front of the
// waitroom nodes and the origin, and returns its address once it has loaded
// the configuration.
func startTraefik(t *testing.T, nodes []string, origin string) string {
	bin := findBinary(t, "WAITROOM_TRAEFIK_BIN", "traefik", "", "WAITROOM_REQUIRE_TRAEFIK", "bash .ci/install-traefik.sh builds it")
	dir := t.TempDir()
	port, nodesPort := testkit.FreePort(t), testkit.FreePort(t)
	site := shippedConfig(t, "traefik.yaml",
		`address: "http://127.0.0.1:9091/auth"`, fmt.Sprintf(`address: "http://127.0.0.1:%d/auth"`, nodesPort),
		`url: "http://127.0.0.1:8000"`, `url: "http://`+origin+`"`,
		// Every host on the entry point: the test's visitors ask for
		// 127.0.0.1.
		"rule: \"Host(`shop.example.com`)\"", "rule: \"PathPrefix(`/`)\"")
	var servers strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&servers, "          - url: \"http://%s\"\n", n)
	}
	files := map[string]string{"traefik.yaml": site, "nodes.yaml": fmt.Sprintf(traefikNodes, servers.String())}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The static configuration: the site's entry point (the default for
	// routers that name none, as the shipped one), the nodes' entry point,
	// the file provider reading both files, and nothing sent home.
	runProxy(t, port, []string{"HOME=" + dir}, bin,
		fmt.Sprintf("--entryPoints.web.address=127.0.0.1:%d", port),
		"--entryPoints.web.asDefault=true",
		fmt.Sprintf("--entryPoints.waitroom.address=127.0.0.1:%d", nodesPort),
		"--entryPoints.waitroom.forwardedHeaders.trustedIPs=127.0.0.1/32",
		"--providers.file.directory="+dir,
		"--providers.file.watch=false",
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
		"--log.level=WARN",
	)
	// Traefik listens before it has loaded the files; the nodes' own
	// answer for an unknown path says the nodes' router is there (both
	// files are loaded at once). It is no question: nothing is counted.
	probe := fmt.Sprintf("http://127.0.0.1:%d/ready", nodesPort)
	var last string
	testkit.Eventually(t, testkit.Wait{What: "traefik routing to the nodes", Timeout: 15 * time.Second, Seen: func() string { return last }}, func() bool {
		resp, err := http.Get(probe)
		if err != nil {
			last = err.Error()
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %.100q", resp.StatusCode, b)
		return strings.Contains(string(b), "forward-auth endpoint answers")
	})
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// TestBehindRealTraefik puts two waitroom nodes in forward-auth mode behind
// a real Traefik configured from the shipped traefik.yaml: the same visitors
// as behind nginx and Caddy, and a room of one.
func TestBehindRealTraefik(t *testing.T) {
	t.Run("visitors go through the queue as behind nginx and Caddy", func(t *testing.T) {
		t.Parallel()
		behindProxy(t, startTraefik)
	})
	t.Run("a room of one lets the first visitor in and only it", func(t *testing.T) {
		t.Parallel()
		roomOfOneBehindProxy(t, startTraefik)
	})
}

// roomOfOneBehindProxy sends visitors who name themselves in a header to a
// room of one active visitor behind the proxy: the first is admitted and
// its requests reach the origin; the next ones get the queue page through
// the proxy, and the origin never sees them.
func roomOfOneBehindProxy(t *testing.T, start func(t *testing.T, nodes []string, origin string) string) {
	o := edgetest.NewOrigin(t, edgetest.VisitorHeader("X-Visitor"))
	rc := room("shop", 1, 1)
	rc.Origin = ""
	c, nodes := forwardAuthRing(t, o, rc)
	base := start(t, nodes, strings.TrimPrefix(o.URL, "http://"))
	ctx := context.Background()
	named := func(name string) *crowd.Visitor {
		return crowd.NewVisitor(http.DefaultTransport, http.Header{"X-Visitor": {name}}, 10*time.Second)
	}

	first := named("first")
	if a := first.Get(ctx, base+"/"); a.Outcome != crowd.Admitted {
		t.Fatalf("the first visitor: %s (status %d, %v)", a.Outcome, a.Status, a.Err)
	}
	testkit.Eventually(t, testkit.Wait{What: "both nodes count the first visitor active", Timeout: 10 * time.Second}, func() bool {
		for _, n := range c.Nodes {
			if roomStatus(t, n.Admin, "shop").EstimatedTotalActiveUsers != 1 {
				return false
			}
		}
		return true
	})

	t.Run("the second visitor gets the queue page through the proxy", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Header.Set("X-Visitor", "second")
		req.Header.Set("Accept", "text/html")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cookie := slices.ContainsFunc(resp.Cookies(), func(c *http.Cookie) bool { return c.Name == "__waitroom" })
		if resp.StatusCode/100 == 2 || resp.Header.Get("Refresh") == "" || !cookie || !strings.Contains(string(page), "You are in line") {
			t.Fatalf("status %d, Refresh %q, cookie %v, page:\n%.300s", resp.StatusCode, resp.Header.Get("Refresh"), cookie, page)
		}
	})
	t.Run("a third visitor who keeps its cookie is still queued after its cookie check", func(t *testing.T) {
		third := named("third")
		if a := third.Get(ctx, base+"/"); a.Outcome != crowd.Queued {
			t.Fatalf("first visit: %s (status %d)", a.Outcome, a.Status)
		}
		if a := third.Get(ctx, base+"/"); a.Outcome != crowd.Queued {
			t.Fatalf("back with its cookie: %s (status %d)", a.Outcome, a.Status)
		}
	})
	t.Run("the admitted visitor's later requests reach the origin", func(t *testing.T) {
		for _, path := range []string{"/account", "/cart?item=3"} {
			if a := first.Get(ctx, base+path); a.Outcome != crowd.Admitted || a.Status != http.StatusOK {
				t.Fatalf("%s: %s (status %d, %v)", path, a.Outcome, a.Status, a.Err)
			}
		}
	})
	t.Run("the origin saw exactly the admitted visitor's requests", func(t *testing.T) {
		var saw []string
		for _, h := range o.Log() {
			saw = append(saw, h.Visitor+" "+h.URI)
		}
		if want := []string{"first /", "first /account", "first /cart?item=3"}; !slices.Equal(saw, want) {
			t.Fatalf("the origin saw %q, want %q", saw, want)
		}
	})
	t.Run("the proxy asked both nodes", func(t *testing.T) { askedEveryNode(t, c) })
}
