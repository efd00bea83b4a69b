package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// External is a reverse proxy operators already run (nginx, HAProxy,
// Caddy), started on loopback as a baseline: one process with one worker
// (Caddy, a Go server like the node: GOMAXPROCS=1), proxying
// to the bench's origin with upstream keep-alive, and answering the queue
// page's captured bytes on a second port. nginx also runs waitroom's
// forward-auth configuration (as shipped in the deploy docs) on a third
// port, in front of the node's forward-auth endpoint and the origin.
type External struct {
	Name    string // "nginx", "HAProxy", "Caddy"
	Version string
	Binary  string
	// ProxyURL proxies to the origin; PageURL answers the queue page;
	// AuthURL (nginx only, else "") proxies to the origin when the node's
	// forward-auth endpoint lets the request through.
	ProxyURL, PageURL, AuthURL string

	dir    string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// ExternalProxy names a proxy the bench can use as a baseline: the
// environment variable naming its binary, the name on $PATH, and the
// Debian path.
type ExternalProxy struct {
	Name, Env, Program, Path string
}

// ExternalProxies are the baselines `waitroom bench` uses when installed
// (Debian packages nginx, haproxy and caddy; .ci/install-proxies.sh).
var ExternalProxies = []ExternalProxy{
	{Name: "nginx", Env: "WAITROOM_NGINX", Program: "nginx", Path: "/usr/sbin/nginx"},
	{Name: "HAProxy", Env: "WAITROOM_HAPROXY", Program: "haproxy", Path: "/usr/sbin/haproxy"},
	{Name: "Caddy", Env: "WAITROOM_CADDY", Program: "caddy", Path: "/usr/bin/caddy"},
}

// Find is the proxy's binary: $Env, else Program on $PATH, else Path; ""
// when none is there.
func (p ExternalProxy) Find() string {
	if v := os.Getenv(p.Env); v != "" {
		return v
	}
	if v, err := exec.LookPath(p.Program); err == nil {
		return v
	}
	if _, err := os.Stat(p.Path); err == nil {
		return p.Path
	}
	return ""
}

// StartExternal starts the proxy p (whose binary is bin) in front of env's
// origin, queue page and, for nginx, forward-auth endpoint.
func StartExternal(env *Env, p ExternalProxy, bin string) (_ *External, err error) {
	x := &External{Name: p.Name, Binary: bin, out: &syncBuffer{}, exited: make(chan struct{})}
	if x.dir, err = os.MkdirTemp("", "waitroom-bench-"+p.Program+"-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			x.Close()
		}
	}()
	if err := os.WriteFile(filepath.Join(x.dir, "queue.html"), env.QueuePage.Body, 0o600); err != nil {
		return nil, err
	}
	origin, err := hostPort(env.OriginURL)
	if err != nil {
		return nil, err
	}
	ports, err := testkit.FreePorts(3)
	if err != nil {
		return nil, err
	}
	url := func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d/", port) }
	x.ProxyURL, x.PageURL = url(ports[0]), url(ports[1])
	var args, environ []string
	switch p.Program {
	case "nginx":
		x.Version = versionOf(bin, "-v")
		x.AuthURL = url(ports[2])
		conf := nginxConf(x.dir, origin, env.ForwardAuthAddr, ports, env.QueuePage)
		if err := os.WriteFile(filepath.Join(x.dir, "nginx.conf"), []byte(conf), 0o600); err != nil {
			return nil, err
		}
		args = []string{"-p", x.dir, "-c", filepath.Join(x.dir, "nginx.conf"), "-e", "stderr"}
	case "haproxy":
		x.Version = versionOf(bin, "-v")
		conf := haproxyConf(x.dir, origin, ports, env.QueuePage)
		if err := os.WriteFile(filepath.Join(x.dir, "haproxy.cfg"), []byte(conf), 0o600); err != nil {
			return nil, err
		}
		args = []string{"-db", "-f", filepath.Join(x.dir, "haproxy.cfg")}
	case "caddy":
		x.Version = versionOf(bin, "version")
		if env.QueuePage.Status != http.StatusOK {
			return nil, fmt.Errorf("caddy's file server answers 200, the queue page %d", env.QueuePage.Status)
		}
		path := filepath.Join(x.dir, "Caddyfile")
		if err := os.WriteFile(path, []byte(caddyConf(x.dir, origin, ports, env.QueuePage)), 0o600); err != nil {
			return nil, err
		}
		args = []string{"run", "--config", path, "--adapter", "caddyfile"}
		// A Go server like the node, on one core as the node is measured.
		environ = []string{"GOMAXPROCS=1", "HOME=" + x.dir, "XDG_CONFIG_HOME=" + x.dir, "XDG_DATA_HOME=" + x.dir}
	default:
		return nil, fmt.Errorf("no bench configuration for %s", p.Program)
	}
	x.cmd = exec.Command(bin, args...)
	x.cmd.Env = append(os.Environ(), environ...)
	x.cmd.Stdout, x.cmd.Stderr = x.out, x.out
	if err := x.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	go func() { _ = x.cmd.Wait(); close(x.exited) }()
	for _, port := range ports[:2] {
		if err := x.waitListening(port); err != nil {
			return nil, err
		}
	}
	if x.AuthURL != "" {
		if err := x.waitListening(ports[2]); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// waitListening waits until the proxy accepts connections on port.
func (x *External) waitListening(port int) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-x.exited:
			return fmt.Errorf("%s exited: %s", x.Name, strings.TrimSpace(x.out.String()))
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on %s: %s", x.Name, addr, strings.TrimSpace(x.out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CPU is the CPU time (user and system, all threads) the proxy's process
// has used, from /proc (10 ms resolution; summed over many slices).
func (x *External) CPU() time.Duration {
	if x.cmd == nil || x.cmd.Process == nil {
		return 0
	}
	cpu, _ := testkit.ProcessCPU(x.cmd.Process.Pid)
	return cpu
}

// Close stops the proxy and removes its directory.
func (x *External) Close() {
	if x.cmd != nil && x.cmd.Process != nil {
		_ = x.cmd.Process.Kill()
		<-x.exited
	}
	if x.dir != "" {
		_ = os.RemoveAll(x.dir)
	}
}

func versionOf(bin, flag string) string {
	out, _ := exec.Command(bin, flag).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	for _, w := range strings.Fields(line) {
		if _, v, ok := strings.Cut(w, "/"); ok && v != "" && v[0] >= '0' && v[0] <= '9' {
			return v // nginx version: nginx/1.22.1
		}
		if w != "" && w[0] >= '0' && w[0] <= '9' && strings.Count(w, ".") >= 1 {
			return w // HAProxy version 2.6.12-1+deb12u4 2025/...
		}
	}
	return line
}

func hostPort(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	return p.Host, nil
}

// pageHeaders are the captured queue page's headers a proxy must add
// itself (it sets Date, Content-Length and Content-Type on its own), in a
// fixed order.
func pageHeaders(p CapturedPage) [][2]string {
	var hs [][2]string
	for k, vs := range p.Header {
		switch k {
		case "Date", "Content-Length", "Content-Type":
			continue
		}
		for _, v := range vs {
			hs = append(hs, [2]string{k, v})
		}
	}
	slices.SortFunc(hs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return hs
}

// quoted is s in double quotes for nginx's and HAProxy's configuration
// files; escape also doubles HAProxy's log-format %.
func quoted(s string, percent bool) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	if percent {
		s = strings.ReplaceAll(s, `%`, `%%`)
	}
	return `"` + s + `"`
}

// nginxConf is one nginx process, one worker, nothing logged: port 0
// proxies to the origin (upstream keep-alive, as an operator tunes it),
// port 1 answers the queue page, port 2 is the shipped forward-auth
// configuration in front of the node and the origin.
func nginxConf(dir, origin, forwardAuth string, ports []int, page CapturedPage) string {
	var add strings.Builder
	for _, h := range pageHeaders(page) {
		fmt.Fprintf(&add, "            add_header %s %s always;\n", h[0], quoted(h[1], false))
	}
	site := strings.NewReplacer(
		"    server 127.0.0.1:9091;\n", "    server "+forwardAuth+";\n",
		"    server 127.0.0.1:8000;\n", "    server "+origin+";\n",
		"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", ports[2]),
		NginxAuthCachePath, filepath.Join(dir, "auth-cache"),
	).Replace(NginxForwardAuthConf)
	return fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    access_log off;
    server_tokens off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    keepalive_requests 100000;

    upstream bench_origin {
        server %[2]s;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:%[3]d;
        location / {
            proxy_pass http://bench_origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
    }
    server {
        listen 127.0.0.1:%[4]d;
        location / {
            root %[1]s;
            types { }
            default_type %[5]s;
            etag off;
            rewrite ^ /queue.html break;
%[6]s        }
    }
%[7]s
}
`, dir, origin, ports[0], ports[1], quoted(page.Header.Get("Content-Type"), false), add.String(), site)
}

// haproxyConf is one HAProxy process, one thread: port 0 proxies to the
// origin (connections reused), port 1 answers the queue page.
func haproxyConf(dir, origin string, ports []int, page CapturedPage) string {
	var hdr strings.Builder
	for _, h := range pageHeaders(page) {
		fmt.Fprintf(&hdr, " hdr %s %s", h[0], quoted(h[1], true))
	}
	return fmt.Sprintf(`global
    nbthread 1
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
    option http-keep-alive
    http-reuse always

frontend proxy
    bind 127.0.0.1:%[2]d
    default_backend origin

backend origin
    option forwardfor
    server origin %[3]s

frontend page
    bind 127.0.0.1:%[4]d
    http-request return status %[5]d content-type %[6]s file %[1]s/queue.html%[7]s
`, dir, ports[0], origin, ports[1], page.Status, quoted(page.Header.Get("Content-Type"), true), hdr.String())
}

// caddyConf is one Caddy process, its admin endpoint off: port 0 proxies
// to the origin (reverse_proxy keeps upstream connections alive by
// default), port 1 serves the queue page's file with its headers.
func caddyConf(dir, origin string, ports []int, page CapturedPage) string {
	var hdr strings.Builder
	for _, h := range pageHeaders(page) {
		fmt.Fprintf(&hdr, "\t\t%s %s\n", h[0], quoted(h[1], false))
	}
	return fmt.Sprintf(`{
	admin off
	auto_https off
}

http://127.0.0.1:%[2]d {
	reverse_proxy %[3]s
}

http://127.0.0.1:%[4]d {
	root * %[1]s
	rewrite * /queue.html
	header {
		-Etag
		-Last-Modified
		-Server
		Content-Type %[5]s
%[6]s	}
	file_server
}
`, dir, ports[0], origin, ports[1], quoted(page.Header.Get("Content-Type"), false), hdr.String())
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 64<<10 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startExternals starts every baseline proxy that is installed; a proxy
// that is installed but fails to start is an error.
func startExternals(env *Env) ([]*External, []string, error) {
	var xs []*External
	var missing []string
	for _, p := range ExternalProxies {
		bin := p.Find()
		if bin == "" {
			missing = append(missing, fmt.Sprintf("%s is not installed (Debian package %s, or set %s): no %s rows", p.Name, p.Program, p.Env, p.Name))
			continue
		}
		x, err := StartExternal(env, p, bin)
		if err != nil {
			for _, x := range xs {
				x.Close()
			}
			return nil, nil, fmt.Errorf("baseline %s: %w", p.Name, err)
		}
		xs = append(xs, x)
	}
	return xs, missing, nil
}

// checkExternal sees that x answers: the origin's page through the proxy,
// the queue page's bytes, and (nginx) the origin's page through
// forward-auth.
func checkExternal(x *External) error {
	get := func(u string) (int, []byte, error) {
		resp, err := http.Get(u + "open/")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes(), err
	}
	for _, c := range []struct {
		what, url string
		want      []byte
	}{{"proxy", x.ProxyURL, OriginBody}, {"forward-auth", x.AuthURL, OriginBody}} {
		if c.url == "" {
			continue
		}
		st, b, err := get(c.url)
		if err != nil {
			return fmt.Errorf("%s %s: %w", x.Name, c.what, err)
		}
		if st != http.StatusOK || !bytes.Equal(b, c.want) {
			return fmt.Errorf("%s %s: status %d, %d bytes, want 200 and the origin's %d", x.Name, c.what, st, len(b), len(c.want))
		}
	}
	if _, b, err := get(x.PageURL); err != nil || len(b) == 0 {
		return errors.Join(fmt.Errorf("%s queue page: %d bytes", x.Name, len(b)), err)
	}
	return nil
}
