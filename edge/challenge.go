package edge

import (
	"math"
	"time"

	"github.com/waitroom/waitroom/edge/challenge"
	"github.com/waitroom/waitroom/edge/clientaddr"
	"github.com/waitroom/waitroom/policy"
)

// The bot challenge, as in Cloudflare's "Banish bots from your Waiting Room
// and improve wait times for real users". While a room queues, its queue page
// carries a Turnstile-style widget; the page sends the widget's token back as
// the query parameter challengeParam, and the node checks it against the
// provider's siteverify endpoint (Turnstile, hCaptcha and reCAPTCHA speak
// the same protocol). A solved challenge is remembered in the sealed token.
// With turnstile_action infinite_queue, a visitor who fails is flagged in its
// token and held in an infinite queue that looks exactly like the real one
// and never admits; one who never solves is never decided on while the room
// queues. With log, challenges are only counted.
const challengeParam = challenge.Param

// challengeStep runs a queued (or new) visitor's challenge before the
// decision: it checks a solution the visitor sent, updates rq's token and
// returns the verdict, which the counter rule counts in the analytics with
// the request. It reports gated when the visitor must not be decided on (an
// unsolved challenge while the room queues, under infinite_queue).
func (s *Server) challengeStep(rq *request, a *allocation) (gated bool, verdict policy.Verdict) {
	r, rm, tok, fresh := rq.r, rq.rm, &rq.tok, rq.fresh
	ch := rm.challenge
	if ch == nil || tok.Infinite || tok.Verified {
		return false, policy.VerdictNone
	}
	if sol := rq.solution; sol != "" {
		v, err := ch.Check(r.Context(), sol, clientaddr.Of(r))
		switch v {
		case challenge.Solved:
			tok.Verified = true
			verdict = policy.VerdictSolved
		case challenge.Failed:
			verdict = policy.VerdictFailed
			if ch.Infinite {
				tok.Infinite = true
			}
		default:
			s.metrics.challengeErrors.WithLabelValues(rm.name).Inc()
			s.log.Warn().Err(err).Str("room", rm.name).Bool("fail_open", ch.FailOpen).Msg("challenge verifier unavailable")
			if ch.FailOpen {
				tok.Verified = true
			}
		}
		if tok.Verified || tok.Infinite {
			return false, verdict
		}
	} else if !fresh && queueing(a) {
		verdict = policy.VerdictUnsolved
	}
	// Only while the room queues: a room with room to spare lets everyone
	// in, as it would without a challenge.
	return ch.Infinite && queueing(a), verdict
}

func queueing(a *allocation) bool {
	st := a.Status()
	return st == policy.StatusQueueing || st == policy.StatusQueueAll
}

// infiniteEstimate is what a visitor in the infinite queue is told: the
// real estimate for its bucket while there is one, and below that a curve
// that keeps falling ever more slowly and never reaches zero, so the page
// looks like a long queue that moves. While the real estimate is unknown it
// is unknown here too.
func infiniteEstimate(a *allocation, bucket int64, now time.Time) policy.Estimate {
	est := a.Estimate(bucket)
	if !est.WaitTimeKnown {
		// While nobody's wait is known, the real page says so; so does this.
		return est
	}
	waited := now.Sub(time.Unix(bucket*60, 0)).Minutes()
	floor := int(math.Ceil(1 + 14*10/(10+math.Max(waited, 0))))
	w := max(est.WaitTime, floor)
	est.WaitTime, est.WaitTimeKnown = w, true
	est.Eligible = false
	if est.PositionKnown {
		// A place in line that follows the wait, as a real one would.
		est.Position = max(est.Position, int64(float64(w)*a.Summary().AdmissionRate))
	}
	if a.view.pol.QueueingMethod == policy.Random {
		m := policy.WholeMinutes
		est.SetPercentiles([3]policy.PageWait{m(max(est.WaitTime25, w/2, 1)), m(max(est.WaitTime50, w)), m(max(est.WaitTime75, w*3/2))})
	} else {
		est.SetWait(w)
	}
	return est
}
