package gossip

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// MemNet is test and measurement support: a network of memberlist
// transports held in memory, between nodes of one process, with a one-way
// delay modelled for each pair of addresses and a loss rate, counting the
// bytes each node sends. It has no sockets, so hundreds of nodes and their
// pools between data centers fit in one process (the scale harness,
// scale_test.go); like FaultNet, it has no effect on a node unless given
// as Config.Transport or Config.WANTransport.
//
// Packets (probes, gossip) are lost with the loss rate and arrive after the
// pair's delay; a packet that finds the receiver's queue full is lost, as
// a datagram would be. Streams (push-pull, joins, reliable messages) are
// never lost: connecting takes a round trip, and every write arrives the
// pair's delay later, which holds the writer up as a window of one
// message would.
type MemNet struct {
	mu     sync.RWMutex
	eps    map[string]*MemTransport
	delay  func(from, to string) time.Duration
	loss   float64
	rngMu  sync.Mutex
	rng    *rand.Rand
	sentMu sync.Mutex
	sent   map[string]*atomic.Uint64
}

// NewMemNet returns a network without delay or loss; seed fixes its random
// draws.
func NewMemNet(seed uint64) *MemNet {
	return &MemNet{eps: map[string]*MemTransport{}, sent: map[string]*atomic.Uint64{}, rng: rand.New(rand.NewPCG(seed, seed^0x51ed270b27a5f1c3))}
}

// SetDelay models the one-way delay from address from to address to
// (addresses as Transport was given them). delay must be safe to call
// from many goroutines.
func (m *MemNet) SetDelay(delay func(from, to string) time.Duration) {
	m.mu.Lock()
	m.delay = delay
	m.mu.Unlock()
}

// SetLoss makes each packet lost with probability p.
func (m *MemNet) SetLoss(p float64) {
	m.mu.Lock()
	m.loss = p
	m.mu.Unlock()
}

// Sent is how many bytes the transports of owner have sent, packets and
// streams, before any loss.
func (m *MemNet) Sent(owner string) uint64 { return m.counter(owner).Load() }

func (m *MemNet) counter(owner string) *atomic.Uint64 {
	m.sentMu.Lock()
	defer m.sentMu.Unlock()
	c := m.sent[owner]
	if c == nil {
		c = new(atomic.Uint64)
		m.sent[owner] = c
	}
	return c
}

// Transport is a transport at addr ("ip:port"), whose sent bytes count for
// owner (a node's name: its pool and its pool between data centers count
// together). An address is held by one transport at a time.
func (m *MemNet) Transport(addr, owner string) (*MemTransport, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("memory transport %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return nil, fmt.Errorf("memory transport %q: not an ip:port", addr)
	}
	t := &MemTransport{net: m, addr: addr, ip: ip, port: p, sent: m.counter(owner),
		packets: make(chan *memberlist.Packet, memQueue), streams: make(chan net.Conn, 64), done: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, taken := m.eps[addr]; taken {
		return nil, fmt.Errorf("memory transport %q: address in use", addr)
	}
	m.eps[addr] = t
	return t, nil
}

// route is the receiver at to, the delay to it from from, and whether a
// packet between them is lost.
func (m *MemNet) route(from, to string, packet bool) (*MemTransport, time.Duration, bool) {
	m.mu.RLock()
	dst := m.eps[to]
	delay, loss := m.delay, m.loss
	m.mu.RUnlock()
	var d time.Duration
	if delay != nil {
		d = delay(from, to)
	}
	lost := false
	if packet && loss > 0 {
		m.rngMu.Lock()
		lost = m.rng.Float64() < loss
		m.rngMu.Unlock()
	}
	return dst, d, lost
}

// memQueue is how many packets wait for a node to read them before more
// are lost: about what a datagram socket's default buffer holds. A node
// whose process is starved of CPU then loses packets, as it would on a
// network, rather than holding more and more of them.
const memQueue = 256

var _ memberlist.NodeAwareTransport = (*MemTransport)(nil)

// MemTransport is one node's transport on a MemNet.
type MemTransport struct {
	net     *MemNet
	addr    string
	ip      net.IP
	port    int
	sent    *atomic.Uint64
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// Addr is the transport's address.
func (t *MemTransport) Addr() string { return t.addr }

// FinalAdvertiseAddr advertises the transport's own address.
func (t *MemTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.ip, t.port, nil
}

// PacketCh delivers the packets sent to the transport.
func (t *MemTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// StreamCh delivers the streams opened to the transport.
func (t *MemTransport) StreamCh() <-chan net.Conn { return t.streams }

// WriteTo sends a packet.
func (t *MemTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a packet: counted, then lost or delivered after the
// pair's delay.
func (t *MemTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	t.sent.Add(uint64(len(b)))
	dst, d, lost := t.net.route(t.addr, a.Addr, true)
	if dst == nil || lost {
		return now, nil
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: memAddr(t.addr)}
	if d <= 0 {
		p.Timestamp = now
		dst.deliver(p)
		return now, nil
	}
	time.AfterFunc(d, func() {
		p.Timestamp = time.Now()
		dst.deliver(p)
	})
	return now, nil
}

// deliver queues a packet unless the transport is shut down or its queue
// is full.
func (t *MemTransport) deliver(p *memberlist.Packet) {
	select {
	case <-t.done:
	case t.packets <- p:
	default:
	}
}

// DialTimeout opens a stream.
func (t *MemTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// errRefused is a dial to an address no transport holds.
var errRefused = errors.New("connection refused")

// DialAddressTimeout opens a stream after a round trip, or fails at once
// when nothing listens at the address.
func (t *MemTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	dst, d, _ := t.net.route(t.addr, a.Addr, false)
	if dst == nil {
		return nil, fmt.Errorf("memory dial %s from %s: %w", a.Addr, t.addr, errRefused)
	}
	if 2*d >= timeout {
		time.Sleep(timeout)
		return nil, fmt.Errorf("memory dial %s from %s: timed out after %s", a.Addr, t.addr, timeout)
	}
	time.Sleep(2 * d)
	local, remote := net.Pipe()
	// Until memberlist sets its own deadlines, the dialer's first writes
	// (the label's header) are bounded by the dial's timeout, as a socket
	// whose peer went away would be: a stream that the peer's transport
	// never takes (it shut down meanwhile) must not hold a writer forever.
	_ = local.SetDeadline(time.Now().Add(timeout))
	select {
	case dst.streams <- &memConn{Conn: remote, delay: d, sent: dst.sent, local: memAddr(dst.addr), remote: memAddr(t.addr)}:
	case <-dst.done:
		return nil, fmt.Errorf("memory dial %s from %s: %w", a.Addr, t.addr, errRefused)
	case <-time.After(timeout):
		return nil, fmt.Errorf("memory dial %s from %s: not accepted within %s", a.Addr, t.addr, timeout)
	}
	return &memConn{Conn: local, delay: d, sent: t.sent, local: memAddr(t.addr), remote: memAddr(a.Addr)}, nil
}

// Shutdown takes the transport off the network.
func (t *MemTransport) Shutdown() error {
	t.once.Do(func() {
		t.net.mu.Lock()
		if t.net.eps[t.addr] == t {
			delete(t.net.eps, t.addr)
		}
		t.net.mu.Unlock()
		close(t.done)
		// Streams queued and never taken are closed, so their dialers'
		// writes fail as on a connection reset.
		for {
			select {
			case c := <-t.streams:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return nil
}

// memConn is one end of a stream: each write is counted and arrives the
// pair's delay later.
type memConn struct {
	net.Conn
	delay         time.Duration
	sent          *atomic.Uint64
	local, remote net.Addr
}

func (c *memConn) Write(b []byte) (int, error) {
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	n, err := c.Conn.Write(b)
	c.sent.Add(uint64(n))
	return n, err
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }
