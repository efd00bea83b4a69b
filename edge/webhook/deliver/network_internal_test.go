package deliver

import (
	"net/netip"
	"testing"
)

func TestWebhookAddrAllowed(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
	tests := []struct {
		name, addr   string
		allowPrivate bool
		want         bool
	}{
		{"a public IPv4 address is reached", "93.184.216.34", false, true},
		{"a public IPv6 address is reached", "2606:2800:220:1::1", false, true},
		{"loopback is refused", "127.0.0.1", false, false},
		{"all of 127/8 is loopback", "127.9.9.9", false, false},
		{"IPv6 loopback is refused", "::1", false, false},
		{"the metadata address is refused", "169.254.169.254", false, false},
		{"the IPv6 metadata address is refused", "fd00:ec2::254", false, false},
		{"a private address is refused", "192.168.1.1", false, false},
		{"shared address space is refused", "100.64.1.1", false, false},
		{"an IPv6 link-local address is refused", "fe80::1", false, false},
		{"a unique local IPv6 address is refused", "fc00::1", false, false},
		{"the unspecified address is refused", "0.0.0.0", false, false},
		{"an IPv4-mapped loopback address is refused", "::ffff:127.0.0.1", false, false},
		{"a 6to4 address wrapping loopback is refused", "2002:7f00:1::1", false, false},
		{"a multicast address is refused", "224.0.0.1", false, false},
		{"an address on the allow-list is reached", "10.1.2.3", false, true},
		{"a private address off the allow-list is refused", "10.2.0.1", false, false},
		{"allow_private reaches loopback", "127.0.0.1", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := webhookAddrAllowed(netip.MustParseAddr(tc.addr), tc.allowPrivate, allow); got != tc.want {
				t.Errorf("webhookAddrAllowed(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}
