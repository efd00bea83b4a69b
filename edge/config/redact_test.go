package config_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/config"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a URL without credentials is shown as it is", "https://shop.example.com:8443/base", "https://shop.example.com:8443/base"},
		{"a password is hidden, the user name kept", "https://user:hunter2@shop.example.com/", "https://user:REDACTED@shop.example.com/"},
		{"a user name alone is kept", "https://user@shop.example.com/", "https://user@shop.example.com/"},
		{"every query value is hidden", "https://hooks.example.com/w?token=s3cret&x=1", "https://hooks.example.com/w?token=REDACTED&x=REDACTED"},
		{"a URL that does not parse shows its host at most", "https://user:pw@host/%zz?token=s3cret", "https://host/REDACTED"},
		{"text that is no URL is hidden", "%zz token", "REDACTED"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := config.RedactURL(tc.in); got != tc.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("a redacted URL sent back stands for the one it was shown for", func(t *testing.T) {
		cur := "https://user:hunter2@shop.example.com/?k=v"
		if got := config.UnredactURL(config.RedactURL(cur), cur); got != cur {
			t.Errorf("got %q, want the current URL back", got)
		}
		if got := config.UnredactURL("https://other.example.com/", cur); got != "https://other.example.com/" {
			t.Errorf("a new URL became %q", got)
		}
	})
}

func TestConfigErrorsShowNoURLCredentials(t *testing.T) {
	for _, yaml := range []string{
		"node: a\ncookie_key_file: k\norigin: 'ftp://user:hunter2@origin.test/'\nrooms:\n  - {name: shop, total_active_users: 1, new_users_per_minute: 1}\n",
		"node: a\ncookie_key_file: k\nrooms:\n  - {name: shop, origin: 'ftp://user:hunter2@origin.test/', total_active_users: 1, new_users_per_minute: 1}\n",
		"node: a\ncookie_key_file: k\norigin: http://127.0.0.1:1\nrooms:\n  - {name: shop, total_active_users: 1, new_users_per_minute: 1}\nwebhooks:\n  - {name: ops, url: 'ftp://h/?token=hunter2', secret_file: s}\n",
	} {
		cfg, err := config.Parse([]byte(yaml))
		if err == nil {
			cfg.ApplyDefaults()
			err = cfg.Validate()
		}
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %v: want one that does not show the credential", err)
		}
	}
}

// FuzzRedactURL holds that a password long enough to tell apart never
// survives redaction.
func FuzzRedactURL(f *testing.F) {
	f.Add("https://user:hunter2@host:1/p?q=1#f")
	f.Add("%zz")
	f.Add("https://user:hunter2@host/%zz")
	f.Fuzz(func(t *testing.T, raw string) {
		out := config.RedactURL(raw)
		i, j := strings.Index(raw, "://"), strings.LastIndexByte(raw, '@')
		if i <= 0 || j < i || strings.Trim(raw[:i], "abcdefghijklmnopqrstuvwxyz") != "" {
			return // not a URL with a scheme and user information
		}
		userinfo := raw[i+3 : j]
		_, pw, ok := strings.Cut(userinfo, ":")
		if !ok || len(pw) < 6 || strings.ContainsAny(userinfo, "/?#@%") || strings.Contains(raw[j:]+raw[:i+3+len(userinfo)-len(pw)], pw) || strings.Contains(config.RedactedURLPart, pw) {
			return
		}
		if strings.Contains(out, pw) {
			t.Fatalf("RedactURL(%q) = %q shows the password", raw, out)
		}
	})
}
