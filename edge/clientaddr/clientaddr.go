// Package clientaddr reads the visitor's address from a request. Bypass
// rules by network, the priority-code guard, the challenge's verifier, the
// forward-auth endpoint and the logs all take it from here, and nowhere
// else.
//
// In proxy mode it is the connection's peer (Of). In forward-auth mode the
// endpoint rebuilds the visitor's request with the address the proxy names
// in X-Forwarded-For (Forwarded): each proxy appends the address it
// received the request from, so the entries at the right were written by
// proxies the node trusts (forward_auth.trusted_proxies) and everything to
// the left of the first address it does not trust may be the visitor's own
// invention. That first untrusted entry, counted from the right, is the
// client.
//
// It is pure: a request's fields and the trusted prefixes in, an address
// out.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address of the client that sent r, as the node believes it:
// no port, "" when unknown.
func Of(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// PeerTrusted reports whether r comes straight from an address in one of
// the trusted prefixes (its connection's peer, not what a header claims).
func PeerTrusted(r *http.Request, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(Of(r))
	if err != nil {
		return false
	}
	return Trusted(a.Unmap(), trusted)
}

// Forwarded is the right-most X-Forwarded-For entry that is not one of the
// trusted proxies' addresses; when every entry is trusted, the left-most
// (the request came from inside, through them all). It is "" when the
// header is missing or an entry it would have to pass does not parse: an
// address that cannot be read is never skipped over to one the visitor
// wrote.
func Forwarded(xff []string, trusted []netip.Prefix) string {
	var hops []string
	for _, v := range xff {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := ""
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return ""
		}
		a = a.Unmap()
		client = a.String()
		if !Trusted(a, trusted) {
			break
		}
	}
	return client
}

// Trusted reports whether a lies in one of the prefixes.
func Trusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
