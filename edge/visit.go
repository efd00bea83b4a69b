package edge

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// visit is what the proxy needs to finish an admitted request: the token to
// set (or revoke) once the origin has answered.
type visit struct {
	rm    *room
	tok   cookie.Token
	https bool
}

type visitKey struct{}

// ServeHTTP is the public handler: every request to a protected site passes
// through it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm := s.route(r)
	if rm == nil {
		if s.fallback != nil {
			s.fallback.ServeHTTP(w, r)
			return
		}
		s.metrics.unrouted.Inc()
		writeStatusPage(w, http.StatusNotFound, "No waiting room here", "This address is not protected by any waiting room on this node.")
		return
	}
	now := s.clock()
	if rm.cfg.Suspended {
		// A suspended room is off: straight to the origin, no cookie, not
		// counted.
		rm.m.bypassed.Inc()
		rm.proxy.ServeHTTP(w, r)
		return
	}
	https := isHTTPS(r)
	tok, fresh := s.openToken(rm, r, now)
	nowMin := unixMinute(now)
	nowSec := now.Unix()

	if !fresh && tok.Admitted() && !tok.Infinite {
		// An admitted visitor within its session: to the origin. Its active
		// count follows it to the current minute.
		var incs [3]gossip.Inc
		k := moveActive(incs[:0], rm.name, tok.CountedMinute, nowMin)
		if tok.CountedMinute != nowMin {
			k = append(k, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Arrivals, Minute: nowMin}, N: 1})
		}
		if len(k) > 0 {
			rm.mu.RLock()
			s.node.Add(k...)
			rm.mu.RUnlock()
		}
		tok.CountedMinute = nowMin
		tok.LastCheckIn = nowSec
		if !rm.cfg.DisableSessionRenewal {
			tok.ExpiresAt = nowSec + int64(rm.cfg.SessionDuration)*60
		}
		rm.m.admittedRequests.Inc()
		s.proxyVisit(w, r, rm, tok, https)
		return
	}

	if !fresh && nowSec < tok.LastCheckIn+int64(tok.RefreshInterval)-earlyCheckInSlack {
		// Earlier than the refresh interval the token was given: the page
		// again, but no attempt, so refreshing faster gains nothing.
		rm.m.earlyCheckIns.Inc()
		a := rm.allocation(now)
		s.writeQueue(w, r, rm, a.Allocation, tok, now, https, false)
		return
	}

	if a := rm.alloc.Load(); a == nil || a.minute != nowMin {
		rm.recompute(now)
	}
	var incs [4]gossip.Inc
	add := incs[:0]
	if fresh {
		tok = cookie.Token{Bucket: nowMin}
	}
	if tok.CountedMinute != nowMin {
		// Arrivals count distinct visitors seen per node per minute, the
		// queued ones included: the traffic share that splits slots between
		// nodes follows where the queue is.
		add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Arrivals, Minute: nowMin}, N: 1})
	}
	rm.mu.RLock()
	a := rm.alloc.Load()
	out := a.Decide(policy.Visitor{Bucket: tok.Bucket, Queued: !fresh}, nil)
	switch out {
	case policy.Admit:
		add = append(add,
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Admitted, Minute: nowMin}, N: 1},
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.ActivePlus, Minute: nowMin}, N: 1})
		if tok.CountedMinute != 0 {
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingMinus, Bucket: tok.Bucket, Minute: tok.CountedMinute}, N: 1})
		}
	case policy.Queue:
		if tok.CountedMinute != nowMin {
			if tok.CountedMinute != 0 {
				add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingMinus, Bucket: tok.Bucket, Minute: tok.CountedMinute}, N: 1})
			}
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingPlus, Bucket: tok.Bucket, Minute: nowMin}, N: 1})
		}
	case policy.Reject:
		if tok.CountedMinute != 0 {
			// A visitor who waited before the room turned to reject no longer
			// waits.
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingMinus, Bucket: tok.Bucket, Minute: tok.CountedMinute}, N: 1})
		}
	}
	if len(add) > 0 {
		s.node.Add(add...)
	}
	rm.mu.RUnlock()

	switch out {
	case policy.Admit:
		rm.m.admitted.Inc()
		tok.AcceptedAt = nowSec
		tok.LastCheckIn = nowSec
		tok.CountedMinute = nowMin
		tok.ExpiresAt = nowSec + int64(rm.cfg.SessionDuration)*60
		rm.m.admittedRequests.Inc()
		s.proxyVisit(w, r, rm, tok, https)
	case policy.Queue:
		rm.m.queued.Inc()
		tok.LastCheckIn = nowSec
		tok.CountedMinute = nowMin
		tok.RefreshInterval = uint16(refreshBase - refreshJitter + rand.IntN(2*refreshJitter+1))
		tok.ExpiresAt = nowSec + int64(queuedTokenLife/time.Second)
		s.writeQueue(w, r, rm, a.Allocation, tok, now, https, true)
	case policy.Reject:
		rm.m.rejected.Inc()
		if rm.pol.QueueingMethod != policy.MethodReject {
			// The queue is full: say so, and let the page try again later.
			// The visitor is not counted as waiting and keeps no token.
			tok.RefreshInterval = uint16(refreshBase - refreshJitter + rand.IntN(2*refreshJitter+1))
			tok.LastCheckIn = nowSec
			s.writeQueue(w, r, rm, a.Allocation, tok, now, https, false)
			return
		}
		clearCookie(w.Header(), rm, https)
		writeRejectPage(w, rm)
	default: // policy.Bypass
		rm.m.bypassed.Inc()
		rm.proxy.ServeHTTP(w, r)
	}
}

// moveActive appends the increments that move a session's active count from
// minute from to minute to.
func moveActive(dst []gossip.Inc, room string, from, to int64) []gossip.Inc {
	if from == to {
		return dst
	}
	if from != 0 {
		dst = append(dst, gossip.Inc{Key: crdt.Key{Room: room, Kind: crdt.ActiveMinus, Minute: from}, N: 1})
	}
	return append(dst, gossip.Inc{Key: crdt.Key{Room: room, Kind: crdt.ActivePlus, Minute: to}, N: 1})
}

// openToken reads the room's cookie. Anything that does not open is a new
// visitor (fresh); the reason is counted, never shown.
func (s *Server) openToken(rm *room, r *http.Request, now time.Time) (cookie.Token, bool) {
	c, err := r.Cookie(rm.cookieName)
	if err != nil {
		return cookie.Token{}, true
	}
	tok, err := s.keys.Open(c.Value, rm.name, now)
	if err != nil {
		s.metrics.cookieErrors.WithLabelValues(rm.name, cookieErrorReason(err)).Inc()
		return cookie.Token{}, true
	}
	return tok, false
}

func cookieErrorReason(err error) string {
	switch {
	case errors.Is(err, cookie.ErrExpired):
		return "expired"
	case errors.Is(err, cookie.ErrAuth):
		return "auth"
	case errors.Is(err, cookie.ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, cookie.ErrTooLarge):
		return "too_large"
	default:
		return "malformed"
	}
}

// proxyVisit sends an admitted visitor to the origin; the cookie is set when
// the origin's answer comes back, so that an origin command can revoke it.
func (s *Server) proxyVisit(w http.ResponseWriter, r *http.Request, rm *room, tok cookie.Token, https bool) {
	v := &visit{rm: rm, tok: tok, https: https}
	rm.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitKey{}, v)))
}

func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setCookie writes the room's cookie carrying tok.
func (s *Server) setCookie(h http.Header, rm *room, tok cookie.Token, https bool, now int64) {
	maxAge := tok.ExpiresAt - now
	if maxAge < 1 {
		maxAge = 1
	}
	b := make([]byte, 0, 256)
	b = append(b, rm.cookieName...)
	b = append(b, '=')
	b = s.keys.AppendSeal(b, rm.name, tok)
	b = append(b, "; Path=/; Max-Age="...)
	b = strconv.AppendInt(b, maxAge, 10)
	b = append(b, "; HttpOnly"...)
	b = appendCookieAttrs(b, rm, https)
	h.Add("Set-Cookie", string(b))
}

func clearCookie(h http.Header, rm *room, https bool) {
	b := make([]byte, 0, 128)
	b = append(b, rm.cookieName...)
	b = append(b, "=; Path=/; Max-Age=0; HttpOnly"...)
	b = appendCookieAttrs(b, rm, https)
	h.Add("Set-Cookie", string(b))
}

// appendCookieAttrs applies cookie_attributes. auto means SameSite=None;
// Secure over HTTPS (so a room embedded in an iframe keeps its cookie) and
// SameSite=Lax over plain HTTP, where None would be refused by browsers.
func appendCookieAttrs(b []byte, rm *room, https bool) []byte {
	ss := rm.cfg.CookieAttributes.SameSite
	secure := false
	switch rm.cfg.CookieAttributes.Secure {
	case "always":
		secure = true
	case "never":
		secure = false
	default:
		secure = https
	}
	switch ss {
	case "lax":
		b = append(b, "; SameSite=Lax"...)
	case "strict":
		b = append(b, "; SameSite=Strict"...)
	case "none":
		b = append(b, "; SameSite=None"...)
		secure = secure || rm.cfg.CookieAttributes.Secure != "never"
	default:
		if https {
			b = append(b, "; SameSite=None"...)
			secure = secure || rm.cfg.CookieAttributes.Secure != "never"
		} else {
			b = append(b, "; SameSite=Lax"...)
		}
	}
	if secure {
		b = append(b, "; Secure"...)
	}
	return b
}
