package admin

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom/edge/canon"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/dashboard"
)

// gate guards the admin endpoint against callers other than its
// operator. A loopback listener without a token is reachable by every web
// page the operator's browser opens, so the token alone is not enough:
//
//   - the Host header must name this listener: "localhost", a loopback
//     address, the address the client connected to, the admin listener's
//     configured host or one of admin_hosts. A page on a domain that
//     resolves to 127.0.0.1 (DNS rebinding) sends its own domain and is
//     refused with 421. Ports are not compared: a browser always sends the
//     port it connects to, and tunnels (ssh -L, kubectl port-forward)
//     rightly change it.
//   - a request a browser marks as coming from another site (Sec-Fetch-Site
//     cross-site or same-site), or whose Origin is not this listener's own,
//     is refused with 403.
//   - a request that changes something must be Content-Type
//     application/json (415 otherwise): the types a cross-site form or a
//     no-cors fetch can send (text/plain, form encodings) never qualify,
//     and a browser asks before sending JSON to another origin, which this
//     endpoint never allows.
//   - with a token, requests need "Authorization: Bearer TOKEN" (read-only
//     ones not, with admin_read_open).
//
// The console's page and script (GET /dashboard, see edge/dashboard) pass
// the checks above but the token's: they hold no figures, and the page asks
// the operator for the token it needs for the event stream and the actions.
//
// GET /healthz and GET /readyz pass none of these checks: they answer only
// ok or not ok, for load balancers and probes that know neither the token
// nor a configured name.
type gate struct {
	names    map[string]bool // lower-case, without trailing dot or port
	token    []byte
	readOpen bool
	health   http.Handler
	next     http.Handler
}

func newGate(cfg *config.Config, token []byte, health, next http.Handler) *gate {
	g := &gate{names: map[string]bool{"localhost": true}, token: token, readOpen: cfg.AdminReadOpen, health: health, next: next}
	if h, _, err := net.SplitHostPort(cfg.Admin); err == nil && h != "" {
		g.names[hostName(h)] = true
	}
	for _, h := range cfg.AdminHosts {
		g.names[hostName(h)] = true
	}
	return g
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	readOnly := r.Method == http.MethodGet || r.Method == http.MethodHead
	if readOnly && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz") {
		g.health.ServeHTTP(w, r)
		return
	}
	if !g.hostAllowed(r) {
		writeError(w, http.StatusMisdirectedRequest, "the admin endpoint does not answer to host %q: use localhost, a loopback address or the listener's address, or add the name to admin_hosts", r.Host)
		return
	}
	if why := crossSite(r); why != "" {
		writeError(w, http.StatusForbidden, "the admin endpoint refuses requests from web pages of other sites (%s)", why)
		return
	}
	// The console's page and script hold no figures: a browser loads
	// them without the token, and the page then asks for it.
	if g.token != nil && !(readOnly && (g.readOpen || dashboard.IsPage(r.URL.Path))) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), g.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="waitroom admin"`)
			writeError(w, http.StatusUnauthorized, "this admin endpoint needs a bearer token (Authorization: Bearer ...)")
			return
		}
	}
	if !readOnly && !isJSON(r.Header.Get("Content-Type")) {
		writeError(w, http.StatusUnsupportedMediaType, "a change must be sent as Content-Type: application/json")
		return
	}
	g.next.ServeHTTP(w, r)
}

// hostAllowed reports whether r's Host names this listener.
func (g *gate) hostAllowed(r *http.Request) bool {
	h := hostName(r.Host)
	if h == "" {
		return false
	}
	if g.names[h] {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	// An address literal cannot be rebound: it is the address the client
	// connected to, which is fine when it is this connection's own.
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap().WithZone("") == ip.WithZone("") {
			return true
		}
	}
	return false
}

// hostName is a Host header's or a configured host's name without its
// port or brackets: the public side's host canonicaliser (canon.Host)
// with the port dropped, since the admin gate does not compare ports. A
// bare IPv6 address, which a Host header cannot carry but a configured
// address can, is taken as it is. "" means no valid name.
func hostName(h string) string {
	h = strings.TrimSpace(h)
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return a.String()
	}
	c, err := canon.Host(h)
	if err != nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(c); err == nil {
		c = host
	}
	return strings.TrimSuffix(strings.TrimPrefix(c, "["), "]")
}

// crossSite says why r comes from a page of another site, or "" when it
// does not: a browser's Sec-Fetch-Site, else its Origin compared with the
// Host the request was sent to. Clients that are not browsers send neither.
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "Sec-Fetch-Site: " + site
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !sameHostPort(u, r.Host) {
		return "Origin: " + origin
	}
	return ""
}

// sameHostPort reports whether origin u names host (a Host header), the
// scheme's default port filled in on both sides.
func sameHostPort(u *url.URL, host string) bool {
	def := "80"
	if u.Scheme == "https" {
		def = "443"
	}
	split := func(hp string) (string, string) {
		if h, p, err := net.SplitHostPort(hp); err == nil {
			return hostName(h), p
		}
		return hostName(hp), def
	}
	oh, op := split(u.Host)
	hh, hp := split(host)
	return oh == hh && op == hp
}

// isJSON reports whether a Content-Type is JSON: application/json or an
// application/...+json type, such as application/merge-patch+json.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
