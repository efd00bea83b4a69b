package edge

import (
	"bytes"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/clientaddr"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/queuepage"
)

// Forward-auth mode. A reverse proxy the operator already runs asks the
// node, for each request, whether it may go on to the origin; the node
// decides exactly as in proxy mode (the same steps of visit.go, see
// Server.visit), and only the last step differs: a visitor let through is
// answered 200 with its renewed cookie, which the proxy passes on, instead
// of being proxied; anyone else gets the queue page (or its JSON, or the
// cookies-required, reject or stop page) with its status, Refresh and
// cookie, which the proxy sends to the visitor instead of the origin's.
//
// The endpoint's paths, on its own listener (forward_auth.listen):
//
//   - /auth: Caddy forward_auth and Traefik forwardAuth. The request decided
//     on is read from X-Forwarded-Method, X-Forwarded-Host, X-Forwarded-Uri
//     (path and query) and X-Forwarded-Proto; its cookies and other headers
//     are the auth request's own, which these proxies copy from it. Both
//     let a request through on any 2xx and send any other answer to the
//     visitor, so a queue page whose room answers 200 or 202
//     (queueing_status_code) is sent as 429 here.
//   - /envoy/…: Envoy's ext_authz HTTP service with path_prefix "/envoy":
//     Envoy appends the original path and query to the prefix and keeps
//     the method and Host; the rest as /auth.
//   - /nginx/auth: nginx auth_request, which passes on only 2xx, 401 and
//     403 and drops the body. Headers as /auth (the shipped configuration
//     sets them). An answer other than "go on" is kept on the node for a
//     few seconds and the node answers 401 with its id in
//     X-Waitroom-Answer; nginx's error_page 401 then fetches it from
//     /nginx/answer/{id} on the same node and sends it to the visitor with
//     its own status and headers. One decision, one count, the whole answer.
//   - /revoke: the origin's command to end sessions (POST, with the
//     visitor's Cookie header): in this mode the origin's answer no longer
//     passes through the node, so the origin tells it directly. See
//     forwardHandler.revoke.
//
// Whoever can reach the endpoint chooses the request it decides on, so the
// listener answers only the addresses in forward_auth.trusted_proxies
// (loopback by default) and refuses everyone else with 403, counted and
// logged. Visitors never reach it; they reach the proxy.
const (
	forwardAuthPath    = "/auth"
	forwardEnvoyPrefix = "/envoy"
	forwardNginxPath   = "/nginx/auth"
	forwardAnswerPath  = "/nginx/answer/"
	forwardRevokePath  = "/revoke"
	// answerHeader carries the id of an answer kept for nginx.
	answerHeader = "X-Waitroom-Answer"
)

// forwardHandler is the forward-auth endpoint.
type forwardHandler struct {
	s       *Server
	trusted []netip.Prefix
	answers answerStore
	refused *prometheus.CounterVec
	// lastWarn is when a refusal was last logged (unix seconds): at most
	// once a minute, however many there are.
	lastWarn atomic.Int64
}

func newForwardHandler(s *Server) (*forwardHandler, error) {
	trusted, err := s.cfg.ForwardAuth.TrustedPrefixes()
	if err != nil {
		return nil, err
	}
	h := &forwardHandler{s: s, trusted: trusted}
	h.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "forward_auth_refused_total",
		Help: "Requests to the forward-auth endpoint it refused, by reason: untrusted_source (an address not in forward_auth.trusted_proxies), bad_request (the original method, host or address missing or malformed: a proxy configured wrongly), answer_missing (nginx fetched a kept answer that had expired or was never kept).",
	}, []string{"reason"})
	s.metrics.reg.MustRegister(h.refused)
	return h, nil
}

// ForwardAuthHandler is the forward-auth endpoint's handler (nil when
// forward_auth is off); edge/agent serves it on forward_auth.listen.
func (s *Server) ForwardAuthHandler() http.Handler {
	if s.forward == nil {
		return nil
	}
	return s.forward
}

func (h *forwardHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer h.s.recoverRequest(w, nil)
	if !h.fromTrusted(r) {
		h.refuse(w, "untrusted_source", http.StatusForbidden, "Not a trusted proxy", "This endpoint answers only the proxies listed in forward_auth.trusted_proxies.", r.RemoteAddr)
		return
	}
	p := r.URL.Path
	switch {
	case p == forwardAuthPath:
		h.decide(w, r, false, false)
	case p == forwardNginxPath:
		h.decide(w, r, false, true)
	case p == forwardEnvoyPrefix || strings.HasPrefix(p, forwardEnvoyPrefix+"/"):
		h.decide(w, r, true, false)
	case strings.HasPrefix(p, forwardAnswerPath):
		h.answer(w, strings.TrimPrefix(p, forwardAnswerPath))
	case p == forwardRevokePath:
		h.revoke(w, r)
	default:
		queuepage.WriteStatus(w, http.StatusNotFound, "Not found", "The forward-auth endpoint answers /auth, /envoy/…, /nginx/auth and /revoke.")
	}
}

// fromTrusted reports whether r comes from an address the endpoint trusts.
func (h *forwardHandler) fromTrusted(r *http.Request) bool {
	return clientaddr.PeerTrusted(r, h.trusted)
}

// refuse answers a request the endpoint will not serve, counted by reason
// and logged at most once a minute.
func (h *forwardHandler) refuse(w http.ResponseWriter, reason string, status int, title, text, detail string) {
	h.refused.WithLabelValues(reason).Inc()
	if now := time.Now().Unix(); now-h.lastWarn.Load() >= 60 {
		h.lastWarn.Store(now)
		h.s.log.Warn().Str("reason", reason).Str("detail", detail).Msg("forward-auth request refused (further refusals this minute are only counted)")
	}
	w.Header().Set("Cache-Control", "no-store")
	queuepage.WriteStatus(w, status, title, text)
}

// decide answers a proxy's question about one request: the request is
// rebuilt from what the proxy says of it and taken along the visitor path
// (Server.visit), with forwardAuth as its last step.
func (h *forwardHandler) decide(w http.ResponseWriter, r *http.Request, envoy, nginx bool) {
	s := h.s
	or, err := originalRequest(r, envoy, h.trusted)
	if err != nil {
		h.refuse(w, "bad_request", http.StatusBadRequest, "Bad forward-auth request", err.Error(), err.Error())
		return
	}
	fa := &forwardAuth{w: w, rawQuery: or.URL.RawQuery}
	var ans, logged http.ResponseWriter
	if nginx {
		ans = &keptAnswer{header: http.Header{}}
	} else {
		ans = &deniedAnswer{ResponseWriter: w}
	}
	logged = ans
	if s.access != nil {
		a := s.beginAccess(ans, or)
		a.Entry.ForwardAuth = true
		defer s.endForwardAccess(a, ans, fa)
		logged = a
	}
	rm := s.route(or)
	switch {
	case rm != nil:
		s.visit(logged, or, rm, fa)
	case s.cfg.Unrouted == config.UnroutedPass:
		u := &unrouted{s: s, pass: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fa.pass(nil, nil, nil) })}
		u.ServeHTTP(logged, or)
	default:
		(&unrouted{s: s}).ServeHTTP(logged, or)
	}
	if k, ok := ans.(*keptAnswer); ok && !fa.passed {
		h.keep(w, k)
	}
}

// endForwardAccess ends the access-log line of a forward-auth request with
// the answer the visitor gets: "go on" (the origin's answer follows,
// through the proxy) or the node's own answer, with the status the proxy
// is given for it.
func (s *Server) endForwardAccess(a *accesslog.Recorder, ans http.ResponseWriter, fa *forwardAuth) {
	switch d, _ := ans.(*deniedAnswer); {
	case fa.passed:
		a.Entry.Status, a.Entry.Bytes = http.StatusOK, 0
	case d != nil && d.status != 0:
		a.Entry.Status = d.status
	}
	s.endAccess(a)
}

// originalRequest rebuilds the request a proxy asks about from the auth
// request: its method, host, address and scheme from the headers the proxy
// set (Envoy: its own method and Host, the address after the path prefix),
// its cookies and other headers as they are, no body. The client's address
// (for bypass rules by cidr, the code guard and the challenge's verifier)
// is the right-most untrusted hop of X-Forwarded-For (clientaddr.Forwarded);
// none without one.
func originalRequest(r *http.Request, envoy bool, trusted []netip.Prefix) (*http.Request, error) {
	method := r.Header.Get("X-Forwarded-Method")
	host := r.Header.Get("X-Forwarded-Host")
	uri := r.Header.Get("X-Forwarded-Uri")
	if envoy {
		method, host = r.Method, r.Host
		uri = strings.TrimPrefix(r.RequestURI, forwardEnvoyPrefix)
		if uri == "" || uri[0] == '?' {
			uri = "/" + uri
		}
	}
	// One host, the one the proxy sends the site: a list, or the header
	// twice, means the proxy passed on a visitor's own beside its own,
	// and the node cannot tell which of them the site will get.
	if !envoy && len(r.Header.Values("X-Forwarded-Host")) > 1 || strings.Contains(host, ",") {
		return nil, fmt.Errorf("X-Forwarded-Host %q names more than one host: the proxy must send only the host it sends the site", strings.Join(r.Header.Values("X-Forwarded-Host"), ", "))
	}
	if host = strings.TrimSpace(host); host == "" {
		return nil, errors.New("X-Forwarded-Host is missing: the proxy must send the host the visitor asked for")
	}
	if method == "" || strings.ContainsAny(method, " \t\r\n/") || len(method) > 32 {
		return nil, fmt.Errorf("X-Forwarded-Method %q is not a request method: the proxy must send the visitor's", method)
	}
	if uri == "" || uri[0] != '/' {
		return nil, fmt.Errorf("X-Forwarded-Uri %q is not a path and query: the proxy must send the address the visitor asked for", uri)
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, fmt.Errorf("X-Forwarded-Uri %q does not parse: %v", uri, err)
	}
	or := r.Clone(r.Context())
	or.Method, or.Host, or.URL, or.RequestURI = method, host, u, uri
	or.Body, or.ContentLength, or.TransferEncoding = http.NoBody, 0, nil
	// Without the proxy's word for it the visitor's address is unknown,
	// never the proxy's own: a bypass rule for the proxy's network must not
	// let every visitor through.
	or.RemoteAddr = clientaddr.Forwarded(r.Header.Values("X-Forwarded-For"), trusted)
	for _, k := range []string{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host"} {
		or.Header.Del(k)
	}
	return or, nil
}

// forwardAuth is forward-auth mode's onward: the proxy is told to let the
// request go on.
type forwardAuth struct {
	w http.ResponseWriter // the proxy's auth request, not the answer's writer
	// rawQuery is the visitor's query as the proxy will send it to the
	// origin, waitroom's own parameters included.
	rawQuery string
	passed   bool
}

func (f *forwardAuth) pass(http.ResponseWriter, *http.Request, *room) {
	f.passed = true
	f.w.Header().Set("Cache-Control", "no-store")
	f.w.WriteHeader(http.StatusOK)
}

// admit answers 200 with the renewed cookie, for the proxy to pass on with
// the origin's answer. A page load whose address still carries one of
// waitroom's own parameters (a challenge's solution) is first sent to the
// clean address with its cookie, as on the cookie check's address (see
// proxyVisit): the proxy would pass the parameter on to the origin, which
// in proxy mode never sees it.
func (f *forwardAuth) admit(s *Server, w http.ResponseWriter, r *http.Request, vis *visit) {
	now := s.ringNow().Unix()
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(f.rawQuery, "__waitroom_") {
		h := w.Header()
		s.setCookie(h, vis, now)
		h.Set("Location", localURL(r.URL, ""))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	f.passed = true
	h := f.w.Header()
	s.setCookie(h, vis, now)
	if vis.session && vis.tok.ExpiresAt-now >= int64(AdmittedCacheLife/time.Second) {
		// A visitor within its session, not about to end: the same
		// cookie gets the same answer for a moment, so the proxy may keep
		// it (the shipped nginx file does) rather than ask for each of a
		// page's assets.
		h.Set("Cache-Control", admittedCacheControl)
		h.Set("Vary", "Cookie")
	} else {
		// A new admission must reach the node for every request: a kept
		// answer to a cookieless request would let the next cookieless
		// visitor in on the first one's cookie.
		h.Set("Cache-Control", "no-store")
	}
	f.w.WriteHeader(http.StatusOK)
}

// AdmittedCacheLife is how long a proxy may keep the answer that lets a
// visitor within its session go on, for requests with the same cookie (see
// forwardAuth.admit): while it does, the node does not see those requests.
// It bounds what keeping the answer delays: a revocation or the emergency
// stop takes hold at the proxy at most this much later (a second more at
// nginx, which counts whole seconds), and a session's renewal and last
// check-in follow the visitor's requests as far behind (a session lasts
// minutes). A session within this of its end is not marked. Counting is
// unchanged: a session counts once, by its cookie, however many requests
// it makes.
const AdmittedCacheLife = 2 * time.Second

var admittedCacheControl = fmt.Sprintf("max-age=%d", int(AdmittedCacheLife/time.Second))

// deniedAnswer writes an answer for a proxy that sends any non-2xx answer
// to the visitor as it is (Caddy, Traefik, Envoy) and lets a 2xx through:
// a queue page under a 2xx status goes out as 429 Too Many Requests, which
// tells the visitor and its browser the same thing.
type deniedAnswer struct {
	http.ResponseWriter
	status int // the status sent, once sent
}

func (d *deniedAnswer) WriteHeader(code int) {
	if d.status != 0 {
		return
	}
	if code >= 200 && code < 300 {
		code = http.StatusTooManyRequests
	}
	d.status = code
	d.ResponseWriter.WriteHeader(code)
}

func (d *deniedAnswer) Write(b []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return d.ResponseWriter.Write(b)
}

// keptAnswer holds an answer for nginx, to be kept and fetched.
type keptAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (k *keptAnswer) Header() http.Header { return k.header }

func (k *keptAnswer) WriteHeader(code int) {
	if k.status == 0 {
		k.status = code
	}
}

func (k *keptAnswer) Write(b []byte) (int, error) {
	k.WriteHeader(http.StatusOK)
	if k.body.Len()+len(b) > maxKeptBody {
		return 0, errors.New("answer too large to keep")
	}
	return k.body.Write(b)
}

// keep stores an answer for nginx and answers 401 with its id. When the
// store is full the 401 carries no id, and the fetch gets a short "try
// again" page instead of the answer.
func (h *forwardHandler) keep(w http.ResponseWriter, k *keptAnswer) {
	if k.status == 0 {
		k.status = http.StatusOK
	}
	if id, ok := h.answers.put(&storedAnswer{status: k.status, header: k.header, body: k.body.Bytes()}, time.Now()); ok {
		w.Header().Set(answerHeader, id)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
}

// answer serves a kept answer to nginx, once.
func (h *forwardHandler) answer(w http.ResponseWriter, id string) {
	a := h.answers.take(id, time.Now())
	if a == nil {
		h.refused.WithLabelValues("answer_missing").Inc()
		w.Header().Set("Refresh", "5")
		w.Header().Set("Cache-Control", "no-store")
		queuepage.WriteStatus(w, http.StatusServiceUnavailable, "One moment", "The waiting room is busy. This page tries again in a few seconds.")
		return
	}
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// The kept answers' limits: nginx fetches an answer within milliseconds of
// the 401, so answers live a few seconds and their total size is bounded;
// a proxy that never fetches cannot fill the node's memory.
const (
	keptAnswerLife   = 10 * time.Second
	keptAnswerBudget = 64 << 20
	maxKeptBody      = 1 << 20
)

// answerStore keeps answers for nginx by id. The zero value is ready.
type answerStore struct {
	mu    sync.Mutex
	m     map[string]*storedAnswer
	bytes int
}

type storedAnswer struct {
	status  int
	header  http.Header
	body    []byte
	expires time.Time
}

func (st *answerStore) put(a *storedAnswer, now time.Time) (string, bool) {
	var b [16]byte
	_, _ = crand.Read(b[:])
	id := hex.EncodeToString(b[:])
	a.expires = now.Add(keptAnswerLife)
	size := len(a.body) + 512
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.m == nil {
		st.m = map[string]*storedAnswer{}
	}
	if st.bytes+size > keptAnswerBudget {
		for k, v := range st.m {
			if now.After(v.expires) {
				st.bytes -= len(v.body) + 512
				delete(st.m, k)
			}
		}
		if st.bytes+size > keptAnswerBudget {
			return "", false
		}
	}
	st.m[id] = a
	st.bytes += size
	return id, true
}

func (st *answerStore) take(id string, now time.Time) *storedAnswer {
	st.mu.Lock()
	defer st.mu.Unlock()
	a := st.m[id]
	if a == nil {
		return nil
	}
	delete(st.m, id)
	st.bytes -= len(a.body) + 512
	if now.After(a.expires) {
		return nil
	}
	return a
}

// revoke is the origin command in forward-auth mode. In proxy mode the
// origin answers with Cf-Waiting-Room-Command: revoke and the node, which
// proxies that answer, ends the session; behind another proxy the answer
// goes from the origin to the proxy, so the origin tells the node itself:
//
//	POST /revoke[?room=NAME]   with the visitor's Cookie header as it came
//
// Every session cookie in it that opens for a room (of the named room only,
// with room) whose enabled_origin_commands include revoke is revoked, here
// at once and on every node within a gossip round, exactly as the header
// does in proxy mode. The answer lists the rooms whose sessions were
// revoked and clears their cookies with Set-Cookie, which the origin may
// pass on to the visitor. The sealed cookie is the authority: only the
// visitor and the origin hold it, and revoking it only ends that visitor's
// own session. The endpoint's address check applies as to every path.
func (h *forwardHandler) revoke(w http.ResponseWriter, r *http.Request) {
	s := h.s
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		queuepage.WriteStatus(w, http.StatusMethodNotAllowed, "POST only", "Revoke sessions with POST /revoke and the visitor's Cookie header.")
		return
	}
	only := r.URL.Query().Get("room")
	now := s.ringNow()
	res := struct {
		Revoked    []string `json:"revoked"`
		NotEnabled []string `json:"not_enabled,omitempty"`
	}{Revoked: []string{}}
	for _, rm := range s.rooms() {
		if only != "" && rm.name != only {
			continue
		}
		c, err := r.Cookie(rm.cookieName)
		if err != nil {
			continue
		}
		tok, err := s.keys.Open(c.Value, rm.name, now)
		if err != nil || !tok.Admitted() {
			continue
		}
		if !rm.revoke {
			res.NotEnabled = append(res.NotEnabled, rm.name)
			continue
		}
		rm.revokeSession(tok)
		clearCookie(w.Header(), rm.viewAt(now), rm.cookieName, isHTTPS(r))
		res.Revoked = append(res.Revoked, rm.name)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(res)
}
