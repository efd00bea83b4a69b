package gossip

import (
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport counts the bytes memberlist sends, packets and streams,
// so an operator can see what gossip costs.
type countingTransport struct {
	*memberlist.NetTransport
	stats *stats
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.stats.bytesOut.Add(uint64(len(b)))
	return t.NetTransport.WriteTo(b, addr)
}

func (t *countingTransport) WriteToAddress(b []byte, addr memberlist.Address) (time.Time, error) {
	t.stats.bytesOut.Add(uint64(len(b)))
	return t.NetTransport.WriteToAddress(b, addr)
}

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.NetTransport.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, stats: t.stats}, nil
}

func (t *countingTransport) DialAddressTimeout(addr memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.NetTransport.DialAddressTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, stats: t.stats}, nil
}

type countingConn struct {
	net.Conn
	stats *stats
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.stats.bytesOut.Add(uint64(n))
	return n, err
}
