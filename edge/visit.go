package edge

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/edge/visitors"
	"github.com/waitroom/waitroom/policy"
)

// visit is what the proxy needs to finish an admitted request: the token to
// set (or revoke) once the origin has answered.
type visit struct {
	rm    *room
	v     *view
	tok   cookie.Token
	https bool
	// sealed is the cookie value the visitor sent when it seals exactly
	// tok, so that the cookie need not be sealed again ("" otherwise; see
	// sameCookie).
	sealed string
	// session: the visitor came with a session's cookie and goes on within
	// that session; nothing but its cookie decided the request (see
	// forwardAuth.admit, which lets the proxy keep such an answer).
	session bool
}

type visitKey struct{}

// request is one request on its way along the visitor path: what every step
// needs, gathered once, and the visitor's token as the steps change it.
type request struct {
	w     http.ResponseWriter
	r     *http.Request
	rm    *room
	now   time.Time
	https bool
	// marked: the cookie check passed; the visitor leaves the marked
	// address at its next step.
	marked bool
	// tok is the visitor's token; fresh says it is a new visitor's, made
	// here (nothing opened).
	tok   cookie.Token
	fresh bool
	// sent is the token as the visitor sent it (zero when fresh), and
	// sentValue its cookie's value.
	sent      cookie.Token
	sentValue string
	// before is the newest state this node knows of the token's counting.
	before policy.Counting
	// out is how the request goes on to the origin once let through.
	out onward
	// solution is the challenge's solution the request carried, if any.
	solution string
	// group is the priority group a code presented with this request
	// gave the visitor, and codeResult what became of the code (see
	// priority.go).
	group, codeResult string
}

// onward is how a request that is let through goes on to the origin: in
// proxy mode through the room's reverse proxy (proxied), in forward-auth
// mode by telling the proxy in front that it may go on (forward.go). It is
// the one step where the two modes differ; everything before it, routing,
// the cookie, bypass rules, the decision and the counting, is the same
// code.
type onward interface {
	// pass lets a request go on uncounted and untouched: a bypass rule, a
	// suspended room, a bypass decision.
	pass(w http.ResponseWriter, r *http.Request, rm *room)
	// admit lets an admitted visitor go on, with its renewed token.
	admit(s *Server, w http.ResponseWriter, r *http.Request, vis *visit)
}

// proxied is proxy mode's onward: the room's reverse proxy, which sets the
// visitor's cookie when the origin's answer comes back, so that an origin
// command can revoke it (see newProxy).
type proxied struct{}

func (proxied) pass(w http.ResponseWriter, r *http.Request, rm *room) { rm.proxy.ServeHTTP(w, r) }

func (proxied) admit(_ *Server, w http.ResponseWriter, r *http.Request, vis *visit) {
	vis.rm.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), visitKey{}, vis)))
}

// ServeHTTP is the public handler: every request to a protected site passes
// through it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.access != nil {
		a := s.beginAccess(w, r)
		defer s.endAccess(a)
		w = a
	}
	defer s.recoverRequest(w, nil)
	rm := s.route(r)
	if rm == nil || rm.proxy == nil {
		// No room, or a room without an origin, served only through the
		// forward-auth endpoint.
		s.serveUnrouted(w, r)
		return
	}
	s.visit(w, r, rm, proxied{})
}

// visit takes a routed request along the visitor path, the same in both
// modes: the cookie check, bypass rules, the cookie, the decision and the
// counting; out says how a request let through goes on.
func (s *Server) visit(w http.ResponseWriter, r *http.Request, rm *room, out onward) {
	defer s.recoverRequest(w, rm)
	// First of all: whatever happens next, the origin never sees the
	// cookie check, nor a challenge's solution (which a solved visitor's
	// browser may send again on reloading its address).
	cc := takeCookieCheck(r)
	solution, _ := takeParam(r, challengeParam)
	code, hasCode := takeParam(r, codeParam)
	if rm.bypassed(r) {
		// Health checks, staff, static assets: straight through, uncounted.
		rm.m.bypassed.Inc()
		decided(w, rm, accesslog.Bypassed, 0)
		out.pass(w, r, rm)
		return
	}
	now := s.ringNow()
	a := rm.allocation(now)
	if v := a.view; v.cfg.Suspended && !v.cfg.Stopped {
		// A suspended room is off: straight to the origin, no cookie, not
		// counted.
		rm.m.bypassed.Inc()
		decided(w, rm, accesslog.Bypassed, 0)
		out.pass(w, r, rm)
		return
	}
	rq := &request{w: w, r: r, rm: rm, now: now, https: isHTTPS(r), out: out, solution: solution}
	rq.tok, rq.fresh, rq.sentValue = s.openToken(rm, r, now)
	rq.sent = rq.tok
	if !s.passCookieCheck(rq, a, cc) {
		return
	}
	if hasCode && s.redeemCode(rq, a, code) {
		return
	}
	rq.before = rq.knownCounting()
	if s.inviteOnlyRefused(rq, a) {
		return
	}
	switch policy.TurnOf(rq.before, rq.fresh, rq.tok.Infinite, now.Unix()) {
	case policy.TurnSession:
		s.serveAdmitted(rq, a)
	case policy.TurnEarly:
		s.serveEarlyCheckIn(rq, a)
	default:
		s.decide(rq, a)
	}
}

// serveUnrouted answers a request no room's route matches: the default
// origin's, or a 404 page.
func (s *Server) serveUnrouted(w http.ResponseWriter, r *http.Request) {
	if s.fallback != nil {
		s.fallback.ServeHTTP(w, r)
		return
	}
	s.metrics.unrouted.Inc()
	decided(w, nil, accesslog.Unrouted, 0)
	queuepage.WriteStatus(w, http.StatusNotFound, "No waiting room here", "This address is not protected by any waiting room on this node.")
}

// passCookieCheck settles the cookie check's marker: it reports false when it
// has answered the request itself (a new visitor back from its first queue
// page without the cookie it set), and otherwise sets rq.marked.
func (s *Server) passCookieCheck(rq *request, a *allocation, cc cookieCheck) bool {
	if cc.present && rq.fresh {
		if cc.current(rq.now.Unix()) {
			// Back from the first queue page without the cookie it set:
			// queueing it again would put it at the back once more, on
			// every refresh, for ever. Say why instead, and count nothing
			// in the room: it holds no place.
			rq.rm.m.cookiesRequired.Inc()
			rq.decided(accesslog.Refused)
			s.writeQueue(rq, a, cookie.Token{Bucket: unixMinute(rq.now)}, answerNoCookie)
			return false
		}
		// An old marker proves nothing: a new visitor like any other.
		cc = cookieCheck{}
	}
	rq.marked = cc.present
	return true
}

// knownCounting is where the counter rule starts from: the newest state this
// node knows of the token (see visitors.Counted). The token's lock is held from
// reading it to recording what the request counted, never while the origin
// or a verifier is asked.
func (rq *request) knownCounting() policy.Counting {
	if rq.fresh {
		return policy.Counting{}
	}
	sh := rq.rm.counted.Lock(rq.tok.ID)
	defer sh.Unlock()
	return sh.Before(rq.tok)
}

// serveAdmitted sends an admitted visitor within its session to the origin,
// its session's count following its expiry; the emergency stop holds it.
func (s *Server) serveAdmitted(rq *request, a *allocation) {
	rm, v := rq.rm, a.view
	if v.cfg.Stopped {
		// The emergency stop holds admitted visitors too. Their token is
		// left as it is, so they are back in on resume if their session
		// has not expired meanwhile.
		rm.m.stopped.Inc()
		rq.decided(accesslog.Stopped)
		s.writeQueue(rq, a, rq.tok, answerAgain)
		return
	}
	nowSec := rq.now.Unix()
	var incs [8]crdt.Inc
	sh := rm.counted.Lock(rq.tok.ID)
	k, after := policy.Count(incs[:0], v.pol, rm.name, sh.Before(rq.tok), policy.Event{Step: policy.StepSession, At: nowSec})
	s.record(rm, k)
	sh.Put(rq.tok.ID, after, nowSec)
	sh.Unlock()
	visitors.SetCounting(&rq.tok, after)
	rm.m.admittedRequests.Inc()
	rq.decided(accesslog.Admitted)
	s.proxyVisit(rq, v)
}

// serveEarlyCheckIn answers a visitor back earlier than the refresh interval
// its token was given: the page again, but no attempt, so refreshing faster
// gains nothing.
func (s *Server) serveEarlyCheckIn(rq *request, a *allocation) {
	visitors.SetCounting(&rq.tok, rq.before)
	rq.rm.m.earlyCheckIns.Inc()
	rq.decided(accesslog.Queued)
	s.writeQueue(rq, a, rq.tok, answerAgain)
}

// decide takes a new visitor, or a queued one checking in, through the
// challenge and the room's allocation (policy.Request), counts what the
// decision changes, and answers with it.
func (s *Server) decide(rq *request, a *allocation) {
	rm := rq.rm
	if rq.fresh {
		rq.tok = cookie.Token{ID: randomID(), Priority: rq.group}
		rq.arrive()
	}
	gated, verdict := s.challengeStep(rq, a)
	var hold holding
	defer hold.release()
again:
	nowSec := rq.now.Unix()
	sh := rm.counted.Lock(rq.tok.ID)
	if !rq.fresh {
		rq.before = sh.Before(rq.tok)
		if policy.EarlyCheckIn(rq.before, nowSec) || rq.before.Admitted() {
			// Another request of the same token was counted meanwhile (a
			// browser's parallel requests): this one counts nothing.
			sh.Unlock()
			s.serveEarlyCheckIn(rq, a)
			return
		}
	}
	if rq.tok.Infinite || gated {
		s.holdVisitor(rq, a, sh, verdict)
		return
	}
	q := s.request(rq, a.view, verdict)
	rm.mu.RLock()
	a = rm.alloc.Load()
	q.HeldSince = hold.first()
	q.Group, q.GroupAdmitted = s.priorityGroup(rq, a)
	d := q.Decide(a)
	if d.Hold && hold.ok(s, rq, a) {
		// Queued only for the slots this node keeps back for what the
		// others may have admitted unheard: decide again on the next
		// allocation rather than send the visitor away for a refresh
		// interval. Nothing was counted yet.
		rm.mu.RUnlock()
		sh.Unlock()
		if hold.wait(rq, a) {
			if rq.fresh {
				rq.before = policy.HeldArrival(hold.first(), rq.now)
				visitors.SetCounting(&rq.tok, rq.before)
			}
			goto again
		}
		return // the visitor went away: nothing counted, nothing to answer
	}
	hold.decided(d.Outcome)
	hold.release()
	if d.Outcome == policy.Admit && d.Group.Name != "" {
		way := "line"
		if d.Ahead {
			way = "ahead"
		}
		s.metrics.priority().admissions.WithLabelValues(rm.name, d.Group.Name, way).Inc()
	}
	incs := incsPool.Get().(*[maxIncs]crdt.Inc)
	add, after := d.Count(incs[:0], a, a.view.pol, rm.name, s.jitter)
	if len(add) > 0 {
		s.node.Add(add...)
	}
	incsPool.Put(incs)
	rm.mu.RUnlock()
	if d.Outcome != policy.Bypass && (!rq.fresh || after.Counted != 0) {
		// A first request counted nowhere (queued or turned away) keeps
		// no entry: a flood of cookieless requests leaves nothing behind.
		sh.Put(rq.tok.ID, after, nowSec)
	}
	sh.Unlock()
	visitors.SetCounting(&rq.tok, after)
	s.answer(rq, a, d.Outcome)
}

// incsPool holds the buffers a queued request's counter increments are
// written in (policy.Count appends to the one it is given): the compiler
// cannot tell that policy.Count keeps none, so a buffer on the stack would
// be moved to the heap for every request. gossip.Node.Add copies what it
// is given, so a buffer goes back once added.
var incsPool = sync.Pool{New: func() any { return new([maxIncs]crdt.Inc) }}

// maxIncs is room for the increments of one request's step.
const maxIncs = 12

// arrive dates a new visitor's token by its request's time: its arrival
// bucket and when in the minute it came (policy.NewCounting).
func (rq *request) arrive() {
	rq.before = policy.NewCounting(rq.now)
	visitors.SetCounting(&rq.tok, rq.before)
}

// request is the decision a request asks for (policy.Request), before its
// priority group and the allocation it is decided by: the visitor as the
// node counts it, the shuffle of an event's start, and the challenge.
func (s *Server) request(rq *request, v *view, verdict policy.Verdict) policy.Request {
	q := policy.Request{
		Fresh: rq.fresh, Before: rq.before, At: rq.now,
		Challenged: rq.rm.challenge != nil && !rq.tok.Verified, Verdict: verdict,
	}
	if e := v.event; v.phase == config.EventActive && e.ShuffleAtEventStart && e.IsPrequeued(rq.before.Bucket) {
		// A shuffle at the event's start gives the visitor a new bucket.
		q.Shuffled = shuffledBucket(s.shuffleKey, rq.rm.name, e, rq.tok.ID)
	}
	return q
}

// answer carries out a decision: the origin, the queue page, the reject
// page, or straight through.
func (s *Server) answer(rq *request, a *allocation, out policy.Outcome) {
	rm := rq.rm
	switch out {
	case policy.Admit:
		rm.m.admitted.Inc()
		rm.m.admittedRequests.Inc()
		rq.decided(accesslog.Admitted)
		s.proxyVisit(rq, a.view)
	case policy.Queue:
		rm.m.queued.Inc()
		if rq.fresh {
			rq.decided(accesslog.FirstPage)
		} else {
			rq.decided(accesslog.Queued)
		}
		s.writeQueue(rq, a, rq.tok, newTokenAnswer(rq.fresh))
	case policy.Reject:
		rm.m.rejected.Inc()
		rq.decided(accesslog.Refused)
		if a.view.pol.QueueingMethod != policy.MethodReject {
			// The queue is full: say so, and let the page try again later.
			// The visitor is not counted as waiting and keeps no token.
			s.writeQueue(rq, a, rq.tok, answerAgain)
			return
		}
		clearCookie(rq.w.Header(), a.view, rm.cookieName, rq.https)
		writeRejectPage(rq.w, a.view)
	default: // policy.Bypass
		rm.m.bypassed.Inc()
		rq.decided(accesslog.Bypassed)
		rq.out.pass(rq.w, rq.r, rm)
	}
}

// record adds a request's increments to the node's entries, ordered against
// the allocator like every admission (see room.mu).
func (s *Server) record(rm *room, k []crdt.Inc) {
	if len(k) == 0 {
		return
	}
	rm.mu.RLock()
	s.node.Add(k...)
	rm.mu.RUnlock()
}

// holdVisitor answers a visitor who is not decided on: one in the infinite
// queue, or one who has not solved the challenge while the room queues
// (under infinite_queue). Neither is counted as waiting, so bots neither
// take slots nor lengthen the estimates of the people behind them; both get
// the same page, headers and cookie as a real queued visitor. sh is the
// token's shard, locked (nil for a token without an id); holdVisitor
// releases it. verdict is what the challenge made of the visitor.
func (s *Server) holdVisitor(rq *request, a *allocation, sh *visitors.Shard, verdict policy.Verdict) {
	rm, tok, fresh := rq.rm, rq.tok, rq.fresh
	nowSec := rq.now.Unix()
	if tok.Infinite {
		rm.m.infinite.Inc()
	} else {
		rm.m.challenged.Inc()
	}
	rq.decided(accesslog.Challenge)
	incs := incsPool.Get().(*[maxIncs]crdt.Inc)
	defer incsPool.Put(incs)
	add, after := policy.Count(incs[:0], a.view.pol, rm.name, rq.before, policy.Event{Step: policy.StepHold, Fresh: fresh, Infinite: tok.Infinite, Verdict: verdict, Refresh: policy.JitteredRefresh(s.jitter()), At: nowSec})
	s.record(rm, add)
	if !fresh {
		sh.Put(tok.ID, after, nowSec)
	}
	sh.Unlock()
	visitors.SetCounting(&rq.tok, after)
	s.writeQueue(rq, a, rq.tok, newTokenAnswer(fresh))
}

// newTokenAnswer is the answer that sets a renewed token: a new visitor's
// first one carries the cookie check.
func newTokenAnswer(fresh bool) queueAnswer {
	if fresh {
		return answerFirst
	}
	return answerCounted
}

// randomID draws a visitor's id from the system's randomness: it decides a
// shuffled pre-queue's order, so it must not be predictable.
func randomID() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// openToken reads the room's cookie. Anything that does not open is a new
// visitor (fresh); the reason is counted, never shown.
func (s *Server) openToken(rm *room, r *http.Request, now time.Time) (cookie.Token, bool, string) {
	c, err := r.Cookie(rm.cookieName)
	if err != nil {
		return cookie.Token{}, true, ""
	}
	tok, err := s.keys.Open(c.Value, rm.name, now)
	if err != nil {
		s.metrics.cookieErrors.WithLabelValues(rm.name, cookieErrorReason(err)).Inc()
		return cookie.Token{}, true, ""
	}
	if tok.Admitted() && s.revoked.Has(rm.name, tok.ID) {
		// A session the origin revoked, sent again by a client that kept
		// the old cookie: a new visitor like any other.
		s.metrics.cookieErrors.WithLabelValues(rm.name, "revoked").Inc()
		return cookie.Token{}, true, ""
	}
	return tok, false, c.Value
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

// proxyVisit sends an admitted visitor on to the origin (rq.out).
//
// A page load on the cookie check's address (marked) is sent to the clean
// address instead, with the cookie, and gets there on its next request:
// otherwise the visitor would land on the origin's page under the marked
// address, and a friend opening a link copied from it within the marker's
// life would be told that cookies are required.
func (s *Server) proxyVisit(rq *request, v *view) {
	w, r := rq.w, rq.r
	vis := &visit{rm: rq.rm, v: v, tok: rq.tok, https: rq.https, sealed: rq.sameCookie(), session: !rq.fresh && rq.sent.Admitted()}
	if rq.marked && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h := w.Header()
		s.setCookie(h, vis, s.ringNow().Unix())
		h.Set("Location", localURL(r.URL, ""))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	rq.out.admit(s, w, r, vis)
}

func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setCookie writes the visit's room's cookie carrying its token.
func (s *Server) setCookie(h http.Header, vis *visit, now int64) {
	rm, v, tok, https := vis.rm, vis.v, vis.tok, vis.https
	maxAge := tok.ExpiresAt - now
	if maxAge < 1 {
		maxAge = 1
	}
	b := make([]byte, 0, 256)
	b = append(b, rm.cookieName...)
	b = append(b, '=')
	if vis.sealed != "" {
		b = append(b, vis.sealed...)
	} else {
		b = s.keys.AppendSeal(b, rm.name, tok)
	}
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
func appendCookieAttrs(b []byte, ca *config.CookieAttributes, https bool) []byte {
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
