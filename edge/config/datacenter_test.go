package config_test

import (
	"testing"
)

func TestDatacenterSettings(t *testing.T) {
	dc := func(more M) func(top, room M) {
		return func(top, _ M) {
			top["node"], top["datacenter"] = "pop-ams-1", "ams"
			for k, v := range more {
				top[k] = v
			}
		}
	}
	runRules(t, []ruleCase{
		{"a data center with the pool between data centers' defaults is accepted", dc(nil), nil},
		{"a data center named as the node is a data center of its own, as none", func(top, _ M) { top["node"], top["datacenter"] = "pop-ams-1", "pop-ams-1" }, nil},
		{"wan seeds by name, address and port are accepted", dc(M{"wan_seeds": []string{"pop-fra-1.example.net", "192.0.2.20:7947", "[2001:db8::20]:7947"}}), nil},
		{"a wan seed written as a URL is refused", dc(M{"wan_seeds": []string{"http://pop-fra-1.example.net"}}),
			[]string{`wan_seeds[0]: "http://pop-fra-1.example.net" must be a host name or IP address, without a scheme or path`}},
		{"a wan_gossip address with a host name is refused", dc(M{"wan_gossip": "localhost:7947"}),
			[]string{`wan_gossip: "localhost:7947" must be ip:port with an IP address`}},
		{"a wan_gossip address on the gossip port is refused", dc(M{"wan_gossip": "0.0.0.0:7946"}),
			[]string{`wan_gossip: 0.0.0.0:7946 overlaps gossip (0.0.0.0:7946)`}},
		{"a wan_advertise host name is refused", dc(M{"wan_advertise": "pop-ams-1.example.net"}),
			[]string{`wan_advertise: "pop-ams-1.example.net" must be an IP address, or ip:port`}},
		{"an unknown wan_gossip_profile is refused", dc(M{"wan_gossip_profile": "moon"}),
			[]string{`wan_gossip_profile: "moon" must be one of lan, local, wan`}},
		{"six carriers are refused", dc(M{"carriers": 6}),
			[]string{`carriers: 6 must be from 1 to 5 (default 2)`}},
		{"a negative count of carriers is refused", dc(M{"carriers": -1}),
			[]string{`carriers: -1 must be from 1 to 5 (default 2)`}},
		{"wan seeds without a data center are refused", setTop("wan_seeds", []string{"192.0.2.20"}),
			[]string{`wan_seeds: applies only with datacenter set to a data center of several nodes`}},
		{"carriers without a data center are refused", setTop("carriers", 3),
			[]string{`carriers: applies only with datacenter set`}},
	})
}

func TestDatacenterDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		top                     M
		wantBind, wantAdvertise string
	}{
		{"the pool between data centers binds gossip's host on the next port", M{"gossip": "192.0.2.5:7000"}, "192.0.2.5:7001", ""},
		{"a gossip port of 0 gives a free port between data centers too", M{"gossip": "127.0.0.1:0"}, "127.0.0.1:0", ""},
		{"an advertised IP is advertised between data centers on that pool's port", M{"advertise": "198.51.100.7"}, "0.0.0.0:7947", "198.51.100.7:7947"},
		{"an advertised IPv6 ip:port keeps its IP", M{"advertise": "[2001:db8::7]:7946"}, "0.0.0.0:7947", "[2001:db8::7]:7947"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkParse(t, configYAML(t, func(top, _ M) {
				top["node"], top["datacenter"] = "pop-ams-1", "ams"
				for k, v := range tc.top {
					top[k] = v
				}
			}), nil)
			if c.WANGossip != tc.wantBind || c.WANAdvertise != tc.wantAdvertise || c.WANGossipProfile != "wan" || c.Carriers != 2 {
				t.Fatalf("wan_gossip %q, wan_advertise %q, wan_gossip_profile %q, carriers %d; want %q, %q, wan, 2",
					c.WANGossip, c.WANAdvertise, c.WANGossipProfile, c.Carriers, tc.wantBind, tc.wantAdvertise)
			}
		})
	}
	t.Run("a node that names no data center gets none of them", func(t *testing.T) {
		c := checkParse(t, configYAML(t, func(top, _ M) {}), nil)
		if c.WANGossip != "" || c.Carriers != 0 || c.WANGossipProfile != "" {
			t.Fatalf("wan_gossip %q, carriers %d, wan_gossip_profile %q for a node of no data center", c.WANGossip, c.Carriers, c.WANGossipProfile)
		}
	})
}
