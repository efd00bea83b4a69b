package accesslog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Stdout is the destination that writes the log to the process's standard
// output, as a container's log collector expects.
const Stdout = "stdout"

// Format is how a line is written.
type Format uint8

// The formats.
const (
	// JSON is one JSON object per line (the default).
	JSON Format = iota
	// Common is the common log format, with waitroom's fields after it.
	Common
)

// ParseFormat reads a format's name: "json" (or "") or "common".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "json":
		return JSON, nil
	case "common":
		return Common, nil
	}
	return JSON, fmt.Errorf("%q is not an access log format: json (the default) or common", s)
}

// DefaultBuffer is how many lines wait for the writer before further ones
// are dropped: a few seconds of a busy node's requests, for a disk that
// stalls.
const DefaultBuffer = 8192

// FlushEvery is how long a line may wait in the writer before it is
// written: lines are written together, a write for many, and never more
// than this late (tail -f still follows a visitor as it goes).
const FlushEvery = 200 * time.Millisecond

// flushSize is how much the writer gathers before it writes at once.
const flushSize = 32 << 10

// Options are a log's settings besides its destination.
type Options struct {
	Format Format
	// VisitorKey keys the hash that turns a token's id into the visitor id
	// a line shows. Nodes with the same key write the same id for the same
	// visitor, so that its path can be followed from node to node.
	VisitorKey []byte
	// Buffer is how many lines may wait for the writer (DefaultBuffer when
	// 0).
	Buffer int
	// OnPanic is told of a panic the writer recovered from; the writer
	// goes on with the next line.
	OnPanic func(p any, stack []byte)
}

// Log is an open access log. Its methods are safe for concurrent use.
type Log struct {
	dest   string
	format Format
	ids    *visitorIDs

	lines   chan Entry
	reopen  chan chan error
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
	onPanic func(any, []byte)

	dropped, failed atomic.Uint64

	// Only the writer goroutine touches these.
	out io.Writer
	f   *os.File
	buf []byte
	// pending is the answer a Reopen waits for while the writer works on
	// it, so that a panic meanwhile answers it too.
	pending chan error
}

// Open opens the access log at dest (a file, created or appended to, or
// Stdout) and starts its writer. Close it when done.
func Open(dest string, o Options) (*Log, error) {
	if dest == "" {
		return nil, errors.New("no destination: a file's path or stdout")
	}
	l := newLog(dest, o)
	if err := l.open(); err != nil {
		return nil, err
	}
	go l.run()
	return l, nil
}

func newLog(dest string, o Options) *Log {
	n := o.Buffer
	if n <= 0 {
		n = DefaultBuffer
	}
	return &Log{
		dest: dest, format: o.Format, ids: newVisitorIDs(o.VisitorKey),
		lines: make(chan Entry, n), reopen: make(chan chan error),
		stop: make(chan struct{}), done: make(chan struct{}),
		onPanic: o.OnPanic, buf: make([]byte, 0, 64<<10),
	}
}

// Write hands a line to the writer without waiting: when the buffer is
// full, the line is dropped and counted (Dropped).
func (l *Log) Write(e *Entry) {
	select {
	case l.lines <- *e:
	default:
		l.dropped.Add(1)
	}
}

// Dropped is how many lines were dropped because the buffer was full.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// Failed is how many lines were lost because writing them failed (a full
// disk, a file that cannot be opened again).
func (l *Log) Failed() uint64 { return l.failed.Load() }

// Reopen writes what is buffered and opens the destination again: after
// logrotate has moved the file away, the log goes on in a new file at the
// same path. Lines handed over meanwhile wait in the buffer. Reopening
// stdout does nothing.
func (l *Log) Reopen() error {
	ack := make(chan error, 1)
	select {
	case l.reopen <- ack:
		return <-ack
	case <-l.done:
		return errors.New("the access log is closed")
	}
}

// Close writes every line handed over before it and closes the file.
func (l *Log) Close() error {
	l.stopped.Do(func() { close(l.stop) })
	<-l.done
	return nil
}

// open opens the destination; the writer goroutine owns the result.
func (l *Log) open() error {
	if l.dest == Stdout {
		l.out = os.Stdout
		return nil
	}
	f, err := os.OpenFile(l.dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open the access log: %w", err)
	}
	l.f, l.out = f, f
	return nil
}

// run is the writer goroutine: it recovers from a panic and goes on, so
// that a line that cannot be written costs that line, never the log.
func (l *Log) run() {
	defer close(l.done)
	for !l.serve() {
	}
}

// serve writes lines until the log is closed (true), or until a panic
// (false, after reporting it).
func (l *Log) serve() (closed bool) {
	defer func() {
		if p := recover(); p != nil {
			l.buf = l.buf[:0]
			if l.pending != nil {
				l.pending <- fmt.Errorf("the access log's writer panicked: %v", p)
				l.pending = nil
			}
			if l.onPanic != nil {
				l.onPanic(p, debug.Stack())
			}
		}
	}()
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	for {
		select {
		case e := <-l.lines:
			l.add(&e)
			if len(l.buf) >= flushSize {
				l.flush()
			}
		case <-tick.C:
			l.flush()
		case ack := <-l.reopen:
			// The lines handed over before the reopen go to the file
			// they were written for, the one logrotate has just moved.
			l.pending = ack
			l.drain()
			ack <- l.reopenFile()
			l.pending = nil
		case <-l.stop:
			l.drain()
			if l.f != nil {
				_ = l.f.Close()
			}
			return true
		}
	}
}

// drain writes every line waiting in the buffer.
func (l *Log) drain() {
	for more := len(l.lines); more > 0; more-- {
		e := <-l.lines
		l.add(&e)
		if len(l.buf) >= flushSize {
			l.flush()
		}
	}
	l.flush()
}

func (l *Log) add(e *Entry) {
	if l.format == Common {
		l.buf = appendCommon(l.buf, e, l.ids)
	} else {
		l.buf = appendJSON(l.buf, e, l.ids)
	}
}

// flush writes the buffered lines; lines that cannot be written are
// counted as failed and dropped, so that one bad write does not hold the
// rest back.
func (l *Log) flush() {
	if len(l.buf) == 0 {
		return
	}
	if l.out == nil {
		l.failed.Add(uint64(countLines(l.buf)))
	} else if _, err := l.out.Write(l.buf); err != nil {
		l.failed.Add(uint64(countLines(l.buf)))
	}
	l.buf = l.buf[:0]
}

// reopenFile closes the file and opens its path again. When that fails
// the lines that follow are counted as failed until a reopen succeeds.
func (l *Log) reopenFile() error {
	if l.f == nil && l.out != nil {
		return nil // stdout, or a test's writer
	}
	if l.f != nil {
		_ = l.f.Close()
		l.f, l.out = nil, nil
	}
	return l.open()
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
