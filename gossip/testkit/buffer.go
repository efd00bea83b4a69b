package testkit

import (
	"bytes"
	"sync"
)

// Buffer collects what goroutines the test does not control write (a node's
// log, a browser's output) and lets the test read it while they still
// write. It is safe for concurrent use; the zero value is empty and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail is the last n bytes written (all of them when fewer): what a failing
// test logs of a long output.
func (b *Buffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.buf.Bytes()
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return string(out)
}
