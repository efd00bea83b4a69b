package testkit

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Ports are drawn below the kernel's usual ephemeral range (32768 and up),
// so that an outgoing connection (a crowd's, a proxy's) cannot take a port
// between the check and the bind, or while a killed process is down.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu sync.Mutex
	// portsGiven are the ports this process handed out already: a port
	// closed a moment ago is free again, and two callers (two tests, two
	// runs side by side) must not be given the same one.
	portsGiven = map[int]bool{}
)

// FreePorts finds n distinct loopback ports free for both TCP and UDP, for
// servers that must be started later at addresses known now: gossip nodes
// (which bind both), or programs told their ports in a config file or on
// their command line. A port given once is never given again in the same
// process.
func FreePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 2000 {
			return nil, errors.New("no free loopback port for TCP and UDP found between 20000 and 32000")
		}
		p := portLow + rand.IntN(portHigh-portLow)
		if portsGiven[p] || !portFree(p) {
			continue
		}
		portsGiven[p] = true
		out = append(out, p)
	}
	return out, nil
}

// FreePort is FreePorts of one, for a test: it fails the test when no port
// is found.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		tb.Fatal(err)
	}
	return ports[0]
}

// portFree reports whether p can be bound on loopback for TCP and UDP.
func portFree(p int) bool {
	addr := "127.0.0.1:" + strconv.Itoa(p)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}
