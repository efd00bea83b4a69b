package gossip

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// LinkFaults is test support: the delay and loss of a link between data
// centers, injected into a node's real transport of the pool between data
// centers (Config.WANFaults), so that a ring of real processes on one
// machine's loopback runs with the distances of a WAN between its data
// centers. The zero value injects nothing, and production never sets it.
//
// Every packet (probes, gossip) the pool sends leaves Delay plus a uniform
// draw in [0, Jitter) late, or is lost with probability Loss; a jitter
// larger than the gap between two packets reorders them, as paths of
// different lengths do. Streams (push-pull, joins, reliable messages) are
// never lost: a dial takes a round trip (two draws) before it connects, and
// every write on a stream, the node's own and those it answers on streams
// it accepted, leaves one draw late, which holds the writer up as a window
// of one message would. With every node of a ring given the same faults,
// each direction of each link between data centers is delayed once, by the
// side that sends.
//
// Unlike MemNet, the network of memory that the tests and the scale harness build
// around transports of their own, LinkFaults wraps whatever transport the
// pool has, the node's counted network transport included: bytes count in
// the node's stats when they leave, so a packet lost here is not counted.
type LinkFaults struct {
	// Delay is the least one-way delay; Jitter the spread above it.
	Delay, Jitter time.Duration
	// Loss is the probability that a packet is lost (0 ≤ Loss < 1).
	Loss float64
}

// None reports whether f injects nothing.
func (f LinkFaults) None() bool { return f.Delay == 0 && f.Jitter == 0 && f.Loss == 0 }

// Check says which field of f is out of range, or nil.
func (f LinkFaults) Check() error {
	switch {
	case f.Delay < 0 || f.Delay > time.Minute:
		return fmt.Errorf("gossip: link delay %v: must be 0 to 1m", f.Delay)
	case f.Jitter < 0 || f.Jitter > time.Minute:
		return fmt.Errorf("gossip: link jitter %v: must be 0 to 1m", f.Jitter)
	case !(f.Loss >= 0 && f.Loss < 1):
		return fmt.Errorf("gossip: link loss %v: must be at least 0 and below 1", f.Loss)
	}
	return nil
}

// draw is one one-way delay, drawn with rng.
func (f LinkFaults) draw(rng *rand.Rand) time.Duration {
	d := f.Delay
	if f.Jitter > 0 {
		d += time.Duration(rng.Int64N(int64(f.Jitter)))
	}
	return d
}

// fate is what becomes of one packet, drawn with rng: lost, or sent after
// the returned delay.
func (f LinkFaults) fate(rng *rand.Rand) (lost bool, delay time.Duration) {
	if f.Loss > 0 && rng.Float64() < f.Loss {
		return true, 0
	}
	return false, f.draw(rng)
}

// wrap returns t with f's faults on what it sends.
func (f LinkFaults) wrap(t memberlist.Transport) *faultyTransport {
	nat, ok := t.(memberlist.NodeAwareTransport)
	if !ok {
		nat = shimTransport{t}
	}
	ft := &faultyTransport{
		NodeAwareTransport: nat,
		faults:             f,
		rng:                rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		streams:            make(chan net.Conn),
		done:               make(chan struct{}),
		innerDown:          make(chan struct{}),
	}
	ft.pending.Add(1)
	go ft.acceptStreams()
	return ft
}

// shimTransport gives a plain transport the address-aware calls, as
// memberlist itself does for one.
type shimTransport struct{ memberlist.Transport }

func (s shimTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return s.WriteTo(b, a.Addr)
}

func (s shimTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return s.DialTimeout(a.Addr, timeout)
}

// A faultyTransport is a memberlist.NodeAwareTransport, so memberlist sends
// through the address-aware calls that carry the faults.
var _ memberlist.NodeAwareTransport = (*faultyTransport)(nil)

// faultyTransport is a pool's transport with LinkFaults on what it sends.
type faultyTransport struct {
	memberlist.NodeAwareTransport
	faults LinkFaults

	rngMu sync.Mutex
	rng   *rand.Rand

	// streams are the accepted streams, wrapped; done closes as Shutdown
	// begins, innerDown once the wrapped transport has shut down.
	streams   chan net.Conn
	done      chan struct{}
	innerDown chan struct{}

	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup // late packets in flight and the accepting goroutine; Add only under mu while open
}

func (t *faultyTransport) draw() time.Duration {
	t.rngMu.Lock()
	defer t.rngMu.Unlock()
	return t.faults.draw(t.rng)
}

// send writes b after its fate's delay, unless it is lost. The time
// returned is the call's, as a packet's send time is: a probe's round trip
// then includes the delay, as it would across a WAN.
func (t *faultyTransport) send(b []byte, write func([]byte)) (time.Time, error) {
	t.rngMu.Lock()
	lost, d := t.faults.fate(t.rng)
	t.rngMu.Unlock()
	now := time.Now()
	if lost {
		return now, nil // lost on the way: the sender cannot tell
	}
	if d <= 0 {
		write(b)
		return now, nil
	}
	cp := bytes.Clone(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.pending.Add(1)
		time.AfterFunc(d, func() {
			defer t.pending.Done()
			write(cp)
		})
	}
	return now, nil
}

// WriteTo sends a packet late, or loses it.
func (t *faultyTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.send(b, func(p []byte) { _, _ = t.NodeAwareTransport.WriteTo(p, addr) })
}

// WriteToAddress sends a packet late, or loses it.
func (t *faultyTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.send(b, func(p []byte) { _, _ = t.NodeAwareTransport.WriteToAddress(p, a) })
}

// DialAddressTimeout connects after a round trip, within timeout, and
// delays every write on the stream.
func (t *faultyTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	rtt := t.draw() + t.draw()
	if rtt >= timeout {
		time.Sleep(timeout)
		return nil, fmt.Errorf("dial %s: timed out after %v (a round trip of %v between data centers)", a.Addr, timeout, rtt)
	}
	time.Sleep(rtt)
	c, err := t.NodeAwareTransport.DialAddressTimeout(a, timeout-rtt)
	if err != nil {
		return nil, err
	}
	return &faultyConn{Conn: c, t: t}, nil
}

// DialTimeout connects after a round trip and delays every write.
func (t *faultyTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// StreamCh hands over the accepted streams, every write on them delayed.
func (t *faultyTransport) StreamCh() <-chan net.Conn { return t.streams }

func (t *faultyTransport) acceptStreams() {
	defer t.pending.Done()
	in := t.NodeAwareTransport.StreamCh()
	for {
		select {
		case c := <-in:
			select {
			case t.streams <- &faultyConn{Conn: c, t: t}:
			case <-t.done:
				c.Close()
			}
		case <-t.innerDown:
			return
		}
	}
}

// Shutdown stops handing over streams, shuts the wrapped transport down,
// then waits for late packets still in flight. Streams the wrapped
// transport accepts meanwhile are taken and closed: memberlist's network
// transport hands each over on a channel without a buffer and waits for
// its listener at shutdown, so a stream nobody took would hold its
// Shutdown, and the node's, for ever.
func (t *faultyTransport) Shutdown() error {
	t.mu.Lock()
	first := !t.closed
	if first {
		t.closed = true
		close(t.done)
	}
	t.mu.Unlock()
	err := t.NodeAwareTransport.Shutdown()
	if first {
		close(t.innerDown)
	}
	t.pending.Wait()
	return err
}

// faultyConn is a stream whose writes leave a draw of the link's delay
// late.
type faultyConn struct {
	net.Conn
	t *faultyTransport
}

func (c *faultyConn) Write(b []byte) (int, error) {
	time.Sleep(c.t.draw())
	return c.Conn.Write(b)
}
