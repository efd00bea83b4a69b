package testkit

import (
	"fmt"
	"net"
	"testing"
)

// FreePort finds a loopback port free for both TCP and UDP, for a server
// that must be started later at an address known now: a gossip node (which
// binds both), or a program that is told its ports in a config file.
func FreePort(tb testing.TB) int {
	tb.Helper()
	for i := 0; i < 20; i++ {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = tl.Close()
		if err == nil {
			_ = ul.Close()
			return port
		}
	}
	tb.Fatal("no loopback port free for TCP and UDP after 20 tries")
	return 0
}
