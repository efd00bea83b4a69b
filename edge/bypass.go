package edge

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/waitroom/waitroom/edge/canon"
	"github.com/waitroom/waitroom/edge/clientaddr"
	"github.com/waitroom/waitroom/edge/config"
)

// bypassRule is a room's bypass rule with its conditions in the form a
// request is matched in (see config.BypassRule).
type bypassRule struct {
	config.BypassRule
	match config.BypassMatch
}

// matches reports whether every condition of the rule holds for r, whose
// routing key is key.
func (b *bypassRule) matches(r *http.Request, key string) bool {
	if b.CIDR != "" {
		a, err := netip.ParseAddr(clientaddr.Of(r))
		if err != nil || !b.match.Network.Contains(a.Unmap()) {
			return false
		}
	}
	if b.PathPrefix != "" && !strings.HasPrefix(key, b.match.PathPrefix) {
		return false
	}
	if b.PathSuffix != "" && !strings.HasSuffix(key, b.match.PathSuffix) {
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
	p, err := canon.Path(raw)
	if err != nil {
		return false
	}
	key := canon.Key(p)
	for i := range rm.bypass {
		if rm.bypass[i].matches(r, key) {
			return true
		}
	}
	return false
}
