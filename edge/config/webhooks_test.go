package config_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/config"
)

func TestWebhookSettings(t *testing.T) {
	base := "node: a\ncookie_key_file: k\nrooms:\n  - name: shop\n    origin: http://127.0.0.1:1\n    total_active_users: 1\n    new_users_per_minute: 1\nwebhooks:\n"
	for _, c := range []struct {
		name, hooks, wantErr string
	}{
		{"a webhook with an address, a secret file and known events is taken",
			"  - {name: ops, url: 'https://hooks.example.com/w', secret_file: s, events: [room., node.left]}\n", ""},
		{"an address that is not http is refused",
			"  - {name: ops, url: 'ftp://x/', secret_file: s}\n", "webhooks[0].url"},
		{"a webhook without a secret file is refused",
			"  - {name: ops, url: 'http://127.0.0.1:2/'}\n", "webhooks[0].secret_file"},
		{"an unknown event type is refused",
			"  - {name: ops, url: 'http://127.0.0.1:2/', secret_file: s, events: [room.exploded]}\n", "webhooks[0].events"},
		{"a webhook network allow-list of addresses and prefixes is taken",
			"  - {name: ops, url: 'http://10.1.2.3/', secret_file: s}\nwebhook_network: {allow: [10.1.2.3, 10.2.0.0/16]}\n", ""},
		{"a webhook network allow-list entry that is no address is refused",
			"  - {name: ops, url: 'http://10.1.2.3/', secret_file: s}\nwebhook_network: {allow: [intranet]}\n", "webhook_network.allow[0]"},
		{"two webhooks of one name are refused",
			"  - {name: ops, url: 'http://127.0.0.1:2/', secret_file: s}\n  - {name: ops, url: 'http://127.0.0.1:3/', secret_file: s}\n", "webhooks[1].name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(base + c.hooks))
			if err == nil {
				cfg.ApplyDefaults()
				err = cfg.Validate()
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one naming %s", err, c.wantErr)
			}
		})
	}
	t.Run("a type is wanted by its name or its prefix", func(t *testing.T) {
		w := config.Webhook{Events: []string{"room.", "node.left"}}
		for typ, want := range map[string]bool{"room.created": true, "node.left": true, "node.joined": false, "event.started": false} {
			if got := w.Wants(typ); got != want {
				t.Errorf("Wants(%s) = %v, want %v", typ, got, want)
			}
		}
	})
}
