package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Webhook is an address the ring sends signed notices of its state changes
// to (see edge/webhook for the signature). Each notice reaches each webhook
// once per ring, not once per node.
type Webhook struct {
	// Name names the webhook in the metrics and the state document.
	Name string `yaml:"name" json:"name"`
	URL  string `yaml:"url" json:"url"`
	// SecretFile holds the secret the notices are signed with (its
	// content, surrounding white space trimmed). Load resolves a relative
	// path against the config file's directory.
	SecretFile string `yaml:"secret_file" json:"secret_file"`
	// Events are the notice types to send, or their prefixes ending in '.'
	// ("room."); all of them when empty.
	Events []string `yaml:"events" json:"events,omitempty"`
}

// WebhookNetwork is where webhooks may be sent. Whoever holds the admin
// token registers webhooks for the whole ring, so by default a webhook
// reaches only public addresses: never loopback, private, shared (CGNAT),
// link-local (where clouds answer metadata requests), unspecified or
// multicast ones, checked on the address each connection is made to.
type WebhookNetwork struct {
	// AllowPrivate lets webhooks reach every address, for a receiver on
	// the operator's own network.
	AllowPrivate bool `yaml:"allow_private" json:"allow_private,omitempty"`
	// Allow lists the addresses or prefixes ("10.1.2.3", "10.1.0.0/16")
	// webhooks may reach besides the public ones.
	Allow []string `yaml:"allow" json:"allow,omitempty"`
}

// AllowPrefixes parses Allow (Validate refuses an entry that does not
// parse; here it is left out).
func (n *WebhookNetwork) AllowPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(n.Allow))
	var err error
	for i, s := range n.Allow {
		p, perr := parseTrusted(s)
		if perr != nil {
			err = errors.Join(err, fmt.Errorf("webhook_network.allow[%d]: %q %w", i, s, perr))
			continue
		}
		out = append(out, p)
	}
	return out, err
}

// WebhookEvents are the notice types the ring sends.
var WebhookEvents = []string{
	"room.queueing_started", "room.queueing_stopped", "room.queue_full",
	"room.emergency_stopped", "room.emergency_resumed",
	"room.created", "room.changed", "room.deleted",
	"event.prequeue_started", "event.started", "event.ended",
	"node.joined", "node.left", "node.suspected",
}

// Wants reports whether the webhook is sent notices of type typ.
func (w *Webhook) Wants(typ string) bool {
	if len(w.Events) == 0 {
		return true
	}
	for _, e := range w.Events {
		if e == typ || (strings.HasSuffix(e, ".") && strings.HasPrefix(typ, e)) {
			return true
		}
	}
	return false
}

var webhookNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (c *Config) validateWebhooks(p *problems) {
	for i, a := range c.WebhookNetwork.Allow {
		if _, err := parseTrusted(a); err != nil {
			p.add("webhook_network.allow["+strconv.Itoa(i)+"]", "%q %v", a, err)
		}
	}
	seen := map[string]bool{}
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		f := func(field string) string { return "webhooks[" + strconv.Itoa(i) + "]." + field }
		if !webhookNameRE.MatchString(w.Name) {
			p.add(f("name"), "%q must be 1–64 characters of letters, digits, '.', '_' and '-'", w.Name)
		} else if seen[w.Name] {
			p.add(f("name"), "%q names two webhooks", w.Name)
		}
		seen[w.Name] = true
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(f("url"), "%q must be an http:// or https:// URL", RedactURL(w.URL))
		}
		if w.SecretFile == "" {
			p.add(f("secret_file"), "is required: the file holding the secret the notices are signed with")
		}
		for _, e := range w.Events {
			ok := slices.Contains(WebhookEvents, e)
			for _, t := range WebhookEvents {
				ok = ok || (strings.HasSuffix(e, ".") && strings.HasPrefix(t, e))
			}
			if !ok {
				p.add(f("events"), "%q is not a notice type: use one of %s, or a prefix such as \"room.\"", e, strings.Join(WebhookEvents, ", "))
			}
		}
	}
}

func (c *Config) resolveWebhookPaths(dir string) {
	for i := range c.Webhooks {
		if p := &c.Webhooks[i].SecretFile; *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// CheckWebhook checks a webhook registered through the admin API, whose
// secret comes with it rather than from a file: the same rules as in the
// config file, with errors naming the body's fields.
func CheckWebhook(w Webhook, secret string) error {
	w.SecretFile = "(admin API)"
	c := &Config{Webhooks: []Webhook{w}}
	p := &problems{}
	c.validateWebhooks(p)
	if len(strings.TrimSpace(secret)) < 16 {
		p.add("secret", "must be at least 16 characters")
	}
	for i, e := range p.errs {
		p.errs[i] = errors.New(strings.TrimPrefix(e.Error(), "webhooks[0]."))
	}
	return errors.Join(p.errs...)
}
