package config

// A room's bot challenge settings (turnstile_*) and their rules. Verifying a
// visitor's solution is the request path's.

import (
	"slices"
	"strings"
	"time"
)

// The allowed values of the turnstile_* settings, in the order error
// messages list them.
var (
	challengeModes     = []string{"off", "invisible", "visible_non_interactive", "visible_managed"}
	challengeActions   = []string{"log", "infinite_queue"}
	challengeOnError   = []string{"allow", "deny"}
	challengeProviders = []string{"turnstile", "hcaptcha", "recaptcha"}
)

// DefaultTurnstileTimeout is how long a node waits for the challenge's
// verifier when turnstile_timeout is not set.
const DefaultTurnstileTimeout = 3 * time.Second

// ChallengeOn reports whether the room's queue page carries a bot challenge.
func (r *Room) ChallengeOn() bool { return r.TurnstileMode != "" && r.TurnstileMode != "off" }

// validateChallenge checks the turnstile_* settings.
func (r *Room) validateChallenge(p *problems) {
	if r.TurnstileMode != "" && !slices.Contains(challengeModes, r.TurnstileMode) {
		p.add("turnstile_mode", "%q must be one of %s", r.TurnstileMode, strings.Join(challengeModes, ", "))
	}
	if r.TurnstileAction != "" && !slices.Contains(challengeActions, r.TurnstileAction) {
		p.add("turnstile_action", "%q must be one of %s", r.TurnstileAction, strings.Join(challengeActions, ", "))
	}
	if r.TurnstileOnError != "" && !slices.Contains(challengeOnError, r.TurnstileOnError) {
		p.add("turnstile_on_error", "%q must be allow (let visitors through when the verifier cannot answer) or deny", r.TurnstileOnError)
	}
	if r.TurnstileProvider != "" && !slices.Contains(challengeProviders, r.TurnstileProvider) {
		p.add("turnstile_provider", "%q must be one of %s", r.TurnstileProvider, strings.Join(challengeProviders, ", "))
	}
	for field, u := range map[string]string{"turnstile_siteverify_url": r.TurnstileVerifyURL, "turnstile_script_url": r.TurnstileScriptURL} {
		if u != "" {
			if err := checkOrigin(u); err != nil {
				p.add(field, "%q %v", u, err)
			}
		}
	}
	if r.TurnstileTimeout < 0 {
		p.add("turnstile_timeout", "%v must be positive (default %v)", r.TurnstileTimeout, DefaultTurnstileTimeout)
	}
	if r.ChallengeOn() {
		if r.TurnstileSiteKey == "" {
			p.add("turnstile_site_key", "is required when turnstile_mode is %s", r.TurnstileMode)
		}
		if r.TurnstileSecret == "" {
			p.add("turnstile_secret", "is required when turnstile_mode is %s", r.TurnstileMode)
		}
	}
}
