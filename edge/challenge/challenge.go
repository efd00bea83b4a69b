package challenge

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// Param is the query parameter the widget sends its token in; the node
// takes it off the request before anything else looks at it.
const Param = "__waitroom_challenge"

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

// Challenge is a room's compiled challenge settings.
type Challenge struct {
	// Infinite: turnstile_action infinite_queue, a visitor who fails is
	// held in the infinite queue.
	Infinite bool
	// FailOpen: turnstile_on_error is not deny, so a verdict the verifier
	// cannot give lets the visitor on.
	FailOpen bool
	// Widget is the HTML the queue page's {{{turnstile}}} variable renders.
	Widget  string
	verify  string
	secret  string
	timeout time.Duration
	client  *http.Client
}

var widgetTmpl = template.Must(template.New("w").Parse(`<script src="{{.Script}}" async defer></script>
<div class="{{.Class}}" data-sitekey="{{.Key}}" data-callback="waitroomChallengeSolved"{{if .Invisible}} data-appearance="interaction-only" data-size="invisible"{{end}}></div>
<script>function waitroomChallengeSolved(t){var u=new URL(location.href);u.searchParams.set("{{.Param}}",t);location.replace(u.toString());}</script>`))

// New compiles room c's challenge, nil when it has none.
func New(c *config.Room) (*Challenge, error) {
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
	ch := &Challenge{
		Infinite: c.TurnstileAction == "infinite_queue",
		FailOpen: c.TurnstileOnError != "deny",
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
		"Invisible": c.TurnstileMode == "invisible", "Param": Param,
	})
	if err != nil {
		return nil, err
	}
	ch.Widget = b.String()
	return ch, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Verdict is what the verifier said of a widget's token.
type Verdict uint8

// The verdicts: solved, failed, or none to be had (a timeout, a network
// error, a malformed answer).
const (
	Solved Verdict = iota
	Failed
	Unavailable
)

// Check asks the verifier about a widget's token, sent by a visitor from
// remoteIP ("" when unknown).
func (ch *Challenge) Check(ctx context.Context, response, remoteIP string) (Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, ch.timeout)
	defer cancel()
	form := url.Values{"secret": {ch.secret}, "response": {response}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.verify, strings.NewReader(form.Encode()))
	if err != nil {
		return Unavailable, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := ch.client.Do(req)
	if err != nil {
		return Unavailable, fmt.Errorf("siteverify: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Unavailable, fmt.Errorf("siteverify: %s", resp.Status)
	}
	var ans struct {
		Success *bool    `json:"success"`
		Codes   []string `json:"error-codes"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil || ans.Success == nil {
		return Unavailable, fmt.Errorf("siteverify: malformed answer: %v", err)
	}
	if !*ans.Success {
		return Failed, nil
	}
	return Solved, nil
}
