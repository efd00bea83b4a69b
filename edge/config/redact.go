package config

import (
	"net/url"
	"strings"
)

// RedactedURLPart stands, in a URL the node shows (the admin API, the
// console, the state document, the logs), for a credential the URL holds:
// the password of its user information and every query value.
const RedactedURLPart = "REDACTED"

// RedactURL is raw as the node shows it: a password in its user
// information ("https://user:pw@host") and the values of its query
// ("?token=…") replaced by RedactedURLPart. Whoever may read the admin API
// or the logs is not thereby given the credentials the node uses to reach
// an origin or a webhook. A URL that does not parse is shown as its scheme
// and host at most.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.Index(raw, "://"); i >= 0 {
			rest := raw[i+3:]
			if j := strings.IndexAny(rest, "/?#"); j >= 0 {
				rest = rest[:j]
			}
			if j := strings.LastIndexByte(rest, '@'); j >= 0 {
				rest = rest[j+1:]
			}
			return raw[:i+3] + rest + "/" + RedactedURLPart
		}
		return RedactedURLPart
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), RedactedURLPart)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = RedactedURLPart
			}
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// UnredactURL is sent, the URL of a room or webhook given back to the
// admin API, with cur's credentials put back when sent is cur as the API
// showed it: a room read with GET can be edited and applied as it is.
func UnredactURL(sent, cur string) string {
	if cur != "" && sent != cur && sent == RedactURL(cur) {
		return cur
	}
	return sent
}

// HoldsSecrets names the first field of the config that holds a secret in
// the file itself rather than in a file of its own (a room's
// turnstile_secret, credentials in an origin's or a webhook's URL), ""
// when none does: such a config file needs the same care as a key file.
func (c *Config) HoldsSecrets() string {
	hasCred := func(u string) bool { return u != "" && RedactURL(u) != u }
	if hasCred(c.Origin) {
		return "origin"
	}
	for i := range c.Rooms {
		rc := &c.Rooms[i]
		switch {
		case rc.TurnstileSecret != "":
			return "rooms[" + rc.Name + "].turnstile_secret"
		case hasCred(rc.Origin):
			return "rooms[" + rc.Name + "].origin"
		}
	}
	for _, w := range c.Webhooks {
		if hasCred(w.URL) {
			return "webhooks[" + w.Name + "].url"
		}
	}
	return ""
}
