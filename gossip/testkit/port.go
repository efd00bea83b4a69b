package testkit

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// FreePort finds a loopback port free for both TCP and UDP, for a server
// that must be started later at an address known now: a gossip node (which
// binds both), or a program that is told its ports in a config file. The
// kernel may hand a port closed a moment ago out again, so a port given to
// one caller is never given to another in the same test binary: two ports
// asked for one test are always two.
func FreePort(tb testing.TB) int {
	tb.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for i := 0; i < 50; i++ {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		if portsGiven[port] {
			_ = tl.Close()
			continue
		}
		ul, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = tl.Close()
		if err == nil {
			_ = ul.Close()
			portsGiven[port] = true
			return port
		}
	}
	tb.Fatal("no loopback port free for TCP and UDP after 50 tries")
	return 0
}
