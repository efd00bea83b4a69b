package gossip

import (
	"bytes"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestLinkFaultsCheck(t *testing.T) {
	cases := []struct {
		name string
		f    LinkFaults
		ok   bool
	}{
		{"no faults are fine", LinkFaults{}, true},
		{"a delay, a jitter and a loss below one are fine", LinkFaults{Delay: 50 * time.Millisecond, Jitter: 100 * time.Millisecond, Loss: 0.01}, true},
		{"a negative delay is refused", LinkFaults{Delay: -time.Millisecond}, false},
		{"a delay past a minute is refused", LinkFaults{Delay: 2 * time.Minute}, false},
		{"a negative jitter is refused", LinkFaults{Jitter: -time.Millisecond}, false},
		{"a loss of one is refused: nothing would cross", LinkFaults{Loss: 1}, false},
		{"a negative loss is refused", LinkFaults{Loss: -0.1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.f.Check(); (err == nil) != c.ok {
				t.Fatalf("Check(%+v) = %v, want ok %v", c.f, err, c.ok)
			}
		})
	}
}

func TestLinkFaultsFate(t *testing.T) {
	cases := []struct {
		name     string
		f        LinkFaults
		lostLow  float64 // bounds of the share of packets lost
		lostHigh float64
	}{
		{"a fixed delay delays every packet by it and loses none", LinkFaults{Delay: 100 * time.Millisecond}, 0, 0},
		{"a jitter spreads the delay above the least", LinkFaults{Delay: 50 * time.Millisecond, Jitter: 100 * time.Millisecond}, 0, 0},
		{"a loss loses about that share of the packets", LinkFaults{Delay: 10 * time.Millisecond, Loss: 0.2}, 0.15, 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const draws = 10_000
			lost := 0
			var least, most time.Duration = time.Hour, 0
			for range draws {
				l, d := c.f.fate(rng)
				if l {
					lost++
					continue
				}
				least, most = min(least, d), max(most, d)
			}
			if least < c.f.Delay || most >= c.f.Delay+max(c.f.Jitter, 1) {
				t.Fatalf("delays drawn %v–%v, want within [%v, %v)", least, most, c.f.Delay, c.f.Delay+c.f.Jitter)
			}
			if c.f.Jitter > 0 && most-least < c.f.Jitter/2 {
				t.Fatalf("delays drawn %v–%v: the jitter %v is not spread", least, most, c.f.Jitter)
			}
			if share := float64(lost) / draws; share < c.lostLow || share > c.lostHigh {
				t.Fatalf("lost %.3f of the packets, want %.2f–%.2f", share, c.lostLow, c.lostHigh)
			}
		})
	}
}

// netTransport binds a memberlist network transport on a free loopback
// port.
func netTransport(t *testing.T) *memberlist.NetTransport {
	t.Helper()
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{"127.0.0.1"}, BindPort: 0, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return nt
}

func addrOf(nt *memberlist.NetTransport) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(nt.GetAutoBindPort()))
}

// The delays are checked from below only: a packet or a write may come
// later than its delay on a busy machine, never earlier.
func TestLinkFaultsOnARealTransport(t *testing.T) {
	const delay = 40 * time.Millisecond
	f := LinkFaults{Delay: delay}

	t.Run("a packet arrives no earlier than the delay", func(t *testing.T) {
		from, to := f.wrap(netTransport(t)), netTransport(t)
		defer from.Shutdown()
		defer to.Shutdown()
		sent, err := from.WriteToAddress([]byte("ping"), memberlist.Address{Addr: addrOf(to)})
		if err != nil {
			t.Fatal(err)
		}
		p := <-to.PacketCh()
		if !bytes.Equal(p.Buf, []byte("ping")) {
			t.Fatalf("received %q", p.Buf)
		}
		if took := p.Timestamp.Sub(sent); took < delay {
			t.Fatalf("the packet arrived %v after it was sent, before the delay %v", took, delay)
		}
	})

	t.Run("a stream connects after a round trip and both sides' writes arrive a delay late", func(t *testing.T) {
		dialer, acceptor := f.wrap(netTransport(t)), f.wrap(netTransport(t))
		defer dialer.Shutdown()
		defer acceptor.Shutdown()
		start := time.Now()
		c, err := dialer.DialAddressTimeout(memberlist.Address{Addr: addrOf(acceptor.NodeAwareTransport.(*memberlist.NetTransport))}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if took := time.Since(start); took < 2*delay {
			t.Fatalf("the dial connected after %v, before a round trip of %v", took, 2*delay)
		}
		in := <-acceptor.StreamCh()
		defer in.Close()
		for _, side := range []struct {
			what     string
			from, to net.Conn
		}{{"the dialer's", c, in}, {"the answer on the accepted stream", in, c}} {
			start := time.Now()
			go func() { _, _ = side.from.Write([]byte("hello")) }()
			buf := make([]byte, 5)
			if _, err := io.ReadFull(side.to, buf); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < delay {
				t.Fatalf("%s write arrived after %v, before the delay %v", side.what, took, delay)
			}
		}
	})

	t.Run("a packet lost is never sent, and the sender cannot tell", func(t *testing.T) {
		lossy := LinkFaults{Loss: 0.999999}
		from, to := lossy.wrap(netTransport(t)), netTransport(t)
		defer from.Shutdown()
		defer to.Shutdown()
		if _, err := from.WriteTo([]byte("lost"), addrOf(to)); err != nil {
			t.Fatalf("a lost packet reported %v", err)
		}
		plain := netTransport(t)
		defer plain.Shutdown()
		// A packet sent after the lost one, on a link without loss: the
		// first to arrive must be it.
		if _, err := plain.WriteTo([]byte("kept"), addrOf(to)); err != nil {
			t.Fatal(err)
		}
		if p := <-to.PacketCh(); string(p.Buf) != "kept" {
			t.Fatalf("received %q first, want the packet sent after the lost one", p.Buf)
		}
	})
}

// handingListener stands for memberlist's network transport where its
// shutdown matters: its listener hands each stream it accepts over on a
// channel without a buffer, whoever reads it, and Shutdown waits for the
// listener to end.
type handingListener struct {
	memberlist.NodeAwareTransport // nothing else is called
	streams                       chan net.Conn
	stopped                       atomic.Bool
	handed                        atomic.Int64
	listener                      sync.WaitGroup
}

func newHandingListener() *handingListener {
	l := &handingListener{streams: make(chan net.Conn)}
	l.listener.Add(1)
	go func() {
		defer l.listener.Done()
		for !l.stopped.Load() {
			c, _ := net.Pipe()
			l.streams <- c
			l.handed.Add(1)
		}
	}()
	return l
}

func (l *handingListener) StreamCh() <-chan net.Conn { return l.streams }

func (l *handingListener) Shutdown() error {
	l.stopped.Store(true)
	l.listener.Wait()
	return nil
}

func TestLinkFaultsShutDownWhileStreamsArrive(t *testing.T) {
	t.Run("a stream the wrapped transport accepts while shutting down is taken and closed, so the shutdown ends", func(t *testing.T) {
		inner := newHandingListener()
		ft := LinkFaults{Delay: time.Millisecond}.wrap(inner)
		// Nobody reads the pool's streams: the first stream waits to be
		// handed over, and the listener waits with the next.
		testkit.Eventually(t, testkit.Wait{What: "a stream taken from the listener", Timeout: 10 * time.Second}, func() bool { return inner.handed.Load() >= 1 })
		done := make(chan error, 1)
		go func() { done <- ft.Shutdown() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Shutdown did not return within 10 s: the listener still waits to hand over a stream")
		}
	})
}
