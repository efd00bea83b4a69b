package config

// The forward-auth settings: their schema, defaults and checks, kept together
// in this file (see edge/forward.go for the endpoint they configure).

import (
	"fmt"
	"net/netip"
)

// ForwardAuthConfig turns on forward-auth mode: a decision endpoint that a
// reverse proxy the operator already runs (nginx auth_request, Caddy
// forward_auth, Traefik forwardAuth, Envoy ext_authz) asks about each
// request, instead of waitroom proxying the request itself. The endpoint
// trusts the headers that say which request it decides on (method, host,
// address, scheme), so it has a listener of its own that visitors never
// reach, and answers only the addresses listed in TrustedProxies.
//
// Rules checked by Validate:
//
//   - listen: empty (off, the default) or host:port as for listen; it must
//     not overlap listen, admin or gossip.
//   - trusted_proxies: addresses (192.0.2.7) or prefixes (10.0.0.0/8) of the
//     proxies that ask, and of the origins that call the revoke endpoint.
//     Default: loopback only (127.0.0.0/8 and ::1). Required when listen is
//     not on a loopback address, so that opening the listener to a network
//     is always a choice of who may use it.
//
// With forward_auth on, a room needs no origin: a room without one is
// served only through the endpoint, and a node none of whose rooms has an
// origin opens no public listener.
type ForwardAuthConfig struct {
	Listen         string   `yaml:"listen" json:"listen,omitempty"`
	TrustedProxies []string `yaml:"trusted_proxies" json:"trusted_proxies,omitempty"`
}

// On reports whether forward-auth mode is configured.
func (f *ForwardAuthConfig) On() bool { return f.Listen != "" }

// defaultTrustedProxies are the addresses the endpoint answers when none
// are configured: this machine only.
var defaultTrustedProxies = []string{"127.0.0.0/8", "::1/128"}

// TrustedPrefixes parses TrustedProxies (or the default) into prefixes; a
// bare address is a prefix of its full length.
func (f *ForwardAuthConfig) TrustedPrefixes() ([]netip.Prefix, error) {
	list := f.TrustedProxies
	if len(list) == 0 {
		list = defaultTrustedProxies
	}
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := parseTrusted(s)
		if err != nil {
			return nil, fmt.Errorf("forward_auth.trusted_proxies[%d]: %q %w", i, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseTrusted(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("must be an IP address (192.0.2.7) or prefix (10.0.0.0/8)")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// validateForwardAuth checks the forward_auth block (see
// [ForwardAuthConfig]).
func (c *Config) validateForwardAuth(p *problems) {
	f := &c.ForwardAuth
	if !f.On() {
		if len(f.TrustedProxies) > 0 {
			p.add("forward_auth.trusted_proxies", "is set but forward_auth.listen is not: set listen (such as \"127.0.0.1:9091\") to turn forward-auth on")
		}
		return
	}
	// The address itself, and that it overlaps no other listener, is
	// checked with the others (validateListeners).
	host, _, err := splitListen(f.Listen, false)
	if err != nil {
		return
	}
	if !IsLoopbackHost(host) && len(f.TrustedProxies) == 0 {
		p.add("forward_auth.trusted_proxies", "is required when forward_auth.listen (%q) is not a loopback address: list the addresses or prefixes of the proxies that ask (and of origins that revoke), such as [\"10.0.0.0/8\"]", f.Listen)
	}
	if _, err := f.TrustedPrefixes(); err != nil {
		p.errs = append(p.errs, err)
	}
}
