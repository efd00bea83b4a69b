package clientaddr_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/waitroom/waitroom/edge/clientaddr"
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
			if got := clientaddr.Forwarded(tc.xff, trusted); got != tc.want {
				t.Errorf("Forwarded(%q) = %q, want %q", tc.xff, got, tc.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	tests := []struct {
		name, remote, want string
	}{
		{"the port is left out", "198.51.100.7:4711", "198.51.100.7"},
		{"an IPv6 peer loses its brackets and port", "[2001:db8::1]:443", "2001:db8::1"},
		{"an address without a port is taken as it is", "198.51.100.7", "198.51.100.7"},
		{"no address is unknown", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote}
			if got := clientaddr.Of(r); got != tc.want {
				t.Errorf("Of(%q) = %q, want %q", tc.remote, got, tc.want)
			}
		})
	}
}

func TestPeerTrusted(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name, remote string
		want         bool
	}{
		{"a peer inside a trusted prefix is trusted", "10.1.2.3:5000", true},
		{"an IPv4-mapped peer is read as IPv4", "[::ffff:10.1.2.3]:5000", true},
		{"a peer outside every prefix is not", "198.51.100.7:5000", false},
		{"a peer that does not parse is not", "junk", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote}
			if got := clientaddr.PeerTrusted(r, trusted); got != tc.want {
				t.Errorf("PeerTrusted(%q) = %v, want %v", tc.remote, got, tc.want)
			}
		})
	}
}
