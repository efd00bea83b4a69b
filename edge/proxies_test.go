package edge_test

// Forward-auth behind real proxies: nginx and Caddy, started on free
// loopback ports from the configuration files shipped in
// docs/deploy/forward-auth (only their addresses changed), in front of two
// waitroom nodes in forward-auth mode and the test origin. The tests skip
// when a proxy's binary is missing, unless WAITROOM_REQUIRE_PROXIES is set
// (CI installs both), which makes them fail.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// shippedConfig is a file of docs/deploy/forward-auth with each of the
// example addresses in it replaced; a replacement whose text the file no
// longer holds fails the test, so the shipped file and the tested one
// cannot drift apart.
func shippedConfig(t *testing.T, name string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "deploy", "forward-auth", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("docs/deploy/forward-auth/%s no longer holds %q", name, replace[i])
		}
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return s
}

// proxyBinary finds a proxy's binary: $env, else name on PATH, else path.
// A missing binary skips the test, or fails it under
// WAITROOM_REQUIRE_PROXIES.
func proxyBinary(t *testing.T, env, name, path string) string {
	t.Helper()
	return findBinary(t, env, name, path, "WAITROOM_REQUIRE_PROXIES", "Debian package "+name)
}

// findBinary is proxyBinary for a program that installs its own way (how,
// in the skip message) and whose test fails, rather than skips, when the
// variable require is set.
func findBinary(t *testing.T, env, name, path, require, how string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("%s is not installed (%s; or set %s)", name, how, env)
	if os.Getenv(require) != "" {
		t.Fatal(msg + "; but " + require + " is set")
	}
	t.Skip(msg)
	return ""
}

// runProxy starts a proxy process until the test ends and waits until it
// accepts connections on port; its output goes to the test's log on
// failure.
func runProxy(t *testing.T, port int, env []string, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s said:\n%s", filepath.Base(bin), out.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testkit.Eventually(t, testkit.Wait{What: filepath.Base(bin) + " listening on " + addr, Timeout: 15 * time.Second, Seen: out.String}, func() bool {
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", filepath.Base(bin), out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// startNginx runs nginx with the shipped configuration in front of the
// waitroom nodes' forward-auth addresses and the origin, and returns its
// address.
func startNginx(t *testing.T, nodes []string, origin string) string {
	bin := proxyBinary(t, "WAITROOM_NGINX", "nginx", "/usr/sbin/nginx")
	dir := t.TempDir()
	port := testkit.FreePort(t)
	var servers strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&servers, "    server %s;\n", n)
	}
	site := shippedConfig(t, "nginx.conf",
		"    server 127.0.0.1:9091;\n", servers.String(),
		"    server 127.0.0.1:8000;\n", "    server "+origin+";\n",
		"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", port),
		"/var/cache/nginx/waitroom", filepath.Join(dir, "auth-cache"))
	if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	// One process, in the foreground, everything in the test's directory.
	main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/site.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	runProxy(t, port, nil, bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", "stderr")
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// startCaddy runs Caddy with the shipped Caddyfile in front of the waitroom
// nodes and the origin, its admin endpoint off and its state in the test's
// directory, and returns its address.
func startCaddy(t *testing.T, nodes []string, origin string) string {
	bin := proxyBinary(t, "WAITROOM_CADDY", "caddy", "/usr/bin/caddy")
	dir := t.TempDir()
	port := testkit.FreePort(t)
	site := shippedConfig(t, "Caddyfile",
		"reverse_proxy 127.0.0.1:9091 {", "reverse_proxy "+strings.Join(nodes, " ")+" {",
		"reverse_proxy 127.0.0.1:8000\n", "reverse_proxy "+origin+"\n",
		// Every host on the port, as a block for several rooms' hosts:
		// what the site is is then the request's word alone.
		"shop.example.com {", fmt.Sprintf("http://:%d {\n\tbind 127.0.0.1", port))
	conf := "{\n\tadmin off\n\tauto_https off\n}\n\n" + site
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "XDG_DATA_HOME=" + dir}
	runProxy(t, port, env, bin, "run", "--config", path, "--adapter", "caddyfile")
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// realProxies are the proxies the tests run for real, each started from
// its shipped file in front of the given nodes and origin.
var realProxies = []struct {
	name  string
	start func(t *testing.T, nodes []string, origin string) string
}{
	{"nginx", startNginx},
	{"caddy", startCaddy},
}

// TestBehindRealProxies puts two waitroom nodes in forward-auth mode
// behind a real nginx and a real Caddy, configured from the shipped files,
// and sends cookie-keeping visitors through: admitted, queued, refreshed
// through the queue and its cookie check, admitted in order of arrival,
// signed out by the origin's revoke, a bypassed asset, and the room's
// limit held across both nodes, which the proxy asks in turn.
func TestBehindRealProxies(t *testing.T) {
	for _, p := range realProxies {
		t.Run("behind "+p.name, func(t *testing.T) {
			t.Parallel()
			behindProxy(t, p.start)
		})
	}
}

// forwardAuthRing starts two waitroom nodes in forward-auth mode, with no
// origin of their own (the proxy reaches o), in one ring, and returns them
// with their forward-auth addresses.
func forwardAuthRing(t *testing.T, o *edgetest.Origin, rooms ...config.Room) (*edgetest.Cluster, []string) {
	t.Helper()
	c := clusterOf(t, clusterOpts{Rooms: rooms, Serve: true, Origin: o})
	c.Edit = func(_ *clusterNode, cfg *config.Config) {
		cfg.Origin = ""
		cfg.ForwardAuth.Listen = "127.0.0.1:0"
	}
	c.Add("pop-a", 0)
	c.Add("pop-b", 0)
	c.WaitRing(c.Nodes, 15*time.Second)
	var nodes []string
	for _, n := range c.Nodes {
		if n.Server.PublicAddr() != "" {
			t.Errorf("%s opened a public listener with no origin anywhere", n.Name)
		}
		nodes = append(nodes, n.Server.ForwardAuthAddr())
	}
	return c, nodes
}

// askedEveryNode fails unless every node of c decided about at least one
// request of room shop: the proxy spreads its questions over the nodes.
func askedEveryNode(t *testing.T, c *edgetest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		var decided float64
		for _, outcome := range []string{"admitted", "queued", "session"} {
			decided += metric(t, n.Admin, `waitroom_requests_total{outcome="`+outcome+`",room="shop"}`)
		}
		if decided == 0 {
			t.Errorf("%s decided nothing", n.Name)
		}
	}
}

func behindProxy(t *testing.T, start func(t *testing.T, nodes []string, origin string) string) {
	const perMinute = 2
	// The origin signs a visitor out at /logout by posting its cookie to a
	// waitroom node's revoke endpoint, and passes the cleared cookie on.
	var revokeAt atomic.Value // a node's forward-auth address
	var revokes atomic.Int32
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+revokeAt.Load().(string)+"/revoke", nil)
			req.Header["Cookie"] = r.Header["Cookie"]
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `"revoked":["shop"]`) {
				revokes.Add(1)
			}
			for _, c := range resp.Header.Values("Set-Cookie") {
				w.Header().Add("Set-Cookie", c)
			}
			_, _ = io.WriteString(w, "origin: signed out")
			return
		}
		if r.URL.Path == "/upload" {
			n, _ := io.Copy(io.Discard, r.Body)
			_, _ = fmt.Fprintf(w, "origin: /upload %d bytes", n)
			return
		}
		_, _ = io.WriteString(w, "origin: "+r.URL.Path)
	})
	o := edgetest.NewOrigin(t, edgetest.Serving(site))
	rc := room("shop", 100, perMinute)
	rc.Origin = "" // served through the proxy only
	rc.EnabledOriginCommands = []string{"revoke"}
	rc.Bypass = []config.BypassRule{{PathPrefix: "/static/"}}
	c, nodes := forwardAuthRing(t, o, rc)
	revokeAt.Store(nodes[1])
	base := start(t, nodes, strings.TrimPrefix(o.URL, "http://"))

	ctx := context.Background()
	type person struct {
		name     string
		v        *crowd.Visitor
		arrived  int64 // fake minute
		admitted int64 // fake minute, 0 while waiting
		last     crowd.Answer
	}
	minute := func() int64 { return c.Clock.Now().Unix() / 60 }
	var people []*person
	// settle waits until both nodes count every admitted visitor as active
	// and every proven waiting one as queued, so that the next decisions
	// are made on the whole ring's state.
	settle := func() {
		t.Helper()
		var active, queued int64
		for _, p := range people {
			if p.admitted != 0 {
				active++
			} else {
				queued++
			}
		}
		testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("both nodes count %d active and %d queued", active, queued), Timeout: 10 * time.Second, Seen: func() string {
			a, b := roomStatus(t, c.Nodes[0].Admin, "shop"), roomStatus(t, c.Nodes[1].Admin, "shop")
			return fmt.Sprintf("pop-a: %d active, %d queued; pop-b: %d active, %d queued", a.EstimatedTotalActiveUsers, a.EstimatedQueuedUsers, b.EstimatedTotalActiveUsers, b.EstimatedQueuedUsers)
		}}, func() bool {
			for _, n := range c.Nodes {
				rs := roomStatus(t, n.Admin, "shop")
				if rs.EstimatedTotalActiveUsers != active || rs.EstimatedQueuedUsers != queued {
					return false
				}
			}
			return true
		})
	}
	var mu sync.Mutex
	admissions := map[int64]int{}
	visit := func(p *person) {
		t.Helper()
		a := p.v.Get(ctx, base+"/")
		p.last = a
		t.Logf("minute %d +%ds: %s %s (%d)", minute(), c.Clock.Now().Unix()%60, p.name, a.Outcome, a.Status)
		switch a.Outcome {
		case crowd.Admitted:
			if p.admitted == 0 {
				p.admitted = minute()
				mu.Lock()
				admissions[p.admitted]++
				mu.Unlock()
			}
		case crowd.Queued:
		default:
			t.Fatalf("%s: %s (status %d, %v)", p.name, a.Outcome, a.Status, a.Err)
		}
	}
	arrive := func(prefix string, n int) []*person {
		var ps []*person
		for i := 0; i < n; i++ {
			p := &person{name: fmt.Sprintf("%s%d", prefix, i+1), v: crowd.NewVisitor(http.DefaultTransport, nil, 10*time.Second), arrived: minute()}
			visit(p)
			ps = append(ps, p)
		}
		people = append(people, ps...)
		// The first queue page refreshes, with its cookie check, after
		// the proof interval: those queued come back then.
		c.Advance(policy.ProofRefresh * time.Second)
		for _, p := range ps {
			if p.admitted == 0 {
				if !strings.Contains(p.v.Next(), "__waitroom_cc=") {
					t.Errorf("%s's first queue page does not refresh to the cookie check: %q", p.name, p.v.Next())
				}
				visit(p)
			}
		}
		settle()
		return ps
	}

	early := arrive("early", 4)
	var admittedNow int
	for _, p := range early {
		if p.admitted != 0 {
			admittedNow++
		}
	}
	if admittedNow == 0 || admittedNow > perMinute {
		t.Fatalf("%d of the first 4 visitors admitted in their minute, want 1 to %d", admittedNow, perMinute)
	}
	for _, p := range early {
		if p.admitted == 0 && p.last.Outcome != crowd.Queued {
			t.Fatalf("%s: %s after its proof", p.name, p.last.Outcome)
		}
	}
	t.Run("a client that keeps no cookie is told that cookies are required", func(t *testing.T) {
		// The minute's slots are taken: a new visitor is queued, and its
		// first page refreshes to the cookie check.
		plain := &http.Client{Timeout: 10 * time.Second}
		resp, err := plain.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		r, _ := crowd.ParseRefresh(resp.Header.Get("Refresh"))
		if !strings.Contains(r.URL, "__waitroom_cc=") {
			t.Fatalf("first answer %d with Refresh %q, want a queue page refreshing to the cookie check", resp.StatusCode, resp.Header.Get("Refresh"))
		}
		resp, err = plain.Get(base + r.URL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Refresh") != "" || !strings.Contains(string(page), "Cookies are required") {
			t.Fatalf("back without the cookie: %d, Refresh %q, page:\n%s", resp.StatusCode, resp.Header.Get("Refresh"), page)
		}
	})
	t.Run("a visitor's own X-Forwarded headers do not change what is decided", func(t *testing.T) {
		// The minute's slots are taken; claiming to ask for a bypassed
		// asset must not let the visitor through.
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Header.Set("X-Forwarded-Uri", "/static/app.css")
		req.Header.Set("X-Forwarded-Method", "GET")
		req.Header.Set("X-Forwarded-Host", "other.example")
		req.Header.Set("X-Original-URI", "/static/app.css")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if o, _ := crowd.Classify(resp); o != crowd.Queued {
			t.Fatalf("%s (status %d), want queued", o, resp.StatusCode)
		}
	})
	c.Advance(time.Minute)
	late := arrive("late", 2)
	everyone := append(append([]*person{}, early...), late...)
	for round := 0; round < 24; round++ {
		waiting := 0
		for _, p := range everyone {
			if p.admitted == 0 {
				waiting++
				visit(p)
			}
		}
		if waiting == 0 {
			break
		}
		settle()
		c.Advance(30 * time.Second)
	}
	t.Run("everyone was admitted through the queue", func(t *testing.T) {
		for _, p := range everyone {
			if p.admitted == 0 {
				t.Errorf("%s still waits: %s %q", p.name, p.last.Outcome, p.last.Refresh)
			}
		}
	})
	t.Run("no minute admitted more than new_users_per_minute across both nodes", func(t *testing.T) {
		for m, n := range admissions {
			if n > perMinute {
				t.Errorf("minute %d: %d admitted, limit %d", m, n, perMinute)
			}
		}
		if t.Failed() {
			// The nodes date admissions by the ring's time: one off the
			// test's clock dates them in another minute.
			for _, n := range c.Nodes {
				t.Logf("%s: ring time %v from the test's clock", n.Name, n.Server.RingNow().Sub(c.Clock.Now()))
			}
		}
	})
	t.Run("those who came in an earlier minute were admitted first", func(t *testing.T) {
		for _, a := range early {
			for _, b := range late {
				if a.admitted > b.admitted {
					t.Errorf("%s (arrived minute %d) admitted in minute %d, after %s (arrived %d, admitted %d)", a.name, a.arrived, a.admitted, b.name, b.arrived, b.admitted)
				}
			}
		}
	})
	t.Run("an admitted visitor's request reaches the origin with its cookie", func(t *testing.T) {
		p := early[0]
		a := p.v.Get(ctx, base+"/account")
		if a.Outcome != crowd.Admitted || p.v.Cookie(base, "__waitroom") == "" {
			t.Fatalf("%s at /account: %s (%d), cookie kept %v", p.name, a.Outcome, a.Status, p.v.Cookie(base, "__waitroom") != "")
		}
		if uris := o.URIs(); uris[len(uris)-1] != "/account" {
			t.Errorf("the origin last saw %q", uris[len(uris)-1])
		}
		for _, u := range o.URIs() {
			if strings.Contains(u, "__waitroom") {
				t.Errorf("the origin saw waitroom's own parameter: %q", u)
			}
		}
	})
	t.Run("an admitted visitor's POST reaches the origin with its body", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/upload", strings.NewReader("hello world"))
		req.Header.Set("Cookie", "__waitroom="+early[0].v.Cookie(base, "__waitroom"))
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "origin: /upload 11 bytes" {
			t.Fatalf("status %d: %q", resp.StatusCode, b)
		}
	})
	t.Run("a bypassed asset goes straight to the origin", func(t *testing.T) {
		v := crowd.NewVisitor(http.DefaultTransport, nil, 10*time.Second)
		if a := v.Get(ctx, base+"/static/app.css"); a.Outcome != crowd.Admitted || v.Cookie(base, "__waitroom") != "" {
			t.Fatalf("bypass: %s (%d), cookie %v", a.Outcome, a.Status, v.Cookie(base, "__waitroom") != "")
		}
	})
	t.Run("the proxy asked both nodes", func(t *testing.T) { askedEveryNode(t, c) })
	t.Run("no question was refused and every kept answer was fetched from the node that kept it", func(t *testing.T) {
		for _, n := range c.Nodes {
			for _, reason := range []string{"answer_missing", "bad_request", "untrusted_source"} {
				if v := metric(t, n.Admin, `waitroom_forward_auth_refused_total{reason="`+reason+`"}`); v != 0 {
					t.Errorf("%s refused %v questions as %s", n.Name, v, reason)
				}
			}
		}
	})
	t.Run("the origin's revoke ends the session and frees its slot on both nodes", func(t *testing.T) {
		settle()
		before := int64(len(people))
		p := early[0]
		if a := p.v.Get(ctx, base+"/logout"); a.Outcome != crowd.Admitted || revokes.Load() != 1 {
			t.Fatalf("logout: %s (%d), %d revoked", a.Outcome, a.Status, revokes.Load())
		}
		testkit.Eventually(t, testkit.Wait{What: "one active user fewer on both nodes", Timeout: 10 * time.Second}, func() bool {
			for _, n := range c.Nodes {
				if roomStatus(t, n.Admin, "shop").EstimatedTotalActiveUsers != before-1 {
					return false
				}
			}
			return true
		})
	})
}

// rawExchange sends one request, written out byte for byte, to a proxy at
// base and reads its answer: the spellings a client library would never
// send (an absolute-form request line, a Host that disagrees with it) are
// what an attacker sends.
func rawExchange(t *testing.T, base, request string) (int, string) {
	resp, page := rawResponse(t, base, request)
	if resp == nil {
		return 0, page
	}
	return resp.StatusCode, page
}

// rawResponse is rawExchange with the whole answer: nil and the error's
// text when the proxy closed the connection.
func rawResponse(t *testing.T, base, request string) (*http.Response, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err.Error() // the proxy closed the connection: nothing was served
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestBehindRealProxiesOneRequestOneHost puts two rooms by host behind one
// server block of the real nginx, Caddy and Traefik: shop lets everyone in, vip
// queues everyone. Requests whose request line, Host and X-Forwarded-Host
// name different sites, in odd spellings, must never bring vip's content
// from the origin: the room is decided on exactly the host the origin is
// sent, or the request is refused.
func TestBehindRealProxiesOneRequestOneHost(t *testing.T) {
	proxies := append(realProxies[:len(realProxies):len(realProxies)], realProxies[0])
	proxies[len(proxies)-1].name, proxies[len(proxies)-1].start = "traefik", startTraefik
	for _, p := range proxies {
		t.Run("behind "+p.name, func(t *testing.T) {
			t.Parallel()
			// The origin notes the X-Forwarded-Host it gets: a site may
			// believe it over Host.
			o := edgetest.NewOrigin(t, edgetest.VisitorHeader("X-Forwarded-Host"))
			shop := room("shop", 1000, 1000)
			shop.Host = "shop.example.com"
			vip := room("vip", 1000, 1000)
			vip.Host = "vip.example.com"
			vip.QueueAll = true
			c := clusterOf(t, clusterOpts{Rooms: []config.Room{shop, vip}, Serve: true, Origin: o})
			c.Edit = func(_ *clusterNode, cfg *config.Config) {
				cfg.Origin = ""
				cfg.Unrouted = config.UnroutedPass
				cfg.ForwardAuth.Listen = "127.0.0.1:0"
			}
			c.Add("pop-a", 0)
			base := p.start(t, []string{c.Nodes[0].Server.ForwardAuthAddr()}, strings.TrimPrefix(o.URL, "http://"))

			cases := []struct {
				name, line string
				headers    []string
			}{
				{"an absolute-form request line for vip with Host shop", "GET http://vip.example.com/a1 HTTP/1.1", []string{"Host: shop.example.com"}},
				{"an absolute-form request line for shop with Host vip", "GET http://shop.example.com/a2 HTTP/1.1", []string{"Host: vip.example.com"}},
				{"an absolute-form request line in capitals with a port", "GET HTTP://VIP.Example.COM:80/a3 HTTP/1.1", []string{"Host: shop.example.com"}},
				{"an absolute-form https request line for vip", "GET https://vip.example.com/a4 HTTP/1.1", []string{"Host: shop.example.com"}},
				{"an absolute-form request line with a trailing dot", "GET http://vip.example.com./a5 HTTP/1.1", []string{"Host: shop.example.com"}},
				{"an absolute-form request line with user information", "GET http://shop.example.com@vip.example.com/a6 HTTP/1.1", []string{"Host: shop.example.com"}},
				{"X-Forwarded-Host vip with Host shop", "GET /a7 HTTP/1.1", []string{"Host: shop.example.com", "X-Forwarded-Host: vip.example.com"}},
				{"X-Forwarded-Host shop with Host vip", "GET /a8 HTTP/1.1", []string{"Host: vip.example.com", "X-Forwarded-Host: shop.example.com"}},
				{"Host vip in capitals with a trailing dot", "GET /a9 HTTP/1.1", []string{"Host: VIP.example.com."}},
				{"Host vip with a port", "GET /a10 HTTP/1.1", []string{"Host: vip.example.com:80"}},
				{"two Host headers", "GET /a11 HTTP/1.1", []string{"Host: shop.example.com", "Host: vip.example.com"}},
				{"an absolute-form request line with no Host", "GET http://vip.example.com/a12 HTTP/1.1", nil},
				{"Forwarded naming vip", "GET /a13 HTTP/1.1", []string{"Host: shop.example.com", "Forwarded: host=vip.example.com"}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					req := tc.line + "\r\n" + strings.Join(append(tc.headers, "Connection: close"), "\r\n") + "\r\n\r\n"
					before := o.Hits()
					status, page := rawExchange(t, base, req)
					t.Logf("%d %.80q", status, page)
					for _, h := range o.Log()[before:] {
						for _, host := range []string{h.Host, h.Visitor} {
							host = strings.ToLower(host)
							if name, _, err := net.SplitHostPort(host); err == nil {
								host = name
							}
							if strings.TrimSuffix(host, ".") == "vip.example.com" {
								t.Fatalf("the origin served %s to Host %q, X-Forwarded-Host %q, for a room that queues everyone (answer %d)", h.URI, h.Host, h.Visitor, status)
							}
						}
					}
				})
			}
			t.Run("a plain request for shop reaches the origin with Host shop", func(t *testing.T) {
				status, page := rawExchange(t, base, "GET /plain HTTP/1.1\r\nHost: shop.example.com\r\nConnection: close\r\n\r\n")
				if status != http.StatusOK || page != "origin: /plain" {
					t.Fatalf("%d %q", status, page)
				}
				log := o.Log()
				if last := log[len(log)-1]; last.Host != "shop.example.com" || last.URI != "/plain" {
					t.Fatalf("the origin last got %s for Host %q", last.URI, last.Host)
				}
			})
			t.Run("a queued visitor with an 8 KB address gets the queue page, whose headers stay small", func(t *testing.T) {
				// Just under nginx's default 8 KB request line.
				long := "/search?q=" + strings.Repeat("a", 7900)
				resp, page := rawResponse(t, base, "GET "+long+" HTTP/1.1\r\nHost: vip.example.com\r\nAccept: text/html\r\nConnection: close\r\n\r\n")
				if resp == nil {
					t.Fatal(page)
				}
				if resp.StatusCode >= 500 || !strings.Contains(page, "<!doctype html>") || resp.Header.Get("Refresh") == "" {
					t.Fatalf("%d, Refresh %q: %.200q", resp.StatusCode, resp.Header.Get("Refresh"), page)
				}
				for k, vs := range resp.Header {
					for _, v := range vs {
						if len(k)+len(v) > 1024 {
							t.Errorf("header %s is %d bytes", k, len(v))
						}
					}
				}
			})
			t.Run("a plain request for vip is queued", func(t *testing.T) {
				before := o.Hits()
				status, page := rawExchange(t, base, "GET /plain HTTP/1.1\r\nHost: vip.example.com\r\nConnection: close\r\n\r\n")
				if o.Hits() != before || strings.HasPrefix(page, "origin:") {
					t.Fatalf("answer %d, origin hit %d times", status, o.Hits()-before)
				}
			})
		})
	}
}
