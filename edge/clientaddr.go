package edge

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The visitor's address. Bypass rules by network, the priority-code guard,
// the challenge's verifier and the logs all take it from clientIP, and
// nowhere else.
//
// In proxy mode it is the connection's peer. In forward-auth mode the
// endpoint rebuilds the visitor's request with the address the proxy names
// in X-Forwarded-For (forwardedClient): each proxy appends the address it
// received the request from, so the entries at the right were written by
// proxies the node trusts (forward_auth.trusted_proxies) and everything to
// the left of the first address it does not trust may be the visitor's own
// invention. That first untrusted entry, counted from the right, is the
// client.

// clientIP is the address of the client that sent r, as the node believes
// it: no port, "" when unknown.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// forwardedClient is the right-most X-Forwarded-For entry that is not one
// of the trusted proxies' addresses; when every entry is trusted, the
// left-most (the request came from inside, through them all). It is ""
// when the header is missing or an entry it would have to pass does not
// parse: an address that cannot be read is never skipped over to one the
// visitor wrote.
func forwardedClient(xff []string, trusted []netip.Prefix) string {
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
		if !trustedAddr(a, trusted) {
			break
		}
	}
	return client
}

// trustedAddr reports whether a lies in one of the prefixes.
func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
