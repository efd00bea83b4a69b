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
type BypassRule struct {
	CIDR       string `yaml:"cidr" json:"cidr,omitempty"`               // client address in this range (the connection's address, not X-Forwarded-For)
	PathPrefix string `yaml:"path_prefix" json:"path_prefix,omitempty"` // URL path starts with this
	PathSuffix string `yaml:"path_suffix" json:"path_suffix,omitempty"` // URL path ends with this, e.g. ".css"
	Header     string `yaml:"header" json:"header,omitempty"`           // this request header is present...
	Value      string `yaml:"value" json:"value,omitempty"`             // ...with exactly this value, when given
	UserAgent  string `yaml:"user_agent" json:"user_agent,omitempty"`   // User-Agent contains this

	prefix netip.Prefix
}

func (b *BypassRule) compile() error {
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

// matches reports whether every condition of the rule holds for r.
func (b *BypassRule) matches(r *http.Request) bool {
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
	if b.PathPrefix != "" && !strings.HasPrefix(r.URL.Path, b.PathPrefix) {
		return false
	}
	if b.PathSuffix != "" && !strings.HasSuffix(r.URL.Path, b.PathSuffix) {
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
		if err := check.compile(); err != nil {
			p.add(f+".cidr", "%v", err)
		}
		if b.Value != "" && b.Header == "" {
			p.add(f+".value", "needs header")
		}
	}
}
