package edge_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/config"
)

func TestGossipLagMeasuredSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want bool
	}{
		{"the measured lag is on when the config does not say", "", true},
		{"gossip_lag_measured: true turns it on", "gossip_lag_measured: true\n", true},
		{"gossip_lag_measured: false turns it off", "gossip_lag_measured: false\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte("node: n\n" + tc.yaml + "rooms:\n  - name: shop\n    total_active_users: 10\n    new_users_per_minute: 10\n    origin: http://127.0.0.1:1\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.GossipLagMeasured == nil || *c.GossipLagMeasured; got != tc.want {
				t.Fatalf("measured lag on: %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a value that is not a boolean names the field", func(t *testing.T) {
		_, err := config.Parse([]byte("node: n\ngossip_lag_measured: sometimes\n"))
		if err == nil || !strings.Contains(err.Error(), "gossip_lag_measured") {
			t.Fatalf("error %v, want one naming gossip_lag_measured", err)
		}
	})
}
