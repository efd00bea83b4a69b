package edge

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// BypassRule sends matching requests straight to the origin, uncounted: for
// health checks, staff and static assets. Every condition given in a rule
// must hold; any one rule that holds is enough.
//
// Path conditions are matched against the request's routing key (see
// canonicalise): its canonical path without ;parameters, the path the
// origin receives. So "/static/../shop/" is "/shop/" and does not match
// path_prefix "/static/", and "/shop/page;.css" is "/shop/page" and does
// not match path_suffix ".css".
type BypassRule struct {
	CIDR       string `yaml:"cidr" json:"cidr,omitempty"`               // client address in this range (the connection's address, not X-Forwarded-For)
	PathPrefix string `yaml:"path_prefix" json:"path_prefix,omitempty"` // canonical URL path starts with this, e.g. "/static/"
	PathSuffix string `yaml:"path_suffix" json:"path_suffix,omitempty"` // canonical URL path ends with this, e.g. ".css"
	Header     string `yaml:"header" json:"header,omitempty"`           // this request header is present...
	Value      string `yaml:"value" json:"value,omitempty"`             // ...with exactly this value, when given
	UserAgent  string `yaml:"user_agent" json:"user_agent,omitempty"`   // User-Agent contains this

	prefix netip.Prefix
	// pathPrefix and pathSuffix are PathPrefix and PathSuffix in the
	// canonical spelling the routing key has.
	pathPrefix, pathSuffix string
}

// compile checks the rule and readies it for matching.
func (b *BypassRule) compile() error {
	if field, err := b.compilePaths(); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return b.compileCIDR()
}

// compilePaths puts the path conditions in the canonical spelling the
// routing key has, or says which one has none.
func (b *BypassRule) compilePaths() (string, error) {
	if b.PathPrefix != "" {
		if err := checkPath(b.PathPrefix); err != nil {
			return "path_prefix", fmt.Errorf("%q %v", b.PathPrefix, err)
		}
		b.pathPrefix = routePath(b.PathPrefix)
	}
	if b.PathSuffix != "" {
		c, err := canonEscapes(b.PathSuffix)
		if err != nil {
			return "path_suffix", fmt.Errorf("%q has no single meaning: %v", b.PathSuffix, err)
		}
		if strings.IndexByte(c, ';') >= 0 {
			return "path_suffix", fmt.Errorf("%q must not contain \";\": paths are matched without their ;parameters", b.PathSuffix)
		}
		b.pathSuffix = c
	}
	return "", nil
}

func (b *BypassRule) compileCIDR() error {
	if b.CIDR == "" {
		return nil
	}
	p, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		a, aerr := netip.ParseAddr(b.CIDR)
		if aerr != nil {
			return fmt.Errorf("%q is not an address or a CIDR range (e.g. 10.0.0.0/8)", b.CIDR)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	b.prefix = p.Masked()
	return nil
}

func (b *BypassRule) empty() bool {
	return b.CIDR == "" && b.PathPrefix == "" && b.PathSuffix == "" && b.Header == "" && b.UserAgent == ""
}

// matches reports whether every condition of the rule holds for r, whose
// routing key is key.
func (b *BypassRule) matches(r *http.Request, key string) bool {
	if b.CIDR != "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !b.prefix.Contains(a.Unmap()) {
			return false
		}
	}
	if b.PathPrefix != "" && !strings.HasPrefix(key, b.pathPrefix) {
		return false
	}
	if b.PathSuffix != "" && !strings.HasSuffix(key, b.pathSuffix) {
		return false
	}
	if b.Header != "" {
		v, ok := r.Header[http.CanonicalHeaderKey(b.Header)]
		if !ok || (b.Value != "" && (len(v) == 0 || v[0] != b.Value)) {
			return false
		}
	}
	if b.UserAgent != "" && !strings.Contains(r.UserAgent(), b.UserAgent) {
		return false
	}
	return true
}

// validateBypass checks and compiles a room's bypass rules.
func (r *RoomConfig) validateBypass(p *problems) {
	for i := range r.Bypass {
		b := &r.Bypass[i]
		f := fmt.Sprintf("bypass[%d]", i)
		if b.empty() {
			p.add(f, "has no condition: give cidr, path_prefix, path_suffix, header or user_agent")
			continue
		}
		check := *b
		if field, err := check.compilePaths(); err != nil {
			p.add(f+"."+field, "%v", err)
		}
		if err := check.compileCIDR(); err != nil {
			p.add(f+".cidr", "%v", err)
		}
		if b.Value != "" && b.Header == "" {
			p.add(f+".value", "needs header")
		}
	}
}

// bypassed reports whether a request skips the room: any bypass rule
// holds. The request has been put in canonical form by route; a request
// that has none is never bypassed.
func (rm *room) bypassed(r *http.Request) bool {
	if len(rm.bypass) == 0 {
		return false
	}
	raw := r.URL.RawPath
	if raw == "" {
		raw = r.URL.EscapedPath()
	}
	p, err := normalisePath(raw)
	if err != nil {
		return false
	}
	key := routeKey(p)
	for i := range rm.bypass {
		if rm.bypass[i].matches(r, key) {
			return true
		}
	}
	return false
}
