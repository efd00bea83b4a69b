package edge_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// rawGet sends one GET with the request target and Host exactly as given
// (no client library cleans or escapes them) to addr, and returns the
// answer and its body.
func rawGet(t *testing.T, addr, target, host string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", target, host, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// protectedSite is a file-server origin: the shop's pages are what the room
// protects, the stylesheet and the home page are not.
func protectedSite(t *testing.T) http.Handler {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"shop/index.html":  "PROTECTED shop",
		"shop/secret.html": "PROTECTED secret",
		"static/x.css":     "body{color:red}",
		"index.html":       "public home",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return http.FileServer(http.Dir(dir))
}

// servesProtected reports whether a file server would answer uri (as the
// origin received it) with a protected file.
func servesProtected(uri string) bool {
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return false
	}
	switch path.Clean("/" + u.Path) {
	case "/shop", "/shop/index.html", "/shop/secret.html":
		return true
	}
	return false
}

// TestRoutingCannotBeDodged sends every spelling of a protected address we
// know of to a room that queues everyone, in front of a file server: none
// reaches the protected files, while the bypassed stylesheet still does and
// the origin receives the canonical path.
func TestRoutingCannotBeDodged(t *testing.T) {
	const (
		queued   = "queued"   // the queue page
		refused  = "refused"  // 400: no single meaning
		unrouted = "unrouted" // no room: 404 with refuse, the origin with pass
	)
	attacks := []struct {
		name, target, host, want string
	}{
		{"a doubled slash is the shop", "//shop/", "", queued},
		{"a dot segment is the shop", "/./shop/", "", queued},
		{"a climb back is the shop", "/x/../shop/", "", queued},
		{"encoded dots are the shop", "/%2e%2e/shop/", "", queued},
		{"half-encoded dots are the shop", "/.%2e/shop/", "", queued},
		{"a climb out of the bypassed path is the shop", "/static/../shop/secret.html", "", queued},
		{"an encoded climb out of the bypassed path is the shop", "/static/%2E%2E/shop/secret.html", "", queued},
		{"a climb with path parameters is the shop", "/static/..;/shop/secret.html", "", queued},
		{"a climb after an empty segment is the shop", "/static//../shop/secret.html", "", queued},
		{"an encoded letter is the shop", "/%73hop/secret.html", "", queued},
		{"path parameters on the shop are the shop", "/shop;x=1/secret.html", "", queued},
		{"a suffix hidden in path parameters is not a stylesheet", "/shop/secret.html;.css", "", queued},
		{"the shop without its slash is the shop", "/shop", "", queued},
		{"an encoded slash is refused", "/shop%2F..%2F", "", refused},
		{"an encoded slash out of the bypassed path is refused", "/static/..%2Fshop/secret.html", "", refused},
		{"encoded slashes throughout are refused", "/static%2F..%2Fshop%2Fsecret.html", "", refused},
		{"backslashes are refused", `/static\..\shop\secret.html`, "", refused},
		{"an encoded backslash is refused", "/static/..%5cshop/secret.html", "", refused},
		{"double-encoded dots are refused", "/static/%252e%252e/shop/secret.html", "", refused},
		{"an encoded NUL is refused", "/static/x.css%00/../../shop/secret.html", "", refused},
		{"the host with a trailing dot is the shop's", "/shop/secret.html", "vip.example.com.", queued},
		{"the host in capitals is the shop's", "/shop/secret.html", "VIP.EXAMPLE.COM", queued},
		{"the host with a port is the shop's", "/shop/secret.html", "vip.example.com:8080", queued},
		{"the host with a trailing dot and a port is the shop's", "/shop/secret.html", "Vip.Example.Com.:80", queued},
		// An absolute request target names the host itself; it is routed
		// by that host, canonical like any other.
		{"an absolute target with a dotted host is the shop's", "http://VIP.example.com.//shop/secret.html", "other.example.com", queued},
		{"an absolute target with a climb is the shop's", "http://vip.example.com/static/../shop/secret.html", "vip.example.com", queued},
		{"a host with two trailing dots is refused", "/shop/secret.html", "vip.example.com..", refused},
		{"a host with an escape is refused", "/shop/secret.html", "vip%2eexample.com", refused},
		// Paths are case-sensitive: another case is another address, which
		// no room routes (and a case-sensitive origin does not have).
		{"the shop in capitals is not routed", "/SHOP/secret.html", "", unrouted},
		// An encoded ';' is part of a name: the stylesheet rule holds, and
		// the origin looks for a file of that name.
		{"an encoded semicolon names another file", "/shop/secret.html%3B.css", "", "bypassed"},
	}
	legit := []struct{ name, target, wantURI string }{
		{"the stylesheet is bypassed", "/static/x.css", "/static/x.css"},
		{"the stylesheet with a dot segment reaches the origin without it", "/static/./x.css", "/static/x.css"},
		{"the stylesheet with doubled slashes reaches the origin without them", "//static//x.css", "/static/x.css"},
		{"the stylesheet with an encoded letter reaches the origin decoded", "/%73tatic/x.css", "/static/x.css"},
	}
	for _, mode := range []string{config.UnroutedRefuse, config.UnroutedPass} {
		t.Run("with unrouted "+mode, func(t *testing.T) {
			o := edgetest.NewOrigin(t, edgetest.Serving(protectedSite(t)))
			rc := room("shop", 100, 100)
			rc.Host, rc.Path, rc.QueueAll = "vip.example.com", "/shop/", true
			rc.AdditionalRoutes = []config.Route{{Path: "/static/"}}
			rc.Bypass = []config.BypassRule{{PathPrefix: "/static/"}, {PathSuffix: ".css"}}
			cfg := nodeConfig("node-a", keyFile(t, t.TempDir()), o.URL, rc)
			cfg.Unrouted = mode
			srv := startServer(t, cfg, newFakeClock(5))
			front := httptest.NewServer(srv)
			t.Cleanup(front.Close)
			addr := front.Listener.Addr().String()

			nRefused, nUnrouted := 0, 0
			for _, tt := range attacks {
				t.Run(tt.name, func(t *testing.T) {
					host := tt.host
					if host == "" {
						host = "vip.example.com"
					}
					before := o.Hits()
					resp, b := rawGet(t, addr, tt.target, host)
					if strings.Contains(b, "PROTECTED") {
						t.Fatalf("GET %s (Host %s) reached the protected content: %d %q", tt.target, host, resp.StatusCode, b)
					}
					switch tt.want {
					case queued:
						if resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") == "" || o.Hits() != before {
							t.Errorf("GET %s (Host %s): %d, Refresh %q, origin hits +%d; want the queue page", tt.target, host, resp.StatusCode, resp.Header.Get("Refresh"), o.Hits()-before)
						}
					case refused:
						nRefused++
						if resp.StatusCode != http.StatusBadRequest || o.Hits() != before {
							t.Errorf("GET %s (Host %s): %d, origin hits +%d; want 400 and nothing sent to the origin", tt.target, host, resp.StatusCode, o.Hits()-before)
						}
					case unrouted:
						if mode == config.UnroutedPass {
							if o.Hits() != before+1 || resp.StatusCode != http.StatusNotFound {
								t.Errorf("GET %s with unrouted pass: %d, origin hits +%d; want the origin's own 404", tt.target, resp.StatusCode, o.Hits()-before)
							}
							break
						}
						nUnrouted++
						if resp.StatusCode != http.StatusNotFound || o.Hits() != before {
							t.Errorf("GET %s: %d, origin hits +%d; want 404 from waitroom", tt.target, resp.StatusCode, o.Hits()-before)
						}
					default: // bypassed to a file that does not exist
						if resp.StatusCode != http.StatusNotFound || o.Hits() != before+1 || resp.Header.Get("Refresh") != "" {
							t.Errorf("GET %s: %d, origin hits +%d; want the origin's 404", tt.target, resp.StatusCode, o.Hits()-before)
						}
					}
				})
			}
			t.Run("the origin was never asked for a protected file", func(t *testing.T) {
				for _, uri := range o.URIs() {
					if servesProtected(uri) {
						t.Errorf("the origin received %q", uri)
					}
				}
			})
			t.Run("refusals and unrouted requests are counted", func(t *testing.T) {
				admin := srv.AdminHandler()
				got := metric(t, admin, `waitroom_malformed_requests_total{reason="path"}`) + metric(t, admin, `waitroom_malformed_requests_total{reason="host"}`)
				if int(got) != nRefused {
					t.Errorf("malformed_requests_total = %v, want %d", got, nRefused)
				}
				if got := metric(t, admin, "waitroom_unrouted_requests_total"); int(got) != nUnrouted {
					t.Errorf("unrouted_requests_total = %v, want %d", got, nUnrouted)
				}
			})
			for _, tt := range legit {
				t.Run(tt.name, func(t *testing.T) {
					resp, b := rawGet(t, addr, tt.target, "vip.example.com")
					if resp.StatusCode != http.StatusOK || b != "body{color:red}" || len(resp.Cookies()) != 0 {
						t.Fatalf("GET %s: %d %q, cookies %v; want the stylesheet, uncounted", tt.target, resp.StatusCode, b, resp.Cookies())
					}
					if uris := o.URIs(); uris[len(uris)-1] != tt.wantURI {
						t.Errorf("the origin received %q, want %q", uris[len(uris)-1], tt.wantURI)
					}
				})
			}
			t.Run("the shop itself is queued", func(t *testing.T) {
				resp, b := rawGet(t, addr, "/shop/", "vip.example.com")
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") == "" || strings.Contains(b, "PROTECTED") {
					t.Errorf("GET /shop/: %d, Refresh %q; want the queue page", resp.StatusCode, resp.Header.Get("Refresh"))
				}
			})
			t.Run("another host is "+map[string]string{config.UnroutedRefuse: "refused", config.UnroutedPass: "passed to the origin, as configured"}[mode], func(t *testing.T) {
				before := o.Hits()
				resp, b := rawGet(t, addr, "/shop/secret.html", "other.example.com")
				if mode == config.UnroutedRefuse {
					if resp.StatusCode != http.StatusNotFound || o.Hits() != before || strings.Contains(b, "PROTECTED") {
						t.Errorf("another host: %d, origin hits +%d; want 404 from waitroom", resp.StatusCode, o.Hits()-before)
					}
					return
				}
				// The risk unrouted: pass names: an origin that does not
				// look at the host serves it.
				if resp.StatusCode != http.StatusOK || o.Hits() != before+1 {
					t.Errorf("another host with unrouted pass: %d, origin hits +%d; want proxied", resp.StatusCode, o.Hits()-before)
				}
			})
		})
	}
}
