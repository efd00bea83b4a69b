package gossip

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// MemNet is test and measurement support: a network of memberlist
// transports held in memory, between nodes of one process, whose traffic a
// test can delay, lose, duplicate and partition while the nodes run, and
// which counts the bytes each address sends. It has no sockets, so a test's
// few nodes need no ports and the scale harness's hundreds fit in one
// process. It has no effect on a node unless one of its transports is given
// as Config.Transport or Config.WANTransport; production code never builds
// one.
//
// Faults are applied on the sending side, so with every node of a test on
// one MemNet a loss probability p loses p of the packets in each direction
// of every link. Packets (memberlist's UDP side: probes, gossip) can be
// lost, delayed, reordered by jitter and duplicated; a packet that finds
// the receiver's queue full is lost, as a datagram would be. Streams (its
// TCP side: push-pull, joins, reliable messages) are never lost, as TCP
// repairs loss itself, but are refused across a partition or by an
// injected dial failure; connecting takes a round trip, and every write
// arrives the pair's delay later, which holds the writer up as a window of
// one message would.
//
// Random choices come from one generator seeded by NewMemNet, so a test
// that fails can be rerun with the same sequence of draws (the order in
// which memberlist's goroutines draw still varies).
type MemNet struct {
	// cfg is the faults in force, replaced whole by each setter, so that
	// a packet reads them without a lock: hundreds of nodes send through
	// one network, and a lock taken for every packet would make the
	// harness, not the protocol, what a measurement measures.
	cfg  atomic.Pointer[memConfig]
	seed uint64

	mu sync.RWMutex // guards sent, nextPort, the setters and replacing eps
	// eps is the transports by address, replaced whole when one comes or
	// goes (rare), so that a packet finds its receiver without a lock.
	eps      atomic.Pointer[map[string]*MemTransport]
	sent     map[string]*atomic.Uint64
	nextPort int

	stats struct {
		sent, lost, duplicated, delayed, blocked, overflow, refusedDials atomic.Int64
		// lateNanos and lateMaxNanos: how much later than due delayed
		// packets reached their receiver's queue, summed and at most.
		lateNanos, lateMaxNanos atomic.Int64
	}
}

// memConfig is the faults of a MemNet at one moment.
type memConfig struct {
	delay   func(from, to string) time.Duration
	jitter  time.Duration
	loss    float64
	dup     float64
	blocked func(from, to string) bool
	trace   func(from, to string, packet []byte)
	// lateCopy and lateMax: a duplicate's second copy comes late with
	// probability lateCopy, by up to lateMax.
	lateCopy float64
	lateMax  time.Duration
	dialFail float64
}

// NetStats counts what a MemNet did to the traffic it carried.
type NetStats struct {
	Sent         int64 // packets memberlist asked to send
	Lost         int64 // of those, dropped as lost
	Duplicated   int64 // sent twice
	Delayed      int64 // copies delivered after a delay
	Blocked      int64 // dropped by the partition
	Overflow     int64 // copies dropped because the receiver's queue was full
	RefusedDials int64 // stream dials refused by the partition or by chance
	// LateTotal and LateMax are how much later than due the delayed copies
	// reached their receiver, summed and at most: what the process's
	// scheduler added to the modelled delay. Near zero on an idle machine;
	// large when the process is starved of CPU.
	LateTotal, LateMax time.Duration
}

// NewMemNet returns a network with no faults yet; seed fixes its random
// draws.
func NewMemNet(seed uint64) *MemNet {
	m := &MemNet{
		seed:     seed,
		sent:     map[string]*atomic.Uint64{},
		nextPort: memFirstPort,
	}
	m.cfg.Store(&memConfig{})
	m.eps.Store(&map[string]*MemTransport{})
	return m
}

// memFirstPort is the first port handed out for an address asked with
// port 0.
const memFirstPort = 20000

// set changes the faults in force.
func (m *MemNet) set(change func(c *memConfig)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *m.cfg.Load()
	change(&c)
	m.cfg.Store(&c)
}

// SetLoss makes each packet lost with probability p (0 to 1).
func (m *MemNet) SetLoss(p float64) { m.set(func(c *memConfig) { c.loss = p }) }

// SetDuplication makes each packet that is not lost arrive twice with
// probability p; the copy follows the delay like the original, with its own
// jitter, so it may arrive after later packets.
func (m *MemNet) SetDuplication(p float64) { m.set(func(c *memConfig) { c.dup = p }) }

// SetLateCopies makes the second copy of a duplicated packet come late with
// probability p, by a uniform draw in [0, max) on top of the delay: behind
// packets sent after it, as a copy that took a slower path does.
func (m *MemNet) SetLateCopies(p float64, max time.Duration) {
	m.set(func(c *memConfig) { c.lateCopy, c.lateMax = p, max })
}

// SetDialFailure makes each stream dial (push-pull, join, reliable message)
// refused with probability p, as a connection reset or a full backlog would.
func (m *MemNet) SetDialFailure(p float64) { m.set(func(c *memConfig) { c.dialFail = p }) }

// SetDelay holds every packet back by d plus a uniform draw in [0, jitter),
// which reorders packets when jitter is larger than the gap between them;
// streams take d each way.
func (m *MemNet) SetDelay(d, jitter time.Duration) {
	m.set(func(c *memConfig) {
		c.delay = func(string, string) time.Duration { return d }
		c.jitter = jitter
	})
}

// SetPairDelay models the one-way delay from address from to address to,
// for packets (plus the jitter SetDelay set) and streams alike. delay runs
// on memberlist's goroutines and must be safe to call from many at once.
func (m *MemNet) SetPairDelay(delay func(from, to string) time.Duration) {
	m.set(func(c *memConfig) { c.delay = delay })
}

// SetBlocked installs a partition: a packet from address from to address to
// is dropped when blocked(from, to) holds, and a stream dial is refused when
// it holds in either direction (a stream is a conversation both ways).
// Addresses are memberlist's "host:port", as MemTransport.Addr and
// Node.Addr give them. blocked runs on memberlist's goroutines and must be
// safe to call from many at once. nil removes the partition.
func (m *MemNet) SetBlocked(blocked func(from, to string) bool) {
	m.set(func(c *memConfig) { c.blocked = blocked })
}

// Partition splits the network into the given groups of addresses: traffic
// between two addresses of different groups is cut, both ways. An address
// in no group reaches every other.
func (m *MemNet) Partition(groups ...[]string) {
	side := map[string]int{}
	for i, g := range groups {
		for _, a := range g {
			side[a] = i + 1
		}
	}
	m.SetBlocked(func(from, to string) bool {
		a, b := side[from], side[to]
		return a != 0 && b != 0 && a != b
	})
}

// Heal removes the partition; loss, delay and duplication stay as set.
func (m *MemNet) Heal() { m.SetBlocked(nil) }

// SetTrace calls trace with every packet a transport is asked to send,
// before any fault is applied (nil stops it): a test can see what memberlist
// says to whom. trace runs on memberlist's goroutines and must not keep
// packet or block.
func (m *MemNet) SetTrace(trace func(from, to string, packet []byte)) {
	m.set(func(c *memConfig) { c.trace = trace })
}

// Stats returns what the network has done so far.
func (m *MemNet) Stats() NetStats {
	s := &m.stats
	return NetStats{
		Sent:         s.sent.Load(),
		Lost:         s.lost.Load(),
		Duplicated:   s.duplicated.Load(),
		Delayed:      s.delayed.Load(),
		Blocked:      s.blocked.Load(),
		Overflow:     s.overflow.Load(),
		RefusedDials: s.refusedDials.Load(),
		LateTotal:    time.Duration(s.lateNanos.Load()),
		LateMax:      time.Duration(s.lateMaxNanos.Load()),
	}
}

// Sent is how many bytes the transports at the given addresses have sent,
// packets and streams, before any fault; an address keeps its count across
// the transports that held it in turn.
func (m *MemNet) Sent(addrs ...string) uint64 {
	var n uint64
	for _, a := range addrs {
		n += m.counter(a).Load()
	}
	return n
}

func (m *MemNet) counter(addr string) *atomic.Uint64 {
	m.mu.RLock()
	c := m.sent[addr]
	m.mu.RUnlock()
	if c != nil {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counterLocked(addr)
}

func (m *MemNet) counterLocked(addr string) *atomic.Uint64 {
	c := m.sent[addr]
	if c == nil {
		c = new(atomic.Uint64)
		m.sent[addr] = c
	}
	return c
}

// Transport is a transport at addr ("ip:port"); port 0 picks one no
// transport of the network holds, a fixed port lets a restarted node come
// back at its old address. An address is held by one transport at a time,
// until its Shutdown. Pass it as Config.Transport (or return it from
// Config.WANTransport); memberlist shuts it down with the node.
func (m *MemNet) Transport(addr string) (*MemTransport, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("memory transport %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("memory transport %q: not an ip:port", addr)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	eps := *m.eps.Load()
	if p == 0 {
		for {
			p = m.nextPort
			m.nextPort++
			if m.nextPort > 65535 {
				m.nextPort = memFirstPort
			}
			if _, taken := eps[net.JoinHostPort(host, strconv.Itoa(p))]; !taken {
				break
			}
		}
	}
	addr = net.JoinHostPort(host, strconv.Itoa(p))
	if _, taken := eps[addr]; taken {
		return nil, fmt.Errorf("memory transport %q: address in use", addr)
	}
	// Each transport draws from a generator of its own, seeded from the
	// network's seed and its address: the draws stay reproducible without
	// every packet of the network waiting for one generator.
	h := fnv.New64a()
	_, _ = h.Write([]byte(addr))
	t := &MemTransport{net: m, addr: addr, ip: ip, port: p, sent: m.counterLocked(addr),
		rng:     rand.New(rand.NewPCG(m.seed, h.Sum64()^0x9e3779b97f4a7c15)),
		packets: make(chan *memberlist.Packet, memQueue), streams: make(chan net.Conn, 64), done: make(chan struct{})}
	next := maps.Clone(eps)
	next[addr] = t
	m.eps.Store(&next)
	return t, nil
}

// packetFate is what happens to one packet: dropped, or delivered after
// each of the delays (one per copy).
type packetFate struct {
	drop   bool
	delays [2]time.Duration
	copies int
}

// fate draws what happens to a packet from t to address to under the
// faults c.
func (t *MemTransport) fate(c *memConfig, to string) packetFate {
	m := t.net
	m.stats.sent.Add(1)
	if c.blocked != nil && c.blocked(t.addr, to) {
		m.stats.blocked.Add(1)
		return packetFate{drop: true}
	}
	var base time.Duration
	if c.delay != nil {
		base = c.delay(t.addr, to)
	}
	if c.loss == 0 && c.dup == 0 && c.jitter == 0 {
		return packetFate{copies: 1, delays: [2]time.Duration{base}}
	}
	t.rngMu.Lock()
	defer t.rngMu.Unlock()
	if c.loss > 0 && t.rng.Float64() < c.loss {
		m.stats.lost.Add(1)
		return packetFate{drop: true}
	}
	pf := packetFate{copies: 1}
	if c.dup > 0 && t.rng.Float64() < c.dup {
		m.stats.duplicated.Add(1)
		pf.copies = 2
	}
	for i := 0; i < pf.copies; i++ {
		d := base
		if c.jitter > 0 {
			d += time.Duration(t.rng.Int64N(int64(c.jitter)))
		}
		if i == 1 && c.lateCopy > 0 && c.lateMax > 0 && t.rng.Float64() < c.lateCopy {
			d += time.Duration(t.rng.Int64N(int64(c.lateMax)))
		}
		pf.delays[i] = d
	}
	return pf
}

// dialFate is the one-way delay between the two ends of a stream from t to
// address to, or why it is refused ("" when it is not).
func (t *MemTransport) dialFate(to string) (time.Duration, string) {
	c := t.net.cfg.Load()
	if c.blocked != nil && (c.blocked(t.addr, to) || c.blocked(to, t.addr)) {
		t.net.stats.refusedDials.Add(1)
		return 0, "partitioned"
	}
	if c.dialFail > 0 {
		t.rngMu.Lock()
		refused := t.rng.Float64() < c.dialFail
		t.rngMu.Unlock()
		if refused {
			t.net.stats.refusedDials.Add(1)
			return 0, "dial refused by injected failure"
		}
	}
	var d time.Duration
	if c.delay != nil {
		d = c.delay(t.addr, to)
	}
	return d, ""
}

// endpoint is the transport that holds addr now, nil when none does.
func (m *MemNet) endpoint(addr string) *MemTransport { return (*m.eps.Load())[addr] }

// deliver hands a packet to whichever transport holds address to when it
// arrives (a node restarted at its old address hears what was sent to the
// one before), or drops it when none does or its queue is full.
func (m *MemNet) deliver(to string, p *memberlist.Packet) {
	dst := m.endpoint(to)
	if dst == nil {
		return
	}
	select {
	case <-dst.done:
	case dst.packets <- p:
	default:
		m.stats.overflow.Add(1)
	}
}

// late records how much later than due a delayed copy arrived.
func (m *MemNet) late(d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.stats.lateNanos.Add(int64(d))
	for {
		cur := m.stats.lateMaxNanos.Load()
		if int64(d) <= cur || m.stats.lateMaxNanos.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// memQueue is how many packets wait for a node to read them before more
// are lost: about what a datagram socket's default buffer holds. A node
// whose process is starved of CPU then loses packets, as it would on a
// network, rather than holding more and more of them.
const memQueue = 256

// A MemTransport is a memberlist.NodeAwareTransport, so memberlist sends
// through the address-aware calls; checked here, as memberlist checks its
// own mock transport.
var _ memberlist.NodeAwareTransport = (*MemTransport)(nil)

// MemTransport is one node's transport on a MemNet.
type MemTransport struct {
	net     *MemNet
	addr    string
	ip      net.IP
	port    int
	sent    *atomic.Uint64
	rngMu   sync.Mutex
	rng     *rand.Rand
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// Addr is the transport's address, "host:port": the node's address for
// SetBlocked, Partition and Sent.
func (t *MemTransport) Addr() string { return t.addr }

// FinalAdvertiseAddr advertises the transport's own address.
func (t *MemTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return t.ip, t.port, nil
}

// PacketCh delivers the packets sent to the transport.
func (t *MemTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

// StreamCh delivers the streams opened to the transport.
func (t *MemTransport) StreamCh() <-chan net.Conn { return t.streams }

// WriteTo sends a packet, subject to the network's faults.
func (t *MemTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a packet: counted, traced, then lost or delivered
// (perhaps twice) after the pair's delay.
func (t *MemTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	t.sent.Add(uint64(len(b)))
	m := t.net
	c := m.cfg.Load()
	if c.trace != nil {
		c.trace(t.addr, a.Addr, b)
	}
	pf := t.fate(c, a.Addr)
	if pf.drop {
		return now, nil // lost on the way: the sender cannot tell
	}
	for i := 0; i < pf.copies; i++ {
		p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: memAddr(t.addr)}
		d := pf.delays[i]
		if d <= 0 {
			p.Timestamp = now
			m.deliver(a.Addr, p)
			continue
		}
		m.stats.delayed.Add(1)
		due := now.Add(d)
		time.AfterFunc(d, func() {
			p.Timestamp = time.Now()
			m.late(p.Timestamp.Sub(due))
			m.deliver(a.Addr, p)
		})
	}
	return now, nil
}

// DialTimeout opens a stream.
func (t *MemTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// errRefused is a dial to an address no transport holds.
var errRefused = errors.New("connection refused")

// DialAddressTimeout opens a stream after a round trip, or fails at once
// when the partition or an injected failure refuses it or nothing listens
// at the address.
func (t *MemTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d, refused := t.dialFate(a.Addr)
	if refused != "" {
		return nil, fmt.Errorf("memory dial %s from %s: %s", a.Addr, t.addr, refused)
	}
	if t.net.endpoint(a.Addr) == nil {
		return nil, fmt.Errorf("memory dial %s from %s: %w", a.Addr, t.addr, errRefused)
	}
	if 2*d >= timeout {
		time.Sleep(timeout)
		return nil, fmt.Errorf("memory dial %s from %s: timed out after %s", a.Addr, t.addr, timeout)
	}
	time.Sleep(2 * d)
	timeout -= 2 * d
	dst := t.net.endpoint(a.Addr)
	if dst == nil {
		return nil, fmt.Errorf("memory dial %s from %s: %w", a.Addr, t.addr, errRefused)
	}
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

// Shutdown takes the transport off the network: packets still on their way
// to its address are lost, unless a new transport takes the address first.
func (t *MemTransport) Shutdown() error {
	t.once.Do(func() {
		m := t.net
		m.mu.Lock()
		if eps := *m.eps.Load(); eps[t.addr] == t {
			next := maps.Clone(eps)
			delete(next, t.addr)
			m.eps.Store(&next)
		}
		m.mu.Unlock()
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
