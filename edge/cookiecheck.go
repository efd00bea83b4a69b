package edge

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The cookie check. A visitor's place in the queue lives only in its cookie,
// so a client that does not keep cookies is a new visitor on every refresh:
// it goes to the back of the line each time and waits forever, and a
// navigator.cookieEnabled notice misses clients without JavaScript and
// browsers whose cookie blocking it does not see. The check needs neither:
// the first queue page a new visitor gets refreshes to the same address with
// cookieCheckParam added, holding the second it was issued. A request that
// comes back with the parameter but without a valid cookie for the room did
// not keep the cookie it was given, and is told that cookies are required
// instead of being queued again. One that comes back with its cookie is
// handled as any other, and leaves the marked address behind at the next
// step (see writeQueue and proxyVisit), so the parameter does not linger in
// the address bar, in bookmarks or in links shared from there.
//
// That return is also the visitor's proof that it keeps cookies, and the
// counter rule counts a new visitor as waiting only from then on: the first
// page refreshes after policy.ProofRefresh (its token's refresh interval,
// which writeQueue puts in the Refresh header, the meta refresh and the
// JSON alike), not the usual twenty seconds. A client that never comes back
// takes no place in the queue, so a flood of cookieless requests cannot
// fill max_queue or delay anyone (see policy.Count).
//
// The parameter is removed before anything else looks at the request: the
// origin never sees it, and it never changes a decision.
const cookieCheckParam = "__waitroom_cc"

// cookieCheckSkew is how far in the future a marker's issue time may be and
// still count: the node that checks it need not be the one that issued it,
// and the two clocks may differ a little.
const cookieCheckSkew = time.Minute

// cookieCheck is what a request's marker said.
type cookieCheck struct {
	present bool  // the request carried cookieCheckParam
	issued  int64 // the unix second in it; 0 when unreadable
}

// current reports whether a marker is recent enough that a missing cookie
// means the client did not keep it: the cookie set with the marker lives
// queuedTokenLife, so a marker older than that (an old bookmark, a link
// copied from the address bar and opened later) proves nothing, and its
// bearer is a new visitor like any other.
func (c cookieCheck) current(now int64) bool {
	return c.present && c.issued >= now-int64(queuedTokenLife/time.Second) && c.issued <= now+int64(cookieCheckSkew/time.Second)
}

// takeCookieCheck removes cookieCheckParam from r's URL and returns what
// it said.
func takeCookieCheck(r *http.Request) cookieCheck {
	v, ok := takeParam(r, cookieCheckParam)
	if !ok {
		return cookieCheck{}
	}
	issued, _ := strconv.ParseInt(v, 10, 64)
	return cookieCheck{present: true, issued: issued}
}

// takeParam removes every occurrence of one of waitroom's own query
// parameters from r's URL, keeping the rest of the query as it was (order
// and encoding, which url.Values would change), and returns the first
// value, unescaped. Requests without it, nearly all of them, cost one
// substring search.
func takeParam(r *http.Request, name string) (value string, present bool) {
	q := r.URL.RawQuery
	if !strings.Contains(q, name) {
		return "", false
	}
	var kept strings.Builder
	for part := range strings.SplitSeq(q, "&") {
		k, v, _ := strings.Cut(part, "=")
		if k != name {
			if kept.Len() > 0 {
				kept.WriteByte('&')
			}
			kept.WriteString(part)
			continue
		}
		if !present {
			value, _ = url.QueryUnescape(v)
		}
		present = true
	}
	if present {
		r.URL.RawQuery = kept.String()
		r.URL.ForceQuery = false
		r.RequestURI = r.URL.RequestURI()
	}
	return value, present
}

// appendMarkedURL appends u's address (path and query) with the cookie
// check issued at now added: where a new visitor's first queue page
// refreshes to.
func appendMarkedURL(b []byte, u *url.URL, now int64) []byte {
	b = appendLocalURL(b, u, true)
	b = append(b, cookieCheckParam+"="...)
	return strconv.AppendInt(b, now, 10)
}

// localURL is u's path and query, with extra appended to the query, as a
// reference on the same host: for a Refresh header, a Location or a link.
func localURL(u *url.URL, extra string) string {
	var buf [256]byte
	b := appendLocalURL(buf[:0], u, extra != "")
	return string(append(b, extra...))
}

// appendLocalURL appends u's path and query, and with more the separator
// ('?' or '&') of a parameter the caller appends next. The path and query
// come from the client, so the result is made safe to put in a header and
// in HTML: any byte a URL must not hold raw is percent-encoded, and a path
// that starts with "//" (which a browser would read as another host) gets a
// leading "/." that resolves to the same path.
func appendLocalURL(b []byte, u *url.URL, more bool) []byte {
	p := u.EscapedPath()
	switch {
	case !strings.HasPrefix(p, "/"):
		b = append(b, '/') // "*" or empty: no address a browser could come back to
	case strings.HasPrefix(p, "//"):
		b = append(b, "/."...)
		b = append(b, p...)
	default:
		b = append(b, p...)
	}
	if u.RawQuery == "" {
		if more {
			b = append(b, '?')
		}
		return b
	}
	b = append(b, '?')
	b = appendQuery(b, u.RawQuery)
	if more {
		b = append(b, '&')
	}
	return b
}

// appendQuery writes a raw query, percent-encoding every byte outside the
// characters RFC 3986 allows in a query (existing escapes are kept).
func appendQuery(b []byte, q string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(q); i++ {
		c := q[i]
		if queryByte(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return b
}

func queryByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?%", c) >= 0
}
