package edge_test

// The Traefik and Envoy configurations shipped in docs/deploy/forward-auth
// are read here and the forward-auth endpoint driven the way each proxy
// does, as its documentation describes, with what the file configures: the
// address and path it asks, the visitor's headers it passes, and the
// answer's headers it lets reach the visitor. Envoy cannot be installed
// here; Traefik runs for real in traefik_test.go when it has been built,
// and nginx and Caddy in proxies_test.go.

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// shippedYAML reads a YAML file of docs/deploy/forward-auth.
func shippedYAML(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "deploy", "forward-auth", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// dig follows keys (map keys, or list indexes as ints) into a YAML value.
func dig(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping at %q", keys, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d", keys, k)
			}
			v = l[k]
		}
	}
	return v
}

// strs reads a YAML list of strings, or of {exact: name} matchers, lower-cased.
func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	if m, ok := v.(map[string]any); ok {
		list, _ = m["patterns"].([]any)
	}
	for _, e := range list {
		switch e := e.(type) {
		case string:
			out = append(out, strings.ToLower(e))
		case map[string]any:
			if s, ok := e["exact"].(string); ok {
				out = append(out, strings.ToLower(s))
			}
		}
	}
	return out
}

func TestShippedTraefikConfig(t *testing.T) {
	fa := dig(t, shippedYAML(t, "traefik.yaml"), "http", "middlewares", "waitroom", "forwardAuth")
	addr, err := url.Parse(dig(t, fa, "address").(string))
	if err != nil || addr.Path != "/auth" {
		t.Fatalf("address %v: want the endpoint's /auth", dig(t, fa, "address"))
	}
	if dig(t, fa, "trustForwardHeader") != false {
		t.Error("trustForwardHeader must be false: a visitor's own X-Forwarded-Uri would choose what is decided")
	}
	cookies := strs(dig(t, fa, "addAuthCookiesToResponse"))
	if _, ok := dig(t, fa, "authRequestHeaders").([]any); ok {
		t.Error("authRequestHeaders would keep the visitor's Cookie and Accept from the node")
	}

	// Traefik asks with the visitor's headers and X-Forwarded-Method,
	// -Proto, -Host, -Uri and -For; a 2xx lets the request through with
	// the cookies named in addAuthCookiesToResponse, anything else goes to
	// the visitor whole.
	f := newFixtureWith(t, forwardOn, room("shop", 1, 1))
	ask := func(v *visitor) *http.Response {
		r := v.Req(http.MethodGet, "http://"+addr.Host+addr.Path)
		r.RemoteAddr = trustedProxyAddr
		for k, val := range map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example.com", "X-Forwarded-Uri": "/cart?item=3", "X-Forwarded-For": "198.51.100.7"} {
			r.Header.Set(k, val)
		}
		return v.Do(f.Server.ForwardAuthHandler(), r)
	}
	t.Run("an admitted visitor's cookie is one Traefik passes on", func(t *testing.T) {
		resp := ask(newVisitor())
		if resp.StatusCode/100 != 2 {
			t.Fatalf("status %d, want 2xx", resp.StatusCode)
		}
		for _, c := range resp.Cookies() {
			if !slices.Contains(cookies, strings.ToLower(c.Name)) {
				t.Errorf("the node sets %s, which addAuthCookiesToResponse %v does not pass on", c.Name, cookies)
			}
		}
		if len(resp.Cookies()) == 0 {
			t.Error("no cookie set")
		}
	})
	t.Run("a queued visitor gets a non-2xx answer with its page, Refresh and cookie", func(t *testing.T) {
		resp := ask(newVisitor())
		if resp.StatusCode/100 == 2 || resp.Header.Get("Refresh") == "" || len(resp.Cookies()) == 0 {
			t.Fatalf("status %d, Refresh %q, %d cookies", resp.StatusCode, resp.Header.Get("Refresh"), len(resp.Cookies()))
		}
	})
}

func TestShippedEnvoyConfig(t *testing.T) {
	doc := shippedYAML(t, "envoy.yaml")
	hcm := dig(t, doc, "static_resources", "listeners", 0, "filter_chains", 0, "filters", 0, "typed_config")
	if dig(t, hcm, "use_remote_address") != true || dig(t, hcm, "xff_num_trusted_hops") != 0 {
		t.Error("use_remote_address must be true and xff_num_trusted_hops 0: Envoy would pass on the visitor's own X-Forwarded-For, and the node take a forged address for the client")
	}
	authz := dig(t, hcm, "http_filters", 0)
	if dig(t, authz, "name") != "envoy.filters.http.ext_authz" {
		t.Fatalf("the first HTTP filter is %v, want ext_authz", dig(t, authz, "name"))
	}
	cfg := dig(t, authz, "typed_config")
	if dig(t, cfg, "failure_mode_allow") != false {
		t.Error("failure_mode_allow must be false: a node that cannot be asked would let everyone in")
	}
	svc := dig(t, cfg, "http_service")
	prefix := dig(t, svc, "path_prefix").(string)
	if prefix != "/envoy" {
		t.Fatalf("path_prefix %q, want the endpoint's /envoy", prefix)
	}
	passed := strs(dig(t, cfg, "allowed_headers"))
	toClient := strs(dig(t, svc, "authorization_response", "allowed_client_headers"))
	onSuccess := strs(dig(t, svc, "authorization_response", "allowed_client_headers_on_success"))
	cluster := dig(t, svc, "server_uri", "cluster")
	found := false
	for _, c := range dig(t, doc, "static_resources", "clusters").([]any) {
		found = found || dig(t, c, "name") == cluster
	}
	if !found {
		t.Errorf("server_uri names cluster %v, which is not defined", cluster)
	}

	// Envoy asks with its own method and Host, the prefix followed by the
	// visitor's path and query, and of the visitor's headers only those
	// allowed (besides Host, method, path, Content-Length and
	// Authorization); a 200 lets the request through with the headers
	// allowed on success, anything else goes to the visitor with the
	// headers allowed to the client.
	f := newFixtureWith(t, forwardOn, room("shop", 1, 1))
	ask := func(v *visitor, hdr ...string) *http.Response {
		full := v.Req(http.MethodGet, "http://shop.example.com/cart?item=3", hdr...)
		full.Header.Set("X-Forwarded-Proto", "https")
		r := httptest.NewRequest(http.MethodGet, "http://shop.example.com"+prefix+"/cart?item=3", nil)
		r.RequestURI = prefix + "/cart?item=3"
		r.RemoteAddr = trustedProxyAddr
		for k, vs := range full.Header {
			if slices.Contains(passed, strings.ToLower(k)) || strings.EqualFold(k, "Authorization") {
				r.Header[k] = vs
			}
		}
		rec := httptest.NewRecorder()
		f.Server.ForwardAuthHandler().ServeHTTP(rec, r)
		resp := rec.Result()
		allowed := toClient
		if resp.StatusCode == http.StatusOK {
			allowed = onSuccess
		}
		for k := range resp.Header {
			if !slices.Contains(allowed, strings.ToLower(k)) {
				resp.Header.Del(k) // Envoy does not pass it on
			}
		}
		resp.Request = full
		v.Do(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for k, vs := range resp.Header {
				w.Header()[k] = vs
			}
			w.WriteHeader(resp.StatusCode)
		}), full)
		return resp
	}
	t.Run("an admitted visitor keeps its cookie and its session through Envoy", func(t *testing.T) {
		v := newVisitor()
		if resp := ask(v); resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
			t.Fatalf("status %d with %d cookies, want 200 with the cookie", resp.StatusCode, len(resp.Cookies()))
		}
		if resp := ask(v); resp.StatusCode != http.StatusOK {
			t.Fatalf("the visitor's next request: status %d, want 200", resp.StatusCode)
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.NewUsersThisMinute != 1 {
			t.Errorf("%d new users, want 1: the cookie did not make it back", rs.NewUsersThisMinute)
		}
	})
	t.Run("a queued visitor gets the queue page with its Refresh, cookie and type", func(t *testing.T) {
		resp := ask(newVisitor())
		if resp.StatusCode == http.StatusOK || resp.Header.Get("Refresh") == "" || len(resp.Cookies()) == 0 || resp.Header.Get("Content-Type") == "" {
			t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
		}
	})
	t.Run("an app's JSON request reaches the node as such", func(t *testing.T) {
		if !slices.Contains(passed, "accept") || !slices.Contains(passed, "cookie") || !slices.Contains(passed, "x-forwarded-proto") {
			t.Errorf("allowed_headers %v must pass cookie, accept and x-forwarded-proto", passed)
		}
	})
}

// TestREADMECaddyfileIsTheShippedOne holds the Caddyfile quoted in the
// README's "Behind your proxy" to the tested one in docs/deploy/forward-auth,
// comments and blank lines aside.
func TestREADMECaddyfileIsTheShippedOne(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```caddyfile\n")
	if !ok {
		t.Fatal("README.md quotes no Caddyfile")
	}
	block, _, _ = strings.Cut(block, "```")
	shipped, err := os.ReadFile(filepath.Join("..", "docs", "deploy", "forward-auth", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	bare := func(s string) []string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, "#"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
		return out
	}
	if got, want := bare(block), bare(string(shipped)); !slices.Equal(got, want) {
		t.Errorf("README's Caddyfile:\n%s\nthe shipped one:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
