// Package canon gives a URL path and a host their one canonical spelling,
// the form in which requests are routed and the configuration's routes and
// bypass rules are checked and matched. The router and the configuration
// both use it, so a route is judged valid by the rules that later match
// requests against it. It imports nothing of the project.
//
// Routing sees a request the way the origin will: its path and host are
// put in one canonical spelling before any route or bypass rule is matched,
// and the request the proxy sends carries that spelling, so the origin
// receives exactly the path that was routed. Without this, "//shop/",
// "/static/../shop/", "/%2e%2e/shop/" or the host "shop.example.com." would
// match no route (or a bypass rule) here and still name the protected page
// at an origin that cleans its paths, as nearly every web server does.
//
// The canonical path (Path):
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
// a dot to an origin that decodes twice), a dot segment with encoded
// parameters ("..%3B", a dot segment to an origin that decodes before it
// reads parameters, a name to one that reads them first: kept, a path under
// a bypass rule's "/static/..%3B/" could be served as a protected page),
// control characters (also encoded), malformed escapes, and a path that
// does not start with "/".
//
// Routes and bypass rules are matched against the routing key (Key):
// the canonical path without path parameters (";..." within a segment), so
// "/shop;jsessionid=1/x" is matched as "/shop/x", as a servlet container
// would serve it. The origin still receives the parameters.
//
// Paths are case-sensitive, as on nearly every origin.
//
// The canonical host (Host) is lower-case, without the trailing
// dot of a fully qualified name, with its port (if any) as a plain decimal
// number, and an IPv6 literal in its shortest form in brackets. A host of
// other characters than letters, digits, '-', '_' and '.', or with empty
// labels, is refused.
package canon

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Reasons a path or host has no canonical spelling: a request that has none
// is refused before routing, and a configured route or bypass rule that has
// none is refused at load.
var (
	ErrPathNotAbsolute  = errors.New("the path does not start with \"/\"")
	ErrPathBadEscape    = errors.New("the path has a malformed percent escape")
	ErrPathSeparator    = errors.New("the path has an encoded slash or a backslash")
	ErrPathDoubleEncode = errors.New("the path has an encoded '%' before two hex digits (double encoding)")
	ErrPathControl      = errors.New("the path has a control character")
	// ErrPathDotParameters: a dot segment with encoded parameters
	// ("..%3B") is ".." to a server that decodes the path before it
	// reads the parameters, and a name to one that reads them first.
	ErrPathDotParameters = errors.New("the path has a dot segment with encoded parameters (\"..%3B\")")
	ErrHostBad           = errors.New("the host is not a host name or IP address")
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

// Escapes rewrites the escapes and bytes of s (a path, or a part of
// one) to their canonical spelling: unreserved escapes decoded, other
// escapes upper-case, bytes that need it escaped. It refuses what
// Path refuses, except a missing leading "/".
func Escapes(s string) (string, error) {
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
				return "", ErrPathSeparator
			}
			return "", ErrPathControl
		case byteEscape:
			if b == nil {
				b = append(make([]byte, 0, len(s)+8), s[:i]...)
			}
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		case bytePercent:
			if i+2 >= len(s) {
				return "", ErrPathBadEscape
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", ErrPathBadEscape
			}
			v := hi<<4 | lo
			switch {
			case v == '/' || v == '\\':
				return "", ErrPathSeparator
			case v < 0x20 || v == 0x7f:
				return "", ErrPathControl
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
			return "", ErrPathDoubleEncode
		}
		j := strings.Index(out[i+3:], "%25")
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return out, nil
}

// Path returns the canonical spelling of an escaped URL path (as
// the request line carries it), or why it has none. It is idempotent, and
// its result starts with "/" and has no dot segments, no empty segments and
// no escaped slash: it cannot name anything outside "/".
func Path(raw string) (string, error) {
	if raw == "" {
		return "/", nil // an absolute URL without a path asks for "/"
	}
	if raw[0] != '/' {
		return "", ErrPathNotAbsolute
	}
	p, err := Escapes(raw)
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
		if before, _, ok := strings.Cut(name, "%3B"); ok && (before == "." || before == "..") {
			return "", ErrPathDotParameters
		}
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

// Key is a canonical path without its path parameters: what routes
// and bypass rules are matched against.
func Key(p string) string {
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

// Host returns the canonical spelling of a Host header (name or
// IP address, optional port), or ErrHostBad.
func Host(h string) (string, error) {
	if h == "" {
		return "", nil
	}
	name, port := h, ""
	if h[0] == '[' {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", ErrHostBad
		}
		a, err := netip.ParseAddr(h[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", ErrHostBad
		}
		name, port = "["+a.String()+"]", h[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", ErrHostBad
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
		return "", ErrHostBad
	}
	n, err := strconv.Atoi(port)
	if err != nil || n > 65535 {
		return "", ErrHostBad
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
		return "", ErrHostBad
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
				return "", ErrHostBad // an empty label
			}
		default:
			return "", ErrHostBad
		}
		prev = c
	}
	if !lower {
		name = strings.ToLower(name)
	}
	return name, nil
}

// RoutePath is the form a configured route path is matched in: its routing
// key, or the path as it is when it has none (validation refuses such a
// path, so only a room from a peer running other code can hold one).
func RoutePath(p string) string {
	if c, err := Path(p); err == nil {
		return Key(c)
	}
	return p
}

// RouteHost is the form a configured route host is matched in.
func RouteHost(h string) string {
	if c, err := Host(h); err == nil {
		return c
	}
	return strings.ToLower(h)
}
