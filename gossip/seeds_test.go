package gossip_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestSeedNameWithSeveralAddresses checks the seed of a Kubernetes ring:
// one DNS name (a headless Service) that resolves to every pod's address.
// Three nodes listen on the same port of three loopback addresses, as pods
// do; two of them know nobody, so only a join that reaches every address
// can make one ring of the three.
func TestSeedNameWithSeveralAddresses(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	const loneIP = "127.0.0.4"
	port := freePortOn(t, append([]string{loneIP}, ips...))
	addrs := make([]string, len(ips))
	for i, ip := range ips {
		addrs[i] = net.JoinHostPort(ip, fmt.Sprint(port))
	}
	const name = "waitroom-ring.test"
	lookups := make(chan string, 100)
	lookup := func(_ context.Context, host string) ([]string, error) {
		lookups <- host
		if host != name {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return ips, nil
	}
	seed := net.JoinHostPort(name, fmt.Sprint(port))
	a := startNode(t, gossip.Config{Name: "pod-0", Bind: addrs[0], Log: testLog(t)})
	b := startNode(t, gossip.Config{Name: "pod-1", Bind: addrs[1], Log: testLog(t)})
	c := startNode(t, gossip.Config{Name: "pod-2", Bind: addrs[2], Seeds: []string{seed}, LookupHost: lookup, Log: testLog(t)})

	t.Run("the node joins every address of the name, and they become one ring", func(t *testing.T) {
		for _, n := range []*gossip.Node{a, b, c} {
			waitNumMembers(t, n, 3, 10*time.Second)
		}
		select {
		case h := <-lookups:
			if h != name {
				t.Errorf("looked up %q, want %q", h, name)
			}
		default:
			t.Error("the seed's name was never looked up")
		}
	})

	t.Run("a join through the name contacts every address but the node's own", func(t *testing.T) {
		k, err := c.Join([]string{seed})
		if err != nil || k != 2 {
			t.Errorf("Join(%q) = %d, %v; want 2 contacted", seed, k, err)
		}
	})

	t.Run("a name that resolves only to the node itself is no join", func(t *testing.T) {
		self := func(context.Context, string) ([]string, error) { return []string{loneIP}, nil }
		lone := startNode(t, gossip.Config{Name: "pod-9", Bind: net.JoinHostPort(loneIP, fmt.Sprint(port)), LookupHost: self, Log: testLog(t)})
		if k, err := lone.Join([]string{net.JoinHostPort("lone.test", fmt.Sprint(port))}); err == nil {
			t.Errorf("joining only its own address: %d contacted, no error", k)
		}
	})
}

// freePortOn finds a port free for UDP and TCP on every one of the loopback
// addresses ips.
func freePortOn(t *testing.T, ips []string) int {
	t.Helper()
	for range 20 {
		port := testkit.FreePort(t)
		ok := true
		for _, ip := range ips[1:] {
			addr := net.JoinHostPort(ip, fmt.Sprint(port))
			tl, err := net.Listen("tcp", addr)
			if err != nil {
				ok = false
				break
			}
			ul, err := net.ListenPacket("udp", addr)
			_ = tl.Close()
			if err != nil {
				ok = false
				break
			}
			_ = ul.Close()
		}
		if ok {
			return port
		}
	}
	t.Skip("no port free on every loopback address of the test")
	return 0
}
