package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// httpsClient is a visitor's HTTPS client that trusts roots and reaches
// every host name at addr, as DNS would send it there; it speaks HTTP/2
// when the server offers it and follows no redirect.
func httpsClient(roots *x509.CertPool, addr string) *http.Client {
	dial := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dial.DialContext(ctx, network, addr)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// servedSerial opens a new TLS connection to addr for host and returns the
// serial number of the certificate the node shows.
func servedSerial(t *testing.T, roots *x509.CertPool, addr, host string) int64 {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: host})
	if err != nil {
		t.Fatalf("TLS handshake with %s as %s: %v", addr, host, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestHTTPSWithCertificateFiles serves a room over HTTPS from certificate
// files on real listeners: visitors are let in over HTTP/2 with a Secure
// cookie, a renewed certificate is served without a restart, and the
// plain-HTTP listener sends visitors to HTTPS.
func TestHTTPSWithCertificateFiles(t *testing.T) {
	const host = "shop.waitroom.test"
	ca := agent.NewTestCA(t)
	dir := t.TempDir()
	certPath, keyPath := ca.WritePair(t, dir, 1, host)
	org := edgetest.NewOrigin(t)
	shop := edgetest.Room("shop", 100, 100)
	shop.Host = host
	cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, t.TempDir()), org.URL, shop)
	cfg.TLS = config.TLSConfig{CertFile: certPath, KeyFile: keyPath, RedirectListen: "127.0.0.1:0"}
	srv := edgetest.ServeNode(t, cfg, nil)
	client := httpsClient(ca.Pool, srv.PublicAddr())
	_, port, _ := net.SplitHostPort(srv.PublicAddr())

	t.Run("a edgetest.Visitor is let in over HTTP/2 and reaches the origin", func(t *testing.T) {
		resp, err := client.Get("https://" + host + "/products")
		if err != nil {
			t.Fatal(err)
		}
		got := edgetest.Body(t, resp)
		if resp.StatusCode != http.StatusOK || got != "origin: /products" || resp.ProtoMajor != 2 {
			t.Errorf("%s %d %q; want HTTP/2 200 from the origin", resp.Proto, resp.StatusCode, got)
		}
		t.Run("its cookie is Secure without being configured so", func(t *testing.T) {
			line := edgetest.SetCookie(resp, "__waitroom")
			if _, ok := edgetest.CookieAttr(line, "Secure"); !ok {
				t.Errorf("Set-Cookie %q lacks Secure (cookie_attributes secure auto, over TLS)", line)
			}
			if v, _ := edgetest.CookieAttr(line, "SameSite"); v != "None" {
				t.Errorf("Set-Cookie %q: SameSite %q; want None, which auto gives with Secure", line, v)
			}
		})
	})
	t.Run("a request body reaches the origin over HTTP/2", func(t *testing.T) {
		resp, err := client.Post("https://"+host+"/upload", "application/octet-stream", strings.NewReader(strings.Repeat("x", 100000)))
		if err != nil {
			t.Fatal(err)
		}
		if got := edgetest.Body(t, resp); resp.ProtoMajor != 2 || got != "origin: /upload 100000 bytes" {
			t.Errorf("%s %d %q; want the origin to read all 100000 bytes over HTTP/2", resp.Proto, resp.StatusCode, got)
		}
	})
	t.Run("a renewed certificate is served without a restart", func(t *testing.T) {
		ca.WritePair(t, dir, 2, host)
		testkit.Eventually(t, testkit.Wait{What: "the node serving certificate 2", Timeout: 10 * time.Second, Seen: func() string { return "" }}, func() bool {
			return servedSerial(t, ca.Pool, srv.PublicAddr(), host) == 2
		})
		resp, err := httpsClient(ca.Pool, srv.PublicAddr()).Get("https://" + host + "/after-renewal")
		if err != nil {
			t.Fatal(err)
		}
		if got := edgetest.Body(t, resp); got != "origin: /after-renewal" {
			t.Errorf("after the renewal: %d %q", resp.StatusCode, got)
		}
	})
	t.Run("a new certificate without its key keeps the previous one", func(t *testing.T) {
		c, _ := ca.Issue(t, 3, host)
		agent.WriteFileByRename(t, certPath, c)
		srv.CheckCertificateFiles()
		if got := servedSerial(t, ca.Pool, srv.PublicAddr(), host); got != 2 {
			t.Errorf("serving certificate %d; want 2, the last pair that loaded", got)
		}
	})
	t.Run("the plain-HTTP listener sends visitors to the same address over HTTPS", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.RedirectAddr()+"/products?page=2", nil)
		req.Host = host
		resp, err := httpsClient(nil, srv.RedirectAddr()).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		want := "https://" + host + ":" + port + "/products?page=2"
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
			t.Errorf("%d to %q; want 308 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
		}
	})
	t.Run("plain HTTP on the TLS listener gets no page", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + srv.PublicAddr() + "/products")
		if err == nil {
			got := edgetest.Body(t, resp)
			if strings.Contains(got, "origin:") {
				t.Errorf("plain HTTP reached the origin through the TLS listener: %d %q", resp.StatusCode, got)
			}
		}
	})
}

// TestTLSSettings checks the tls block: each mistake is refused naming the
// field and what is allowed, and the flags set it.
func TestTLSSettings(t *testing.T) {
	base := "node: relay\norigin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    host: shop.example.com\n    total_active_users: 10\n    new_users_per_minute: 10\n"
	anyHost := "node: relay\norigin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    total_active_users: 10\n    new_users_per_minute: 10\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a certificate without its key is refused", base + "tls:\n  cert_file: c.pem\n", "tls.key_file: required with tls.cert_file"},
		{"a key without its certificate is refused", base + "tls:\n  key_file: k.pem\n", "tls.cert_file: required with tls.key_file"},
		{"certificate files and ACME together are refused", base + "tls:\n  cert_file: c.pem\n  key_file: k.pem\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n", "tls.acme.enabled: true cannot be used with tls.cert_file"},
		{"a redirect listener without TLS is refused", base + "tls:\n  redirect_listen: \":80\"\n", "tls.redirect_listen: set while TLS is off"},
		{"ACME settings without enabled are refused", base + "tls:\n  cert_file: c.pem\n  key_file: k.pem\n  acme:\n    email: ops@example.com\n", "tls.acme.email: set while tls.acme.enabled is false"},
		{"a redirect listener on the public port is refused", base + "listen: \":8443\"\ntls:\n  cert_file: c.pem\n  key_file: k.pem\n  redirect_listen: \"127.0.0.1:8443\"\n", "tls.redirect_listen: 127.0.0.1:8443 overlaps listen"},
		{"a redirect listener that is no address is refused", base + "tls:\n  cert_file: c.pem\n  key_file: k.pem\n  redirect_listen: \"80\"\n", "tls.redirect_listen: \"80\" must be host:port"},
		{"an HTTPS port out of range is refused", base + "tls:\n  cert_file: c.pem\n  key_file: k.pem\n  https_port: 70000\n", "tls.https_port: 70000 must be from 1 to 65535"},
		{"a plain-HTTP directory is refused", base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    directory_url: http://ca.example/dir\n", "tls.acme.directory_url: \"http://ca.example/dir\" must be an absolute https:// URL"},
		{"a contact that is no address is refused", base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    email: ops\n", "tls.acme.email: \"ops\" must be one e-mail address"},
		{"an IP address as an ACME host is refused", base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    hosts: [\"192.0.2.1\"]\n", "tls.acme.hosts[0]: \"192.0.2.1\" must be a DNS name with at least one dot"},
		{"a wildcard ACME host is refused", base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    hosts: [\"*.example.com\"]\n", "tls.acme.hosts[0]"},
		{"ACME with no host named anywhere is refused", anyHost + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n", "tls.acme.hosts: must name at least one host when no room names one"},
		{"an unknown key in tls is named", base + "tls:\n  certfile: c.pem\n", "tls.certfile: unknown key"},
		{"certificate files are taken", base + "tls:\n  cert_file: c.pem\n  key_file: k.pem\n  redirect_listen: \":80\"\n  https_port: 443\n", ""},
		{"ACME for the rooms' hosts is taken", base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    email: ops@example.com\n", ""},
		{"ACME for named hosts is taken", anyHost + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n    hosts: [shop.example.com]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) { edgetest.CheckParse(t, tc.yaml, tc.want) })
	}
	t.Run("ACME defaults to Let's Encrypt", func(t *testing.T) {
		c, err := config.Parse([]byte(base + "tls:\n  acme:\n    enabled: true\n    cache_dir: /tmp/x\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.TLS.ACME.DirectoryURL != config.DefaultACMEDirectory {
			t.Errorf("directory_url %q; want %q", c.TLS.ACME.DirectoryURL, config.DefaultACMEDirectory)
		}
	})
	t.Run("the flags set the tls block", func(t *testing.T) {
		c, err := config.Parse([]byte(base))
		if err != nil {
			t.Fatal(err)
		}
		given := map[string]bool{"acme": true, "acme-email": true, "acme-host": true, "acme-cache-dir": true, "acme-directory": true, "acme-directory-ca-file": true, "redirect-listen": true, "https-port": true}
		o := config.Overrides{TLSFlags: config.TLSFlags{ACME: true, ACMEEmail: "ops@example.com", ACMEHosts: []string{"www.example.com"},
			ACMECacheDir: "/tmp/acme", ACMEDirectory: "https://127.0.0.1:14000/dir", ACMEDirectoryCAFile: "/tmp/ca.pem", RedirectListen: ":80", HTTPSPort: 443},
			Set: func(f string) bool { return given[f] }}
		if err := o.Apply(c); err != nil {
			t.Fatal(err)
		}
		a := c.TLS.ACME
		if !a.Enabled || a.Email != "ops@example.com" || len(a.Hosts) != 1 || a.CacheDir != "/tmp/acme" || a.DirectoryURL != "https://127.0.0.1:14000/dir" ||
			a.DirectoryCAFile != "/tmp/ca.pem" || c.TLS.RedirectListen != ":80" || c.TLS.HTTPSPort != 443 {
			t.Errorf("tls block after the flags: %+v", c.TLS)
		}
	})
}

// TestHTTP2StalledClients holds the public listener's per-stage deadlines
// over HTTP/2, where one connection carries many requests: a request whose
// body stalls is ended within client_timeout's bound, while a steady one on
// the same kind of connection is served.
func TestHTTP2StalledClients(t *testing.T) {
	const host = "shop.waitroom.test"
	ca := agent.NewTestCA(t)
	certPath, keyPath := ca.WritePair(t, t.TempDir(), 1, host)
	org := edgetest.NewOrigin(t)
	cfg := edgetest.NodeConfig("limits", edgetest.KeyFile(t, t.TempDir()), org.URL, edgetest.Room("shop", 1000, 1000))
	cfg.ReadHeaderTimeout = config.Duration(clientTimeout)
	cfg.ClientTimeout = config.Duration(clientTimeout)
	cfg.TLS = config.TLSConfig{CertFile: certPath, KeyFile: keyPath}
	srv := edgetest.ServeNode(t, cfg, nil)

	for _, path := range []string{"/upload", "/page"} {
		// /upload's origin reads the body, /page's answers without.
		t.Run("a request body that stalls on its way to "+path+" is ended", func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() { _, _ = pw.Write([]byte("0123456789")) }() // then nothing more
			req, _ := http.NewRequest(http.MethodPost, "https://"+host+path, pr)
			req.ContentLength = 100000
			done := make(chan string, 1)
			go func() {
				resp, err := httpsClient(ca.Pool, srv.PublicAddr()).Do(req)
				if err != nil {
					done <- "error: " + err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				done <- fmt.Sprintf("%s %d %s", resp.Proto, resp.StatusCode, b)
			}()
			select {
			case got := <-done:
				if strings.Contains(got, "100000 bytes") {
					t.Errorf("the stalled body was read whole: %s", got)
				}
			case <-time.After(20 * clientTimeout):
				t.Fatalf("the request with a stalled body was still open after %v", 20*clientTimeout)
			}
		})
	}
	t.Run("an ordinary edgetest.Visitor over HTTP/2 is served meanwhile", func(t *testing.T) {
		resp, err := httpsClient(ca.Pool, srv.PublicAddr()).Get("https://" + host + "/page")
		if err != nil {
			t.Fatal(err)
		}
		if got := edgetest.Body(t, resp); resp.ProtoMajor != 2 || got != "origin: /page" {
			t.Errorf("%s %d %q", resp.Proto, resp.StatusCode, got)
		}
	})
}
