package edge

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/clientaddr"
	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/edge/visitors"
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
// (waitroom_priority_codes_total{result="invalid"}) against the client's
// address and, for a visitor with a cookie, against its token too (an
// address shared by a whole office, or a proxy that names none, must not be
// the only handle on a guesser who keeps its cookie). After visitors.GuessBurst
// failures in a row on either, a further invalid code is answered 429 for
// visitors.GuessWindow, then one attempt per GuessWindow. A valid code is
// always checked and taken: another visitor's failures from the same
// address never lock out a code holder.
const codeParam = "__waitroom_code"

// redeemCode checks a code the request carried and, when it is good and has
// a use left, records the use and sets the visitor's priority group. It
// reports true when it has answered the request itself (an invalid code
// from an address or visitor slowed for failing too often).
func (s *Server) redeemCode(rq *request, a *allocation, text string) bool {
	rm, now := rq.rm, rq.now
	pm := s.metrics.priority()
	c, err := cookie.NewCodeSigner(s.keys).Verify(text, rm.name, now)
	guessers := [2]string{"addr " + clientaddr.Of(rq.r)}
	if !rq.fresh {
		guessers[1] = "visitor " + strconv.FormatUint(rq.tok.ID, 16)
	}
	result := "accepted"
	switch {
	case errors.Is(err, cookie.ErrCodeExpired):
		result = "expired"
	case err != nil && (rm.codes.Slowed(guessers[0], now) || guessers[1] != "" && rm.codes.Slowed(guessers[1], now)):
		pm.codes.WithLabelValues(rm.name, "slowed").Inc()
		rq.decided(accesslog.Refused)
		rq.w.Header().Set("Retry-After", strconv.Itoa(int(visitors.GuessWindow/time.Second)))
		l := visitorLanguage(rq, a.view)
		writeCodePage(rq.w, http.StatusTooManyRequests, a.view, l, l.S("code_too_many"))
		return true
	case err != nil:
		result = "invalid"
		for _, g := range guessers {
			if g != "" {
				rm.codes.Failed(g, now)
			}
		}
	default:
		// Only the visitor's own record is cleared: a code holder at a
		// shared address does not wipe a guesser's failures there.
		if guessers[1] != "" {
			rm.codes.Succeeded(guessers[1])
		}
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
	rq.decided(accesslog.Refused)
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

// setPriorityVars fills the queue page's priority code variables: the code
// form shows in a room with priority groups, to visitors without a group.
func setPriorityVars(v *queuepage.Vars, rq *request, vw *view, tok cookie.Token) {
	if len(vw.cfg.PriorityGroups) == 0 || tok.Priority != "" || v.CookiesRequired {
		return
	}
	v.PriorityCodes = true
	v.PriorityCodeParam = codeParam
	v.PriorityCodeMessage = codeResultText(visitorLanguage(rq, vw), rq.codeResult)
}
