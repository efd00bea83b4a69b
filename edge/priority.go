package edge

import (
	crand "crypto/rand"
	"encoding/csv"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/policy"
)

// Priority access. An operator mints codes for one of a room's priority
// groups (cookie.CodeSigner: self-validating, keyed from the cookie key
// file, so no node needs a list of them). A visitor presents one in the
// query parameter codeParam, from a link or the form on the queue page; the
// parameter is taken off the request before anything else, so the origin
// never sees it. A valid code sets the visitor's priority group in its
// sealed token, and the group's holders are decided ahead of the line
// within the group's share (policy.DecidePriority), as admissions counted
// like any other.
//
// A use is recorded in the ring's marks (gossip.Node.Mark): a single-use
// code is one mark, a code of n uses is n numbered marks, each claimed
// once. A node claims a mark only when it does not hold it, and sends a new
// mark at once to every peer over the reliable stream. Two nodes that claim
// the same mark before either hears of the other's both succeed: a
// single-use code presented at k nodes within that window, one propagation
// delay (a reliable send: about a round trip, well under one gossip round),
// admits at most k visitors, that is at most k-1 beyond the first, and
// presented at two nodes at most one beyond the first. A node never admits
// one code twice itself. Revoking a code marks it revoked the same way.
//
// Guessing gains nothing: a code carries a 128-bit MAC, so a forged one
// passes with probability 2^-128. Failures are counted
// (waitroom_priority_codes_total{result="invalid"}), and an address that
// fails codeFailBurst times in a row is answered 429 without a check for
// codeFailWindow, then allowed one attempt per codeFailWindow.
const codeParam = "__waitroom_code"

const (
	codeFailBurst  = 5
	codeFailWindow = 30 * time.Second
	// codeGuardMax bounds the addresses the guard remembers; past it the
	// oldest half is forgotten.
	codeGuardMax = 100_000
)

// codeGuard slows addresses that keep presenting invalid codes.
type codeGuard struct {
	mu    sync.Mutex
	fails map[string]codeFails
}

type codeFails struct {
	n    int
	last time.Time
}

// slowed reports whether ip must wait before its next attempt.
func (g *codeGuard) slowed(ip string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.fails[ip]
	return ok && f.n >= codeFailBurst && now.Sub(f.last) < codeFailWindow
}

// failed records a failed attempt by ip.
func (g *codeGuard) failed(ip string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails == nil {
		g.fails = map[string]codeFails{}
	}
	if len(g.fails) >= codeGuardMax {
		cut := now.Add(-codeFailWindow)
		for k, f := range g.fails {
			if f.last.Before(cut) || len(g.fails) >= codeGuardMax/2 {
				delete(g.fails, k)
			}
		}
	}
	f := g.fails[ip]
	if now.Sub(f.last) >= 10*codeFailWindow {
		f.n = 0 // a failure long after the last starts afresh
	}
	g.fails[ip] = codeFails{n: f.n + 1, last: now}
}

// succeeded forgets ip's failures.
func (g *codeGuard) succeeded(ip string) {
	g.mu.Lock()
	delete(g.fails, ip)
	g.mu.Unlock()
}

// priorityMetrics count what codes did on this node.
type priorityMetrics struct {
	codes      *prometheus.CounterVec
	admissions *prometheus.CounterVec
}

func newPriorityMetrics(reg *prometheus.Registry) *priorityMetrics {
	m := &priorityMetrics{
		codes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "priority_codes_total",
			Help: "Priority codes presented, by room and result: accepted (a use recorded), kept (the visitor already held the code's group), used (no use left), revoked, expired, invalid (malformed, forged or for another room), unknown_group (the room has no such group), slowed (the address failed too often and was answered 429 without a check).",
		}, []string{"room", "result"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "priority_admissions_total",
			Help: "Admissions of priority code holders, by room, group and way: ahead (ahead of the line, within the group's share) or line (in the line like any visitor).",
		}, []string{"room", "group", "way"}),
	}
	reg.MustRegister(m.codes, m.admissions)
	return m
}

// priority returns the node's priority metrics.
func (m *metrics) priority() *priorityMetrics { return m.prio }

// redeemCode checks a code the request carried and, when it is good and has
// a use left, records the use and sets the visitor's priority group. It
// reports true when it has answered the request itself (an address slowed
// for failing too often).
func (s *Server) redeemCode(rq *request, a *allocation, text string) bool {
	rm, now := rq.rm, rq.now
	pm := s.metrics.priority()
	ip := clientIP(rq.r)
	if rm.codes.slowed(ip, now) {
		pm.codes.WithLabelValues(rm.name, "slowed").Inc()
		rq.w.Header().Set("Retry-After", strconv.Itoa(int(codeFailWindow/time.Second)))
		l := visitorLanguage(rq, a.view)
		writeCodePage(rq.w, http.StatusTooManyRequests, a.view, l, l.S("code_too_many"))
		return true
	}
	c, err := cookie.NewCodeSigner(s.keys).Verify(text, rm.name, now)
	result := "accepted"
	switch {
	case errors.Is(err, cookie.ErrCodeExpired):
		result = "expired"
	case err != nil:
		result = "invalid"
		rm.codes.failed(ip, now)
	default:
		rm.codes.succeeded(ip)
		result = s.useCode(rq, a, c)
	}
	pm.codes.WithLabelValues(rm.name, result).Inc()
	rq.codeResult = result
	if result != "accepted" && result != "kept" {
		s.log.Debug().Str("room", rm.name).Str("result", result).Str("code_id", c.IDString()).Msg("priority code refused")
	}
	return false
}

// useCode claims a use of a verified code and returns the result.
func (s *Server) useCode(rq *request, a *allocation, c cookie.Code) string {
	rm := rq.rm
	if _, _, ok := a.view.cfg.PriorityGroup(c.Group); !ok {
		return "unknown_group"
	}
	if !rq.fresh && rq.tok.Priority == c.Group {
		// The same visitor following its link again: no second use.
		return "kept"
	}
	if s.node.HasMark(revokedMark(rm.name, c)) {
		return "revoked"
	}
	if !s.claimUse(rm.name, c) {
		return "used"
	}
	rq.group = c.Group
	rq.tok.Priority = c.Group
	var incs [1]crdt.Inc
	k, _ := policy.Count(incs[:0], a.view.pol, rm.name, policy.Counting{}, policy.Event{Step: policy.StepCodeUse, Group: c.Group, At: rq.now.Unix()})
	s.record(rm, k)
	return "accepted"
}

// useMark names use k (1-based) of code c in room; a single-use code's one
// use is k=1.
func useMark(room string, c cookie.Code, k int) string {
	if c.Uses == 1 {
		return "code/" + room + "/" + c.IDString()
	}
	return "code/" + room + "/" + c.IDString() + "/" + strconv.Itoa(k)
}

func revokedMark(room string, c cookie.Code) string {
	return "revoked/" + room + "/" + c.IDString()
}

// claimUse claims the first use of c this node does not know to be taken.
func (s *Server) claimUse(room string, c cookie.Code) bool {
	for k := 1; k <= int(c.Uses); k++ {
		id := useMark(room, c, k)
		if s.node.HasMark(id) {
			continue
		}
		if s.node.Mark(id, c.Expires) {
			return true
		}
	}
	return false
}

// usesOf counts the uses of c this node knows of.
func (s *Server) usesOf(room string, c cookie.Code) int {
	n := 0
	for k := 1; k <= int(c.Uses); k++ {
		if s.node.HasMark(useMark(room, c, k)) {
			n++
		}
	}
	return n
}

// priorityGroup is the priority group the visitor holds, as the decision
// needs it (policy.Request.Group), and the ring's admissions of its holders
// this minute as far as this node has heard of them when the group has a
// cap of its own. A visitor without a group, or whose group the room no
// longer has, is decided as any other. The caller holds rm.mu shared, as
// for every decision.
func (s *Server) priorityGroup(rq *request, a *allocation) (policy.Group, uint64) {
	if rq.tok.Priority == "" {
		return policy.Group{}, 0
	}
	g, i, ok := a.view.cfg.PriorityGroup(rq.tok.Priority)
	if !ok {
		return policy.Group{}, 0
	}
	var admitted uint64
	if g.NewUsersPerMinute > 0 {
		admitted = s.groupAdmitted(policy.GroupAdmittedKey(rq.rm.name, g.Name, unixMinute(rq.now)))
	}
	return policy.Group{Name: g.Name, Index: i, Share: g.Share, NewUsersPerMinute: g.NewUsersPerMinute}, admitted
}

// groupAdmitted is the ring's admissions of a group's holders in the cell
// key names, as this node has heard of them (its own included).
func (s *Server) groupAdmitted(key crdt.Key) uint64 {
	var n uint64
	s.node.Read(func(st *crdt.State) { n = st.Value(key) })
	return n
}

// inviteOnlyRefused answers a visitor without a priority group in an
// invite-only room, and reports whether it did. Admitted visitors keep
// their sessions.
func (s *Server) inviteOnlyRefused(rq *request, a *allocation) bool {
	if !a.view.cfg.InviteOnly || rq.tok.Priority != "" || (!rq.fresh && rq.before.Admitted()) {
		return false
	}
	l := visitorLanguage(rq, a.view)
	msg := l.S("invite_only")
	if rq.codeResult != "" {
		msg = codeResultText(l, rq.codeResult)
	}
	writeCodePage(rq.w, http.StatusForbidden, a.view, l, msg)
	return true
}

// codeResultText is what a visitor is told, in the page's language, about
// the code they presented.
func codeResultText(l *i18n.Lang, result string) string {
	switch result {
	case "", "accepted", "kept":
		return ""
	case "used":
		return l.S("code_used")
	case "revoked":
		return l.S("code_revoked")
	case "expired":
		return l.S("code_expired")
	}
	return l.S("code_invalid")
}

var codePage = template.Must(template.New("code").Parse(`<!doctype html>
<html lang="{{.Lang}}" dir="{{.Dir}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title></head>
<body><main><h1>{{.Title}}</h1><p>{{.Message}}</p>
<form method="get"><label>{{.Label}} <input name="{{.Param}}" autocomplete="off" required></label> <button>{{.Button}}</button></form>
</main></body></html>
`))

// writeCodePage answers with the built-in page that asks for a code.
func writeCodePage(w http.ResponseWriter, status int, v *view, l *i18n.Lang, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	title := v.cfg.Description
	if title == "" {
		title = "Waiting room"
	}
	_ = codePage.Execute(w, map[string]string{"Title": title, "Message": msg, "Param": codeParam,
		"Lang": l.Tag, "Dir": l.Dir(), "Label": l.S("invite_label"), "Button": l.S("code_button")})
}

// The admin API for codes.

// maxMint is the most codes one request mints.
const maxMint = 100_000

func (s *Server) registerCodeAPI(mux *http.ServeMux) {
	mux.HandleFunc("POST /rooms/{name}/codes", s.serveMint)
	mux.HandleFunc("POST /rooms/{name}/codes/revoke", s.serveRevoke)
	mux.HandleFunc("POST /rooms/{name}/codes/status", s.serveCodeStatus)
}

// serveMint mints codes and answers with them as CSV: code, id, group,
// uses, expires (RFC 3339), link.
func (s *Server) serveMint(w http.ResponseWriter, r *http.Request) {
	rm := s.room(r.PathValue("name"))
	if rm == nil {
		writeError(w, http.StatusNotFound, "no room named %q", r.PathValue("name"))
		return
	}
	var req api.MintRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if _, _, ok := rm.cfg.PriorityGroup(req.Group); !ok {
		writeError(w, http.StatusBadRequest, "group: room %q has no priority group %q", rm.name, req.Group)
		return
	}
	if req.Count < 1 || req.Count > maxMint {
		writeError(w, http.StatusBadRequest, "count: %d must be 1 to %d", req.Count, maxMint)
		return
	}
	if req.Uses < 1 || req.Uses > cookie.MaxCodeUses {
		writeError(w, http.StatusBadRequest, "uses: %d must be 1 to %d", req.Uses, cookie.MaxCodeUses)
		return
	}
	if d := time.Duration(req.Expires); d < time.Minute || d > 400*24*time.Hour {
		writeError(w, http.StatusBadRequest, "expires: %v must be 1m to 9600h", d)
		return
	}
	expires := s.ringNow().Add(time.Duration(req.Expires)).Unix()
	signer := cookie.NewCodeSigner(s.keys)
	link := roomLink(rm.cfg)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"code", "id", "group", "uses", "expires", "link"})
	for range req.Count {
		text, c, err := signer.Mint(crand.Reader, rm.name, cookie.Code{Group: req.Group, Expires: expires, Uses: uint16(req.Uses)})
		if err != nil {
			s.log.Error().Err(err).Msg("mint priority code")
			return
		}
		_ = cw.Write([]string{text, c.IDString(), c.Group, strconv.Itoa(int(c.Uses)), time.Unix(c.Expires, 0).UTC().Format(time.RFC3339), link + url.QueryEscape(text)})
	}
	cw.Flush()
	s.log.Info().Str("room", rm.name).Str("group", req.Group).Int("count", req.Count).Int("uses", req.Uses).Str("by", r.RemoteAddr).Msg("priority codes minted through the admin API")
}

// roomLink is the start of a code's link: the room's host and path with
// the code parameter (only the path, for a room without a host of its own).
func roomLink(c *config.Room) string {
	path := c.Path
	if path == "" {
		path = "/"
	}
	if c.Host == "" {
		return path + "?" + codeParam + "="
	}
	return "https://" + c.Host + path + "?" + codeParam + "="
}

func (s *Server) readCodes(w http.ResponseWriter, r *http.Request) (*room, []string, bool) {
	rm := s.room(r.PathValue("name"))
	if rm == nil {
		writeError(w, http.StatusNotFound, "no room named %q", r.PathValue("name"))
		return nil, nil, false
	}
	var req api.CodesRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return nil, nil, false
	}
	return rm, req.Codes, true
}

// serveRevoke revokes codes: each is marked revoked across the ring until
// its own expiry, and refused from then on (visitors who already hold its
// group keep it).
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	rm, n := s.eachCode(w, r, func(rm *room, c cookie.Code, err error, st *api.CodeStatus) {
		if err != nil {
			return
		}
		s.node.Mark(revokedMark(rm.name, c), c.Expires)
		st.Revoked = true
	})
	if rm != nil {
		s.log.Info().Str("room", rm.name).Int("codes", n).Str("by", r.RemoteAddr).Msg("priority codes revoked through the admin API")
	}
}

// serveCodeStatus reports, for each code, its uses as this node knows them
// and whether it is revoked.
func (s *Server) serveCodeStatus(w http.ResponseWriter, r *http.Request) {
	s.eachCode(w, r, nil)
}

// eachCode answers a request naming codes with one status per code: what
// the code says and, when it verifies (or has only expired), its uses as
// this node knows them and whether it is revoked, after act (when not nil)
// has had its turn with it. It returns the room and how many codes it
// answered for, or a nil room when the request was refused.
func (s *Server) eachCode(w http.ResponseWriter, r *http.Request, act func(*room, cookie.Code, error, *api.CodeStatus)) (*room, int) {
	rm, codes, ok := s.readCodes(w, r)
	if !ok {
		return nil, 0
	}
	signer := cookie.NewCodeSigner(s.keys)
	now := s.ringNow()
	out := make([]api.CodeStatus, 0, len(codes))
	for _, text := range codes {
		c, err := signer.Verify(text, rm.name, now)
		st := api.CodeStatus{ID: c.IDString(), Group: c.Group, Uses: int(c.Uses)}
		if err != nil {
			st.Error = err.Error()
		}
		if act != nil {
			act(rm, c, err, &st)
		}
		if err == nil || errors.Is(err, cookie.ErrCodeExpired) {
			st.Used = s.usesOf(rm.name, c)
			st.Revoked = st.Revoked || s.node.HasMark(revokedMark(rm.name, c))
			st.Expires = time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)
		}
		out = append(out, st)
	}
	writeJSON(w, http.StatusOK, out)
	return rm, len(codes)
}

// priorityFigures sums the room's priority counters by group over minutes
// from..to.
func (s *Server) priorityFigures(rm *room, from, to int64) map[string]api.GroupFigures {
	if len(rm.cfg.PriorityGroups) == 0 {
		return nil
	}
	var adm, uses map[int64]uint64
	s.node.Read(func(st *crdt.State) {
		adm = st.SumByBucket(rm.name, crdt.PriorityAdmitted, from, to)
		uses = st.SumByBucket(rm.name, crdt.PriorityCodeUses, from, to)
	})
	out := map[string]api.GroupFigures{}
	for _, g := range rm.cfg.PriorityGroups {
		b := crdt.GroupBucket(g.Name)
		out[g.Name] = api.GroupFigures{Admitted: adm[b], CodeUses: uses[b]}
	}
	return out
}

// setPriorityVars fills the queue page's priority code variables: the code
// form shows in a room with priority groups, to visitors without a group.
func setPriorityVars(v *pageVars, rq *request, vw *view, tok cookie.Token) {
	if len(vw.cfg.PriorityGroups) == 0 || tok.Priority != "" || v.CookiesRequired {
		return
	}
	v.PriorityCodes = true
	v.PriorityCodeParam = codeParam
	v.PriorityCodeMessage = codeResultText(visitorLanguage(rq, vw), rq.codeResult)
}
