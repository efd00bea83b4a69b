package config

// A room's bypass rules: what each may say, and the form its conditions are
// matched in. Matching a request against them is the request path's.

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/waitroom/waitroom/edge/canon"
)

// BypassRule sends matching requests straight to the origin, uncounted: for
// health checks, staff and static assets. Every condition given in a rule
// must hold; any one rule that holds is enough.
//
// Path conditions are matched against the request's routing key (see
// canon.Key): its canonical path without ;parameters, the path the origin
// receives. So "/static/../shop/" is "/shop/" and does not match
// path_prefix "/static/", and "/shop/page;.css" is "/shop/page" and does
// not match path_suffix ".css".
type BypassRule struct {
	CIDR       string `yaml:"cidr" json:"cidr,omitempty"`               // client address in this range (the connection's address, not X-Forwarded-For)
	PathPrefix string `yaml:"path_prefix" json:"path_prefix,omitempty"` // canonical URL path starts with this, e.g. "/static/"
	PathSuffix string `yaml:"path_suffix" json:"path_suffix,omitempty"` // canonical URL path ends with this, e.g. ".css"
	Header     string `yaml:"header" json:"header,omitempty"`           // this request header is present...
	Value      string `yaml:"value" json:"value,omitempty"`             // ...with exactly this value, when given
	UserAgent  string `yaml:"user_agent" json:"user_agent,omitempty"`   // User-Agent contains this
}

// BypassMatch is a bypass rule's address and path conditions in the form a
// request is matched in.
type BypassMatch struct {
	// Network is the cidr condition's range, masked; a single address is a
	// range of one. Zero when the rule has no cidr.
	Network netip.Prefix
	// PathPrefix and PathSuffix are the rule's path conditions in the
	// canonical spelling the routing key has.
	PathPrefix, PathSuffix string
}

// Compile checks the rule and returns its conditions in the form a request
// is matched in. An error about a path condition names its field.
func (b *BypassRule) Compile() (BypassMatch, error) {
	var m BypassMatch
	if field, err := b.compilePaths(&m); err != nil {
		return m, fmt.Errorf("%s: %w", field, err)
	}
	return m, b.compileCIDR(&m)
}

// compilePaths puts the path conditions in the canonical spelling the
// routing key has, or says which one has none.
func (b *BypassRule) compilePaths(m *BypassMatch) (string, error) {
	if b.PathPrefix != "" {
		if err := checkPath(b.PathPrefix); err != nil {
			return "path_prefix", fmt.Errorf("%q %v", b.PathPrefix, err)
		}
		m.PathPrefix = canon.RoutePath(b.PathPrefix)
	}
	if b.PathSuffix != "" {
		c, err := canon.Escapes(b.PathSuffix)
		if err != nil {
			return "path_suffix", fmt.Errorf("%q has no single meaning: %v", b.PathSuffix, err)
		}
		if strings.IndexByte(c, ';') >= 0 {
			return "path_suffix", fmt.Errorf("%q must not contain \";\": paths are matched without their ;parameters", b.PathSuffix)
		}
		m.PathSuffix = c
	}
	return "", nil
}

func (b *BypassRule) compileCIDR(m *BypassMatch) error {
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
	m.Network = p.Masked()
	return nil
}

func (b *BypassRule) empty() bool {
	return b.CIDR == "" && b.PathPrefix == "" && b.PathSuffix == "" && b.Header == "" && b.UserAgent == ""
}

// validateBypass checks a room's bypass rules.
func (r *Room) validateBypass(p *problems) {
	for i := range r.Bypass {
		b := &r.Bypass[i]
		f := fmt.Sprintf("bypass[%d]", i)
		if b.empty() {
			p.add(f, "has no condition: give cidr, path_prefix, path_suffix, header or user_agent")
			continue
		}
		var m BypassMatch
		if field, err := b.compilePaths(&m); err != nil {
			p.add(f+"."+field, "%v", err)
		}
		if err := b.compileCIDR(&m); err != nil {
			p.add(f+".cidr", "%v", err)
		}
		if b.Value != "" && b.Header == "" {
			p.add(f+".value", "needs header")
		}
	}
}
