package edge

import (
	"net/netip"
	"testing"
)

func TestForwardedClient(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name string
		xff  []string
		want string
	}{
		{"no header names no client", nil, ""},
		{"the one entry the proxy added is the client", []string{"198.51.100.7"}, "198.51.100.7"},
		{"what the visitor wrote before the proxy's entry is ignored", []string{"203.0.113.9, 198.51.100.7"}, "198.51.100.7"},
		{"trusted hops on the right are passed over", []string{"203.0.113.9, 198.51.100.7, 10.1.2.3, 127.0.0.1"}, "198.51.100.7"},
		{"entries in several header lines are one list", []string{"203.0.113.9", "198.51.100.7", "10.1.2.3"}, "198.51.100.7"},
		{"a request from inside, through trusted hops only, is the left-most", []string{"10.9.9.9, 127.0.0.1"}, "10.9.9.9"},
		{"an IPv4-mapped address is read as IPv4", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"an unreadable entry is never skipped to the visitor's own", []string{"198.51.100.7, junk, 127.0.0.1"}, ""},
		{"an unreadable entry left of the client does not matter", []string{"junk, 198.51.100.7"}, "198.51.100.7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := forwardedClient(tc.xff, trusted); got != tc.want {
				t.Errorf("forwardedClient(%q) = %q, want %q", tc.xff, got, tc.want)
			}
		})
	}
}
