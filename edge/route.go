package edge

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Routing sees a request the way the origin will: its path and host are
// put in one canonical spelling before any route or bypass rule is matched,
// and the request the proxy sends carries that spelling, so the origin
// receives exactly the path that was routed. Without this, "//shop/",
// "/static/../shop/", "/%2e%2e/shop/" or the host "shop.example.com." would
// match no route (or a bypass rule) here and still name the protected page
// at an origin that cleans its paths, as nearly every web server does.
//
// The canonical path (normalisePath):
//
//   - escapes of unreserved characters (A–Z a–z 0–9 - . _ ~) are decoded, as
//     RFC 3986 says they are equivalent ("%2e" is ".", "%73" is "s"); every
//     other escape is kept, with upper-case hex digits;
//   - bytes that may not stand in a path as they are (space, '"', '<', '>',
//     '[', ']', '^', '`', '{', '|', '}', '?', '#', bytes above 0x7e) are
//     escaped;
//   - "." and ".." segments are resolved (".." never climbs above "/"), and
//     empty segments (repeated slashes) are dropped; a segment counts as a
//     dot segment whatever path parameters it carries ("..;x" is ".."), as
//     servlet containers read it;
//   - a path ends in "/" when it did, or when its last segment was resolved
//     away ("/shop/." is "/shop/").
//
// Spellings that mean different paths to different origins are refused
// (400, counted) rather than guessed: an encoded slash or backslash ("%2F",
// "%5C") and a literal backslash (a separator to some servers, a file name
// character to others), an encoded '%' followed by two hex digits ("%252e",
// a dot to an origin that decodes twice), control characters (also
// encoded), malformed escapes, and a path that does not start with "/".
//
// Routes and bypass rules are matched against the routing key (routeKey):
// the canonical path without path parameters (";..." within a segment), so
// "/shop;jsessionid=1/x" is matched as "/shop/x", as a servlet container
// would serve it. The origin still receives the parameters.
//
// Paths are case-sensitive, as on nearly every origin.
//
// The canonical host (normaliseHost) is lower-case, without the trailing
// dot of a fully qualified name, with its port (if any) as a plain decimal
// number, and an IPv6 literal in its shortest form in brackets. A host of
// other characters than letters, digits, '-', '_' and '.', or with empty
// labels, is refused.

// Reasons a request is refused before routing; each is a label of
// waitroom_malformed_requests_total.
var (
	errPathNotAbsolute  = errors.New("the path does not start with \"/\"")
	errPathBadEscape    = errors.New("the path has a malformed percent escape")
	errPathSeparator    = errors.New("the path has an encoded slash or a backslash")
	errPathDoubleEncode = errors.New("the path has an encoded '%' before two hex digits (double encoding)")
	errPathControl      = errors.New("the path has a control character")
	errHostBad          = errors.New("the host is not a host name or IP address")
)

// pathByte classes, for one table lookup per byte.
const (
	byteEscape  = iota // escaped in a canonical path
	byteKeep           // stands as it is: unreserved, sub-delims, ':', '@'
	byteRefuse         // control characters and backslash
	byteSlash          // the separator
	bytePercent        // starts an escape
)

var pathBytes = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c < 0x20 || c == 0x7f || c == '\\':
			t[c] = byteRefuse
		case c == '/':
			t[c] = byteSlash
		case c == '%':
			t[c] = bytePercent
		case isUnreserved(byte(c)) || strings.IndexByte("!$&'()*+,;=:@", byte(c)) >= 0:
			t[c] = byteKeep
		default:
			t[c] = byteEscape
		}
	}
	return t
}()

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isHex(c byte) bool { _, ok := unhex(c); return ok }

const upperHex = "0123456789ABCDEF"

// canonEscapes rewrites the escapes and bytes of s (a path, or a part of
// one) to their canonical spelling: unreserved escapes decoded, other
// escapes upper-case, bytes that need it escaped. It refuses what
// normalisePath refuses, except a missing leading "/".
func canonEscapes(s string) (string, error) {
	var b []byte // nil while s is canonical as it is
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch pathBytes[c] {
		case byteKeep, byteSlash:
			if b != nil {
				b = append(b, c)
			}
		case byteRefuse:
			if c == '\\' {
				return "", errPathSeparator
			}
			return "", errPathControl
		case byteEscape:
			if b == nil {
				b = append(make([]byte, 0, len(s)+8), s[:i]...)
			}
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		case bytePercent:
			if i+2 >= len(s) {
				return "", errPathBadEscape
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", errPathBadEscape
			}
			v := hi<<4 | lo
			switch {
			case v == '/' || v == '\\':
				return "", errPathSeparator
			case v < 0x20 || v == 0x7f:
				return "", errPathControl
			}
			if isUnreserved(v) {
				if b == nil {
					b = append(make([]byte, 0, len(s)), s[:i]...)
				}
				b = append(b, v)
			} else {
				canon := s[i+1] == upperHex[hi] && s[i+2] == upperHex[lo]
				if b == nil && !canon {
					b = append(make([]byte, 0, len(s)), s[:i]...)
				}
				if b != nil {
					b = append(b, '%', upperHex[hi], upperHex[lo])
				}
			}
			i += 2
		}
	}
	out := s
	if b != nil {
		out = string(b)
	}
	// Checked on the result: decoding "%25%34%31" makes "%2541".
	for i := strings.Index(out, "%25"); i >= 0; {
		if i+4 < len(out) && isHex(out[i+3]) && isHex(out[i+4]) {
			return "", errPathDoubleEncode
		}
		j := strings.Index(out[i+3:], "%25")
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return out, nil
}

// normalisePath returns the canonical spelling of an escaped URL path (as
// the request line carries it), or why it has none. It is idempotent, and
// its result starts with "/" and has no dot segments, no empty segments and
// no escaped slash: it cannot name anything outside "/".
func normalisePath(raw string) (string, error) {
	if raw == "" {
		return "/", nil // an absolute URL without a path asks for "/"
	}
	if raw[0] != '/' {
		return "", errPathNotAbsolute
	}
	p, err := canonEscapes(raw)
	if err != nil {
		return "", err
	}
	if !needsSegmentWork(p) {
		return p, nil
	}
	segs := make([]string, 0, strings.Count(p, "/"))
	trailing := false
	for seg := range strings.SplitSeq(p[1:], "/") {
		name, _, _ := strings.Cut(seg, ";")
		switch name {
		case "", ".":
			trailing = true
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			trailing = true
		default:
			segs = append(segs, seg)
			trailing = false
		}
	}
	if len(segs) == 0 {
		return "/", nil
	}
	out := "/" + strings.Join(segs, "/")
	if trailing {
		out += "/"
	}
	return out, nil
}

// needsSegmentWork reports whether a path with canonical escapes may hold an
// empty, dot or parameter-only segment; most paths hold none and are
// returned as they are, without allocating.
func needsSegmentWork(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.' || p[i+1] == ';') {
			return true
		}
	}
	return false
}

// routeKey is a canonical path without its path parameters: what routes
// and bypass rules are matched against.
func routeKey(p string) string {
	if strings.IndexByte(p, ';') < 0 {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); {
		c := p[i]
		if c != ';' {
			b.WriteByte(c)
			i++
			continue
		}
		for i < len(p) && p[i] != '/' {
			i++
		}
	}
	return b.String()
}

// normaliseHost returns the canonical spelling of a Host header (name or
// IP address, optional port), or errHostBad.
func normaliseHost(h string) (string, error) {
	if h == "" {
		return "", nil
	}
	name, port := h, ""
	if h[0] == '[' {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", errHostBad
		}
		a, err := netip.ParseAddr(h[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", errHostBad
		}
		name, port = "["+a.String()+"]", h[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", errHostBad
			}
			port = port[1:]
		}
	} else {
		if i := strings.IndexByte(h, ':'); i >= 0 {
			name, port = h[:i], h[i+1:]
		}
		var err error
		if name, err = canonHostName(name); err != nil {
			return "", err
		}
	}
	if port == "" {
		return name, nil
	}
	if len(port) > 5 || port[0] == '+' || port[0] == '-' {
		return "", errHostBad
	}
	n, err := strconv.Atoi(port)
	if err != nil || n > 65535 {
		return "", errHostBad
	}
	if len(h) == len(name)+1+len(port) && h[:len(name)] == name && (port[0] != '0' || len(port) == 1) {
		return h, nil // canonical already: no allocation on the request path
	}
	return name + ":" + strconv.Itoa(n), nil
}

// canonHostName lower-cases a host name and drops the trailing dot of a
// fully qualified one; an IPv4 address stays as it is.
func canonHostName(name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 || name[len(name)-1] == '.' {
		return "", errHostBad
	}
	lower := true
	prev := byte('.')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case 'A' <= c && c <= 'Z':
			lower = false
		case c == '.':
			if prev == '.' {
				return "", errHostBad // an empty label
			}
		default:
			return "", errHostBad
		}
		prev = c
	}
	if !lower {
		name = strings.ToLower(name)
	}
	return name, nil
}

// canonicalise puts r's path and Host in their canonical spelling, in
// place, so that bypass rules, the pages and the proxy all see (and the
// origin receives) what routing saw. It returns the routing key, or the
// reason the request has no single meaning; then r is left as it was.
func canonicalise(r *http.Request) (string, error) {
	if r.URL.Opaque != "" {
		return "", errPathNotAbsolute
	}
	raw := r.URL.RawPath
	if raw == "" {
		raw = r.URL.EscapedPath()
	}
	p, err := normalisePath(raw)
	if err != nil {
		return "", err
	}
	host, err := normaliseHost(r.Host)
	if err != nil {
		return "", err
	}
	if p != raw {
		dec, err := url.PathUnescape(p)
		if err != nil {
			// normalisePath leaves only well-formed escapes.
			return "", errPathBadEscape
		}
		r.URL.Path, r.URL.RawPath = dec, p
		if r.URL.EscapedPath() != p {
			return "", errPathBadEscape // never: p is a valid encoding of dec
		}
		if r.RequestURI != "" {
			r.RequestURI = r.URL.RequestURI()
		}
	}
	r.Host = host
	return routeKey(p), nil
}

// routeMatches reports whether a routing key lies within a route's path:
// below it, or the path itself without its final "/" ("/shop" is in
// "/shop/": most origins answer both alike).
func routeMatches(key, path string) bool {
	return strings.HasPrefix(key, path) || (len(path) > 1 && path[len(path)-1] == '/' && key == path[:len(path)-1])
}

// routePath is the form a configured route path is matched in: its
// routing key, or the path as it is when it has none (Validate refuses such
// a path, so only a room from a peer running other code can hold one).
func routePath(p string) string {
	if c, err := normalisePath(p); err == nil {
		return routeKey(c)
	}
	return p
}

// routeHost is the form a configured route host is matched in.
func routeHost(h string) string {
	if c, err := normaliseHost(h); err == nil {
		return c
	}
	return strings.ToLower(h)
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
		u.pass.ServeHTTP(w, r)
		return
	}
	u.s.metrics.unrouted.Inc()
	writeStatusPage(w, http.StatusNotFound, "No waiting room here", "This address is not protected by any waiting room on this node.")
}

// refuseMalformed answers 400 to a request whose path or host has no
// single meaning, and counts it by reason.
func refuseMalformed(s *Server, w http.ResponseWriter, err error) {
	reason := "path"
	if errors.Is(err, errHostBad) {
		reason = "host"
	}
	s.metrics.malformed.WithLabelValues(reason).Inc()
	s.log.Debug().Err(err).Msg("request refused: ambiguous path or host")
	writeStatusPage(w, http.StatusBadRequest, "Bad address", "This address has no single meaning ("+err.Error()+"), so it is refused.")
}
