package edge

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/canon"
	"github.com/waitroom/waitroom/edge/queuepage"
)

// Routing sees a request the way the origin will: canonicalise puts its
// path and host in the one canonical spelling of package canon before any
// route or bypass rule is matched, and the request the proxy sends carries
// that spelling, so the origin receives exactly the path that was routed.

// canonicalise puts r's path and Host in their canonical spelling, in
// place, so that bypass rules, the pages and the proxy all see (and the
// origin receives) what routing saw. It returns the routing key, or the
// reason the request has no single meaning; then r is left as it was.
func canonicalise(r *http.Request) (string, error) {
	if r.URL.Opaque != "" {
		return "", canon.ErrPathNotAbsolute
	}
	raw := r.URL.RawPath
	if raw == "" {
		raw = r.URL.EscapedPath()
	}
	p, err := canon.Path(raw)
	if err != nil {
		return "", err
	}
	host, err := canon.Host(r.Host)
	if err != nil {
		return "", err
	}
	if p != raw {
		dec, err := url.PathUnescape(p)
		if err != nil {
			// canon.Path leaves only well-formed escapes.
			return "", canon.ErrPathBadEscape
		}
		r.URL.Path, r.URL.RawPath = dec, p
		if r.URL.EscapedPath() != p {
			return "", canon.ErrPathBadEscape // never: p is a valid encoding of dec
		}
		if r.RequestURI != "" {
			r.RequestURI = r.URL.RequestURI()
		}
	}
	r.Host = host
	return canon.Key(p), nil
}

// routeMatches reports whether a routing key lies within a route's path:
// below it, or the path itself without its final "/" ("/shop" is in
// "/shop/": most origins answer both alike).
func routeMatches(key, path string) bool {
	return strings.HasPrefix(key, path) || (len(path) > 1 && path[len(path)-1] == '/' && key == path[:len(path)-1])
}

// unrouted answers the requests that match no room: a refusal (400) for a
// request whose path or host has no single meaning, then, as the operator
// configured with unrouted, a 404 page or the default origin.
type unrouted struct {
	s    *Server
	pass http.Handler // the default origin's proxy with unrouted: pass, else nil
}

func (u *unrouted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := canonicalise(r); err != nil {
		refuseMalformed(u.s, w, err)
		return
	}
	if u.pass != nil {
		u.s.metrics.unroutedPassed.Inc()
		decided(w, nil, accesslog.Unrouted, 0)
		u.pass.ServeHTTP(w, r)
		return
	}
	u.s.metrics.unrouted.Inc()
	decided(w, nil, accesslog.Unrouted, 0)
	queuepage.WriteStatus(w, http.StatusNotFound, "No waiting room here", "This address is not protected by any waiting room on this node.")
}

// refuseMalformed answers 400 to a request whose path or host has no
// single meaning, and counts it by reason.
func refuseMalformed(s *Server, w http.ResponseWriter, err error) {
	reason := "path"
	if errors.Is(err, canon.ErrHostBad) {
		reason = "host"
	}
	s.metrics.malformed.WithLabelValues(reason).Inc()
	decided(w, nil, accesslog.Refused, 0)
	s.log.Debug().Err(err).Msg("request refused: ambiguous path or host")
	queuepage.WriteStatus(w, http.StatusBadRequest, "Bad address", "This address has no single meaning ("+err.Error()+"), so it is refused.")
}
