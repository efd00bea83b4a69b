package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/edge/config"
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
const challengeParam = "__waitroom_challenge"

// provider is a challenge verifier: its widget script, its siteverify
// endpoint and the class of the widget's element.
type provider struct {
	script, verify, class string
}

// providers are the verifiers turnstile_provider may name.
var providers = map[string]provider{
	"turnstile": {"https://challenges.cloudflare.com/turnstile/v0/api.js", "https://challenges.cloudflare.com/turnstile/v0/siteverify", "cf-turnstile"},
	"hcaptcha":  {"https://js.hcaptcha.com/1/api.js", "https://api.hcaptcha.com/siteverify", "h-captcha"},
	"recaptcha": {"https://www.google.com/recaptcha/api.js", "https://www.google.com/recaptcha/api/siteverify", "g-recaptcha"},
}

// challenge is a room's compiled challenge settings.
type challenge struct {
	infinite bool // turnstile_action infinite_queue
	failOpen bool
	verify   string
	secret   string
	timeout  time.Duration
	widget   string // the HTML the {{{turnstile}}} variable renders
	client   *http.Client
}

var widgetTmpl = template.Must(template.New("w").Parse(`<script src="{{.Script}}" async defer></script>
<div class="{{.Class}}" data-sitekey="{{.Key}}" data-callback="waitroomChallengeSolved"{{if .Invisible}} data-appearance="interaction-only" data-size="invisible"{{end}}></div>
<script>function waitroomChallengeSolved(t){var u=new URL(location.href);u.searchParams.set("{{.Param}}",t);location.replace(u.toString());}</script>`))

func newChallenge(c *config.Room) (*challenge, error) {
	if !c.ChallengeOn() {
		return nil, nil
	}
	name := c.TurnstileProvider
	if name == "" {
		name = "turnstile"
	}
	prov, ok := providers[name]
	if !ok {
		return nil, fmt.Errorf("turnstile_provider %q is not known to this node", name)
	}
	ch := &challenge{
		infinite: c.TurnstileAction == "infinite_queue",
		failOpen: c.TurnstileOnError != "deny",
		verify:   firstNonEmpty(c.TurnstileVerifyURL, prov.verify),
		secret:   c.TurnstileSecret,
		timeout:  time.Duration(c.TurnstileTimeout),
	}
	if ch.timeout <= 0 {
		ch.timeout = config.DefaultTurnstileTimeout
	}
	ch.client = &http.Client{Timeout: ch.timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
	var b strings.Builder
	err := widgetTmpl.Execute(&b, map[string]any{
		"Script": firstNonEmpty(c.TurnstileScriptURL, prov.script), "Class": prov.class, "Key": c.TurnstileSiteKey,
		"Invisible": c.TurnstileMode == "invisible", "Param": challengeParam,
	})
	if err != nil {
		return nil, err
	}
	ch.widget = b.String()
	return ch, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type verdict uint8

const (
	verdictSolved verdict = iota
	verdictFailed
	verdictUnavailable // timeout, network error, malformed answer
)

// check asks the verifier about a widget token.
func (ch *challenge) check(ctx context.Context, response, remoteIP string) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, ch.timeout)
	defer cancel()
	form := url.Values{"secret": {ch.secret}, "response": {response}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.verify, strings.NewReader(form.Encode()))
	if err != nil {
		return verdictUnavailable, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := ch.client.Do(req)
	if err != nil {
		return verdictUnavailable, fmt.Errorf("siteverify: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return verdictUnavailable, fmt.Errorf("siteverify: %s", resp.Status)
	}
	var ans struct {
		Success *bool    `json:"success"`
		Codes   []string `json:"error-codes"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil || ans.Success == nil {
		return verdictUnavailable, fmt.Errorf("siteverify: malformed answer: %v", err)
	}
	if !*ans.Success {
		return verdictFailed, nil
	}
	return verdictSolved, nil
}

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
		v, err := ch.check(r.Context(), sol, clientIP(r))
		switch v {
		case verdictSolved:
			tok.Verified = true
			verdict = policy.VerdictSolved
		case verdictFailed:
			verdict = policy.VerdictFailed
			if ch.infinite {
				tok.Infinite = true
			}
		default:
			s.metrics.challengeErrors.WithLabelValues(rm.name).Inc()
			s.log.Warn().Err(err).Str("room", rm.name).Bool("fail_open", ch.failOpen).Msg("challenge verifier unavailable")
			if ch.failOpen {
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
	return ch.infinite && queueing(a), verdict
}

func queueing(a *allocation) bool {
	st := a.Status()
	return st == policy.StatusQueueing || st == policy.StatusQueueAll
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
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
		est.WaitTime25, est.WaitTime50, est.WaitTime75 = max(est.WaitTime25, w/2, 1), max(est.WaitTime50, w), max(est.WaitTime75, w*3/2)
		est.WaitTimeFormatted = policy.FormatWait(est.WaitTime25) + " to " + policy.FormatWait(est.WaitTime75)
	} else {
		est.WaitTime25, est.WaitTime50, est.WaitTime75 = w, w, w
		est.WaitTimeFormatted = policy.FormatWait(w)
	}
	return est
}
