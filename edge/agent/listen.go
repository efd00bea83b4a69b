package agent

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The public listener's limits. The figures are the config's
// (max_connections, read_header_timeout, client_timeout, idle_timeout); the
// README explains them.
//
// net/http's ReadTimeout and WriteTimeout are not used on the public
// listener: both run from the moment a request's headers are read, so a
// download or a slow origin that takes longer than them is cut mid-answer,
// and once a request body has been read, ReadTimeout expiring cancels the
// request's context, aborting the origin request with it. Instead the
// deadlines are per stage, as nginx's client_body_timeout and send_timeout:
// each read of a request body and each write of the answer must finish
// within client_timeout of its start, so a client that stalls is cut while
// one that keeps receiving a long answer, or waits on a slow origin, is not.
//
// Setting a deadline costs a few hundred nanoseconds (a timer in the
// runtime's poller), so a deadline is only moved once less than 7/8 of
// client_timeout is left of it: a small answer costs one, and a stalled
// client is cut after between 7/8 of client_timeout and all of it.

// clientDeadlines gives a request's reads and writes on the connection
// deadlines of d each, through the http.ResponseController.
func clientDeadlines(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The previous request on a kept-alive connection left its
		// deadlines behind; each is renewed before it can matter.
		dl := &connDeadlines{rc: http.NewResponseController(w), d: d}
		var body *deadlineBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &deadlineBody{ReadCloser: r.Body, dl: dl}
			r.Body = body
		}
		dw := &deadlineWriter{ResponseWriter: w, dl: dl}
		next.ServeHTTP(dw, r)
		unread := body != nil && body.finish()
		if dw.hijacked.Load() {
			return
		}
		// What the server does after the handler, flushing the answer
		// and reading what is left of an unread body, is bounded too.
		now := time.Now()
		dl.renewWrite(now)
		if unread {
			_ = dl.rc.SetReadDeadline(now.Add(d))
		}
	})
}

// connDeadlines are one request's deadlines on its connection. A body can
// be read on another goroutine (the proxy's transport) than the one that
// writes the answer, hence the atomics.
type connDeadlines struct {
	rc      *http.ResponseController
	d       time.Duration
	writeBy atomic.Int64 // the write deadline set, unix nanoseconds; 0: none yet
	readBy  atomic.Int64 // the read deadline set; 0: none or cleared
}

// renewWrite moves the write deadline to now+d unless 7/8 of d are left.
func (c *connDeadlines) renewWrite(now time.Time) {
	if time.Duration(c.writeBy.Load()-now.UnixNano()) >= c.d*7/8 {
		return
	}
	c.writeBy.Store(now.Add(c.d).UnixNano())
	_ = c.rc.SetWriteDeadline(now.Add(c.d))
}

// renewRead is renewWrite for reads.
func (c *connDeadlines) renewRead(now time.Time) {
	if time.Duration(c.readBy.Load()-now.UnixNano()) >= c.d*7/8 {
		return
	}
	c.readBy.Store(now.Add(c.d).UnixNano())
	_ = c.rc.SetReadDeadline(now.Add(c.d))
}

// deadlineBody gives each read of a request body a deadline and clears it
// at the body's end: from then on the server reads ahead on the connection
// to notice a client that hangs up, and a deadline there would cancel the
// request. After any other error the deadline stays, so that the server
// does not wait for the rest of a body that stalled.
type deadlineBody struct {
	io.ReadCloser
	dl    *connDeadlines
	mu    sync.Mutex
	ended bool // the body was read to its end
	done  bool // the handler returned: the connection may serve another request
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if !b.done {
		now := time.Now()
		b.dl.renewRead(now)
		// A read may make the server answer "100 Continue".
		b.dl.renewWrite(now)
	}
	b.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		if !b.ended && !b.done {
			b.dl.readBy.Store(0)
			_ = b.dl.rc.SetReadDeadline(time.Time{})
		}
		b.ended = true
		b.mu.Unlock()
	}
	return n, err
}

// finish stops the body from touching the connection's deadlines (a
// proxied body can still be read by the transport after the handler
// returned) and reports whether the body was left unread.
func (b *deadlineBody) finish() (unread bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	return !b.ended
}

// deadlineWriter gives each write and flush of the answer a deadline. Time
// spent waiting for the origin between writes is not counted.
type deadlineWriter struct {
	http.ResponseWriter
	dl       *connDeadlines
	hijacked atomic.Bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.dl.renewWrite(time.Now())
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController and httputil.ReverseProxy
// call to flush.
func (w *deadlineWriter) FlushError() error {
	w.dl.renewWrite(time.Now())
	return w.dl.rc.Flush()
}

// Flush is http.Flusher's.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Hijack hands the connection over (a proxied WebSocket upgrade) without
// the deadlines this wrapper set: from then on the connection is the
// handler's.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := w.dl.rc.Hijack()
	if err == nil {
		w.hijacked.Store(true)
		_ = c.SetDeadline(time.Time{})
	}
	return c, brw, err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// connLimiter caps a listener's open connections. Accept waits while max
// are open, so that further clients wait in the kernel's accept queue
// (their TCP stack retries once that is full too) instead of costing the
// node memory and file descriptors; they are served as connections close.
type connLimiter struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
	waits prometheus.Counter
	log   zerolog.Logger
	// lastWarn is when waiting was last logged (unix seconds): at most
	// once a minute.
	lastWarn atomic.Int64
}

func newConnLimiter(ln net.Listener, max int, log zerolog.Logger, reg *prometheus.Registry) *connLimiter {
	l := &connLimiter{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), log: log}
	l.waits = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "waitroom", Name: "public_connection_waits_total",
		Help: "Connections to the public listener that had to wait because max_connections were open.",
	})
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "waitroom", Name: "public_connections",
		Help: "Open connections of the public listener (capped by max_connections).",
	}, func() float64 { return float64(len(l.slots)) })
	for _, c := range []prometheus.Collector{l.waits, open} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				// Served again: replace the collectors of the closed
				// listener.
				reg.Unregister(are.ExistingCollector)
				_ = reg.Register(c)
			}
		}
	}
	return l
}

func (l *connLimiter) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.waits.Inc()
		if now := time.Now().Unix(); now-l.lastWarn.Load() >= 60 {
			l.lastWarn.Store(now)
			l.log.Warn().Int("max_connections", cap(l.slots)).Msg("public listener is at max_connections; new connections wait until others close")
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
