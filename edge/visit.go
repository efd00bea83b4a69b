package edge

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
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
	v     *view
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
	// First of all: whatever happens next, the origin never sees the
	// cookie check.
	cc := takeCookieCheck(r)
	if rm.bypassed(r) {
		// Health checks, staff, static assets: straight through, uncounted.
		rm.m.bypassed.Inc()
		rm.proxy.ServeHTTP(w, r)
		return
	}
	now := s.clock()
	a := rm.allocation(now)
	v := a.view
	if v.cfg.Suspended && !v.cfg.Stopped {
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
	if cc.present && fresh {
		if cc.current(nowSec) {
			// Back from the first queue page without the cookie it set:
			// queueing it again would put it at the back once more, on
			// every refresh, for ever. Say why instead, and count nothing
			// in the room: it holds no place.
			rm.m.cookiesRequired.Inc()
			s.writeQueue(w, r, rm, a, cookie.Token{Bucket: nowMin}, now, https, answerNoCookie, false)
			return
		}
		// An old marker proves nothing: a new visitor like any other.
		cc = cookieCheck{}
	}
	// marked: the cookie check passed; the visitor leaves the marked
	// address at its next step.
	marked := cc.present

	if !fresh && tok.Admitted() && !tok.Infinite {
		if v.cfg.Stopped {
			// The emergency stop holds admitted visitors too. Their token is
			// left as it is, so they are back in on resume if their session
			// has not expired meanwhile.
			rm.m.stopped.Inc()
			s.writeQueue(w, r, rm, a, tok, now, https, answerAgain, marked)
			return
		}
		// An admitted visitor within its session: to the origin. Its active
		// count follows it to the current minute.
		var incs [5]gossip.Inc
		k := incs[:0]
		if tok.CountedMinute != nowMin {
			k = moveActive(k, rm.name, tok.CountedMinute, nowMin)
			k = append(k, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Arrivals, Minute: nowMin}, N: 1})
		}
		k = moveTimeOnOrigin(k, rm.name, tok, nowSec)
		if len(k) > 0 {
			rm.mu.RLock()
			s.node.Add(k...)
			rm.mu.RUnlock()
		}
		tok.CountedMinute = nowMin
		tok.LastCheckIn = nowSec
		if !v.cfg.DisableSessionRenewal {
			tok.ExpiresAt = nowSec + int64(v.cfg.SessionDuration)*60
		}
		rm.m.admittedRequests.Inc()
		s.proxyVisit(w, r, rm, v, tok, https, marked)
		return
	}

	if !fresh && nowSec < tok.LastCheckIn+int64(tok.RefreshInterval)-earlyCheckInSlack {
		// Earlier than the refresh interval the token was given: the page
		// again, but no attempt, so refreshing faster gains nothing.
		rm.m.earlyCheckIns.Inc()
		s.writeQueue(w, r, rm, a, tok, now, https, answerAgain, marked)
		return
	}

	var incs [10]gossip.Inc
	add := incs[:0]
	if fresh {
		tok = cookie.Token{Bucket: nowMin, ID: randomID()}
	}
	gated, add := s.challengeStep(r, rm, a, &tok, fresh, nowMin, add)
	if tok.Infinite || gated {
		s.holdVisitor(w, r, rm, a, tok, fresh, marked, now, https, add)
		return
	}
	if tok.CountedMinute != nowMin {
		// Arrivals count distinct visitors seen per node per minute, the
		// queued ones included: the traffic share that splits slots between
		// nodes follows where the queue is.
		add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Arrivals, Minute: nowMin}, N: 1})
	}
	// countedBucket is where the visitor's waiting count sits now; a
	// shuffle at the event's start gives it a new bucket.
	countedBucket := tok.Bucket
	if e := v.event; v.phase == EventActive && e.ShuffleAtEventStart && e.isPrequeued(tok.Bucket) {
		tok.Bucket = shuffledBucket(s.shuffleKey, rm.name, e, tok.ID)
	}
	rm.mu.RLock()
	a = rm.alloc.Load()
	out := a.Decide(policy.Visitor{Bucket: tok.Bucket, Queued: !fresh}, nil)
	leaveWaiting := func() {
		if tok.CountedMinute != 0 {
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingMinus, Bucket: countedBucket, Minute: tok.CountedMinute}, N: 1})
		}
	}
	switch out {
	case policy.Admit:
		add = append(add,
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.Admitted, Minute: nowMin}, N: 1},
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.ActivePlus, Minute: nowMin}, N: 1},
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.VisitorsAdmitted, Minute: nowMin}, N: 1},
			gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.TimeOnOrigin, Bucket: crdt.HistogramBin(0), Minute: nowMin}, N: 1})
		if !fresh {
			// Time in queue of those who waited; the arrival second is not
			// kept, so the middle of the arrival minute stands for it.
			waited := float64(nowSec - (tok.Bucket*60 + 30))
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.TimeInQueue, Bucket: crdt.HistogramBin(waited), Minute: nowMin}, N: 1})
		}
		leaveWaiting()
	case policy.Queue:
		if tok.CountedMinute != nowMin || countedBucket != tok.Bucket {
			leaveWaiting()
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingPlus, Bucket: tok.Bucket, Minute: nowMin}, N: 1})
		}
		if fresh {
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.VisitorsQueued, Minute: nowMin}, N: 1})
		}
		if rm.challenge != nil && !tok.Verified {
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.ChallengesIssued, Minute: nowMin}, N: 1})
		}
	case policy.Reject:
		// A visitor who waited before the room turned to reject (or whose
		// queue filled) no longer waits.
		leaveWaiting()
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
		tok.ExpiresAt = nowSec + int64(a.view.cfg.SessionDuration)*60
		rm.m.admittedRequests.Inc()
		s.proxyVisit(w, r, rm, a.view, tok, https, marked)
	case policy.Queue:
		rm.m.queued.Inc()
		tok.LastCheckIn = nowSec
		tok.CountedMinute = nowMin
		tok.RefreshInterval = jitteredRefresh()
		tok.ExpiresAt = nowSec + int64(queuedTokenLife/time.Second)
		s.writeQueue(w, r, rm, a, tok, now, https, newTokenAnswer(fresh), marked)
	case policy.Reject:
		rm.m.rejected.Inc()
		if a.view.pol.QueueingMethod != policy.MethodReject {
			// The queue is full: say so, and let the page try again later.
			// The visitor is not counted as waiting and keeps no token.
			tok.RefreshInterval = jitteredRefresh()
			tok.LastCheckIn = nowSec
			s.writeQueue(w, r, rm, a, tok, now, https, answerAgain, marked)
			return
		}
		clearCookie(w.Header(), a.view, rm.cookieName, https)
		writeRejectPage(w, a.view)
	default: // policy.Bypass
		rm.m.bypassed.Inc()
		rm.proxy.ServeHTTP(w, r)
	}
}

// holdVisitor answers a visitor who is not decided on: one in the infinite
// queue, or one who has not solved the challenge while the room queues
// (under infinite_queue). Neither is counted as waiting, so bots neither
// take slots nor lengthen the estimates of the people behind them; both get
// the same page, headers and cookie as a real queued visitor.
func (s *Server) holdVisitor(w http.ResponseWriter, r *http.Request, rm *room, a *allocation, tok cookie.Token, fresh, marked bool, now time.Time, https bool, add []gossip.Inc) {
	nowMin, nowSec := unixMinute(now), now.Unix()
	if tok.CountedMinute != 0 {
		add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.WaitingMinus, Bucket: tok.Bucket, Minute: tok.CountedMinute}, N: 1})
	}
	if tok.Infinite {
		rm.m.infinite.Inc()
		if !fresh {
			add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.InfiniteQueueRefreshes, Minute: nowMin}, N: 1})
		}
	} else {
		rm.m.challenged.Inc()
		add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.ChallengesIssued, Minute: nowMin}, N: 1})
	}
	if fresh {
		add = append(add, gossip.Inc{Key: crdt.Key{Room: rm.name, Kind: crdt.VisitorsQueued, Minute: nowMin}, N: 1})
	}
	if len(add) > 0 {
		rm.mu.RLock()
		s.node.Add(add...)
		rm.mu.RUnlock()
	}
	tok.CountedMinute = 0
	tok.LastCheckIn = nowSec
	tok.RefreshInterval = jitteredRefresh()
	tok.ExpiresAt = nowSec + int64(queuedTokenLife/time.Second)
	s.writeQueue(w, r, rm, a, tok, now, https, newTokenAnswer(fresh), marked)
}

// newTokenAnswer is the answer that sets a renewed token: a new visitor's
// first one carries the cookie check.
func newTokenAnswer(fresh bool) queueAnswer {
	if fresh {
		return answerFirst
	}
	return answerCounted
}

// moveTimeOnOrigin moves an admitted session's count in the time-on-origin
// histogram from the bin of its duration so far to the bin of its new one.
// The cells are those of the admission minute, so each session counts once,
// at its latest duration, however long it lasts.
func moveTimeOnOrigin(dst []gossip.Inc, room string, tok cookie.Token, nowSec int64) []gossip.Inc {
	from := crdt.HistogramBin(float64(tok.LastCheckIn - tok.AcceptedAt))
	to := crdt.HistogramBin(float64(nowSec - tok.AcceptedAt))
	if from == to {
		return dst
	}
	m := tok.AcceptedAt / 60
	return append(dst,
		gossip.Inc{Key: crdt.Key{Room: room, Kind: crdt.TimeOnOriginMinus, Bucket: from, Minute: m}, N: 1},
		gossip.Inc{Key: crdt.Key{Room: room, Kind: crdt.TimeOnOrigin, Bucket: to, Minute: m}, N: 1})
}

func jitteredRefresh() uint16 {
	return uint16(refreshBase - refreshJitter + rand.IntN(2*refreshJitter+1))
}

// randomID draws a visitor's id from the system's randomness: it decides a
// shuffled pre-queue's order, so it must not be predictable.
func randomID() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
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
	if tok.Admitted() && s.revoked.has(rm.name, tok.ID) {
		// A session the origin revoked, sent again by a client that kept
		// the old cookie: a new visitor like any other.
		s.metrics.cookieErrors.WithLabelValues(rm.name, "revoked").Inc()
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
//
// A page load on the cookie check's address (marked) is sent to the clean
// address instead, with the cookie, and gets there on its next request:
// otherwise the visitor would land on the origin's page under the marked
// address, and a friend opening a link copied from it within the marker's
// life would be told that cookies are required.
func (s *Server) proxyVisit(w http.ResponseWriter, r *http.Request, rm *room, v *view, tok cookie.Token, https, marked bool) {
	if marked && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h := w.Header()
		s.setCookie(h, rm, v, tok, https, s.clock().Unix())
		h.Set("Location", localURL(r.URL, ""))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	vis := &visit{rm: rm, v: v, tok: tok, https: https}
	rm.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitKey{}, vis)))
}

func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setCookie writes the room's cookie carrying tok.
func (s *Server) setCookie(h http.Header, rm *room, v *view, tok cookie.Token, https bool, now int64) {
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
	b = appendCookieAttrs(b, &v.cfg.CookieAttributes, https)
	h.Add("Set-Cookie", string(b))
}

func clearCookie(h http.Header, v *view, name string, https bool) {
	b := make([]byte, 0, 128)
	b = append(b, name...)
	b = append(b, "=; Path=/; Max-Age=0; HttpOnly"...)
	b = appendCookieAttrs(b, &v.cfg.CookieAttributes, https)
	h.Add("Set-Cookie", string(b))
}

// appendCookieAttrs applies cookie_attributes. auto means SameSite=None;
// Secure over HTTPS (so a room embedded in an iframe keeps its cookie) and
// SameSite=Lax over plain HTTP or with secure: never, where None would be
// refused by browsers.
func appendCookieAttrs(b []byte, ca *CookieAttributes, https bool) []byte {
	secure := ca.Secure == "always" || (ca.Secure != "never" && https)
	sameSite := ca.SameSite
	if sameSite == "" || sameSite == "auto" {
		// None only with Secure: browsers drop a SameSite=None cookie that
		// is not Secure, so secure: never keeps auto at Lax.
		sameSite = "lax"
		if https && ca.Secure != "never" {
			sameSite = "none"
		}
	}
	switch sameSite {
	case "strict":
		b = append(b, "; SameSite=Strict"...)
	case "none":
		b = append(b, "; SameSite=None"...)
		secure = secure || ca.Secure != "never"
	default:
		b = append(b, "; SameSite=Lax"...)
	}
	if secure {
		b = append(b, "; Secure"...)
	}
	if secure && sameSite == "none" {
		// A room embedded in another site's iframe: browsers that block
		// third-party cookies still keep a partitioned one (CHIPS), so the
		// visitor keeps its place. Top-level visits are unaffected.
		b = append(b, "; Partitioned"...)
	}
	return b
}
