package gossip

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// FaultNet is test support: a loopback network of memberlist transports
// whose traffic a test can lose, delay, duplicate and partition while the
// nodes run. It has no effect on a node unless the node is given one of its
// transports through Config.Transport; production code never builds one.
//
// Faults are applied on the sending side, so with every node of a test on
// one FaultNet a loss probability p loses p of the packets in each direction
// of every link. Packets (memberlist's UDP side: probes, gossip) can be
// lost, delayed and duplicated; streams (its TCP side: push-pull, joins,
// reliable messages) are refused across a partition and delayed before they
// connect, but never lost: TCP repairs loss itself.
//
// Random choices come from one generator seeded by NewFaultNet, so a test
// that fails can be rerun with the same sequence of draws (the order in
// which memberlist's goroutines draw still varies).
type FaultNet struct {
	mu      sync.Mutex
	rng     *rand.Rand
	loss    float64
	dup     float64
	delay   time.Duration
	jitter  time.Duration
	blocked func(from, to string) bool
	trace   func(from, to string, packet []byte)
	// lateCopy and lateMax: a duplicate's second copy comes late with
	// probability lateCopy, by up to lateMax.
	lateCopy float64
	lateMax  time.Duration
	dialFail float64

	sent, lost, duplicated, delayed, blockedPackets, refusedDials atomic.Int64
}

// FaultStats counts what a FaultNet did to the traffic it carried.
type FaultStats struct {
	Sent         int64 // packets memberlist asked to send
	Lost         int64 // of those, dropped as lost
	Duplicated   int64 // sent twice
	Delayed      int64 // sent late
	Blocked      int64 // dropped by the partition
	RefusedDials int64 // stream dials refused by the partition or by chance
}

// NewFaultNet returns a network with no faults yet; seed fixes its random
// draws.
func NewFaultNet(seed uint64) *FaultNet {
	return &FaultNet{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// SetLoss makes each packet lost with probability p (0 to 1).
func (f *FaultNet) SetLoss(p float64) {
	f.mu.Lock()
	f.loss = p
	f.mu.Unlock()
}

// SetDuplication makes each packet that is not lost arrive twice with
// probability p; the copy follows the delay like the original, with its own
// jitter, so it may arrive after later packets.
func (f *FaultNet) SetDuplication(p float64) {
	f.mu.Lock()
	f.dup = p
	f.mu.Unlock()
}

// SetLateCopies makes the second copy of a duplicated packet come late with
// probability p, by a uniform draw in [0, max) on top of the delay: behind
// packets sent after it, as a copy that took a slower path does.
func (f *FaultNet) SetLateCopies(p float64, max time.Duration) {
	f.mu.Lock()
	f.lateCopy, f.lateMax = p, max
	f.mu.Unlock()
}

// SetDialFailure makes each stream dial (push-pull, join, reliable message)
// refused with probability p, as a connection reset or a full backlog would.
func (f *FaultNet) SetDialFailure(p float64) {
	f.mu.Lock()
	f.dialFail = p
	f.mu.Unlock()
}

// SetDelay holds every packet back by d plus a uniform draw in [0, jitter),
// which reorders packets when jitter is larger than the gap between them,
// and makes every stream dial wait d (capped by the dial's timeout).
func (f *FaultNet) SetDelay(d, jitter time.Duration) {
	f.mu.Lock()
	f.delay, f.jitter = d, jitter
	f.mu.Unlock()
}

// SetBlocked installs a partition: a packet from address from to address to
// is dropped when blocked(from, to) holds, and a stream dial is refused when
// it holds in either direction (a stream is a conversation both ways).
// Addresses are memberlist's "host:port", as Transport.Addr and Node.Addr
// give them. blocked runs under the network's lock and must not call it.
// nil removes the partition.
func (f *FaultNet) SetBlocked(blocked func(from, to string) bool) {
	f.mu.Lock()
	f.blocked = blocked
	f.mu.Unlock()
}

// Partition splits the network into the given groups of addresses: traffic
// between two addresses of different groups is cut, both ways. An address
// in no group reaches every other.
func (f *FaultNet) Partition(groups ...[]string) {
	side := map[string]int{}
	for i, g := range groups {
		for _, a := range g {
			side[a] = i + 1
		}
	}
	f.SetBlocked(func(from, to string) bool {
		a, b := side[from], side[to]
		return a != 0 && b != 0 && a != b
	})
}

// SetTrace calls trace with every packet a transport is asked to send,
// before any fault is applied (nil stops it): a test can see what memberlist
// says to whom. trace runs on memberlist's goroutines and must not keep
// packet or block.
func (f *FaultNet) SetTrace(trace func(from, to string, packet []byte)) {
	f.mu.Lock()
	f.trace = trace
	f.mu.Unlock()
}

// Heal removes the partition; loss, delay and duplication stay as set.
func (f *FaultNet) Heal() { f.SetBlocked(nil) }

// Stats returns what the network has done so far.
func (f *FaultNet) Stats() FaultStats {
	return FaultStats{
		Sent:         f.sent.Load(),
		Lost:         f.lost.Load(),
		Duplicated:   f.duplicated.Load(),
		Delayed:      f.delayed.Load(),
		Blocked:      f.blockedPackets.Load(),
		RefusedDials: f.refusedDials.Load(),
	}
}

// packetFate is what happens to one packet: dropped, or sent after each of
// the delays (one per copy).
type packetFate struct {
	drop   bool
	delays [2]time.Duration
	copies int
}

func (f *FaultNet) fate(from, to string) packetFate {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent.Add(1)
	if f.blocked != nil && f.blocked(from, to) {
		f.blockedPackets.Add(1)
		return packetFate{drop: true}
	}
	if f.loss > 0 && f.rng.Float64() < f.loss {
		f.lost.Add(1)
		return packetFate{drop: true}
	}
	pf := packetFate{copies: 1}
	if f.dup > 0 && f.rng.Float64() < f.dup {
		f.duplicated.Add(1)
		pf.copies = 2
	}
	for i := 0; i < pf.copies; i++ {
		d := f.delay
		if f.jitter > 0 {
			d += time.Duration(f.rng.Int64N(int64(f.jitter)))
		}
		if i == 1 && f.lateCopy > 0 && f.lateMax > 0 && f.rng.Float64() < f.lateCopy {
			d += time.Duration(f.rng.Int64N(int64(f.lateMax)))
		}
		pf.delays[i] = d
		if d > 0 {
			f.delayed.Add(1)
		}
	}
	return pf
}

// dialFate is the delay before a stream dial connects, or why it is
// refused ("" when it is not).
func (f *FaultNet) dialFate(from, to string) (time.Duration, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.blocked != nil && (f.blocked(from, to) || f.blocked(to, from)) {
		f.refusedDials.Add(1)
		return 0, "partitioned"
	}
	if f.dialFail > 0 && f.rng.Float64() < f.dialFail {
		f.refusedDials.Add(1)
		return 0, "dial refused by injected failure"
	}
	return f.delay, ""
}

// Transport binds a new memberlist NetTransport at bind ("127.0.0.1:0"
// picks a free port; a fixed port lets a restarted node come back at its
// old address) and wraps it with the network's faults. Pass it as
// Config.Transport; memberlist shuts it down with the node.
func (f *FaultNet) Transport(bind string) (*FaultTransport, error) {
	host, port, err := splitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("fault transport bind %q: %w", bind, err)
	}
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{host},
		BindPort:  port,
		Logger:    log.New(io.Discard, "", 0),
	})
	if err != nil {
		return nil, fmt.Errorf("fault transport bind %q: %w", bind, err)
	}
	return &FaultTransport{
		NetTransport: nt,
		net:          f,
		addr:         net.JoinHostPort(host, strconv.Itoa(nt.GetAutoBindPort())),
	}, nil
}

// A FaultTransport is a memberlist.NodeAwareTransport, so memberlist sends
// through the address-aware calls that carry the faults; checked here, as
// memberlist checks its own mock transport.
var _ memberlist.NodeAwareTransport = (*FaultTransport)(nil)

// FaultTransport is one node's transport on a FaultNet.
type FaultTransport struct {
	*memberlist.NetTransport
	net  *FaultNet
	addr string

	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup // late packets in flight; Add only under mu while open
}

// Addr is the address the transport is bound to, "host:port": the node's
// address for SetBlocked and Partition.
func (t *FaultTransport) Addr() string { return t.addr }

// FinalAdvertiseAddr advertises the port the transport bound: with a
// transport of its own, memberlist passes on the configured port, which is
// 0 when the node was asked to pick one.
func (t *FaultTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if port == 0 {
		port = t.GetAutoBindPort()
	}
	return t.NetTransport.FinalAdvertiseAddr(ip, port)
}

func (t *FaultTransport) send(b []byte, to string, write func([]byte)) (time.Time, error) {
	t.net.mu.Lock()
	trace := t.net.trace
	t.net.mu.Unlock()
	if trace != nil {
		trace(t.addr, to, b)
	}
	pf := t.net.fate(t.addr, to)
	if pf.drop {
		return time.Now(), nil // lost on the way: the sender cannot tell
	}
	for i := 0; i < pf.copies; i++ {
		d := pf.delays[i]
		if d <= 0 {
			write(b)
			continue
		}
		cp := bytes.Clone(b)
		t.mu.Lock()
		if !t.closed {
			t.pending.Add(1)
			time.AfterFunc(d, func() {
				defer t.pending.Done()
				write(cp)
			})
		}
		t.mu.Unlock()
	}
	return time.Now(), nil
}

// WriteTo sends a packet, subject to the network's faults.
func (t *FaultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.send(b, addr, func(p []byte) { _, _ = t.NetTransport.WriteTo(p, addr) })
}

// WriteToAddress sends a packet, subject to the network's faults.
func (t *FaultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.send(b, a.Addr, func(p []byte) { _, _ = t.NetTransport.WriteToAddress(p, a) })
}

// DialAddressTimeout opens a stream unless the partition cuts it.
func (t *FaultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d, refused := t.net.dialFate(t.addr, a.Addr)
	if refused != "" {
		return nil, fmt.Errorf("fault net: %s cannot reach %s: %s", t.addr, a.Addr, refused)
	}
	if d > 0 {
		if d >= timeout {
			time.Sleep(timeout)
			return nil, fmt.Errorf("fault net: dial %s from %s: timed out after %s", a.Addr, t.addr, timeout)
		}
		time.Sleep(d)
		timeout -= d
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}

// DialTimeout opens a stream unless the partition cuts it.
func (t *FaultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// Shutdown waits for late packets still in flight, then closes the
// listeners.
func (t *FaultTransport) Shutdown() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.pending.Wait()
	return t.NetTransport.Shutdown()
}
