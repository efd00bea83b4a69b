package datadir

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Saver keeps one file of the directory up to date with what snapshot
// returns: once every interval (or, when taking the snapshot takes long,
// for at most a tenth of the time) it takes the snapshot and writes it when it differs
// from what it last wrote, and once more when it stops, so that a graceful
// stop leaves the latest state, a crash loses at most the last interval,
// and a node at rest writes nothing.
type Saver struct {
	dir      *Dir
	name     string
	snapshot func() ([]byte, error)
	interval time.Duration
	// report is told of every write: its size and how long it took, or its
	// error (a full disk, a directory made read-only): the node counts and
	// logs them and goes on serving.
	report func(size int, took time.Duration, err error)
	// guard runs every write, so that a panic while taking the snapshot is
	// the node's to recover (it logs and counts it) and the saver goes on.
	guard func(func())

	mu sync.Mutex // one save at a time; guards last, wrote and encoding
	// last is the digest of what was last written, wrote whether anything
	// was.
	last  [sha256.Size]byte
	wrote bool
	// encoding is how long the last snapshot took: the CPU a save costs,
	// which maxDuty bounds (the write's wait for the disk costs none).
	encoding time.Duration

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// SaverOptions are a Saver's settings.
type SaverOptions struct {
	Interval time.Duration // at most one write per interval; 1 s when 0
	Report   func(size int, took time.Duration, err error)
	// Guard, when set, runs each save (the node's panic recovery).
	Guard func(func())
}

// NewSaver starts a saver of the file named name; Close stops it, writing
// once more if anything changed since the last write.
func NewSaver(d *Dir, name string, snapshot func() ([]byte, error), o SaverOptions) *Saver {
	s := &Saver{
		dir: d, name: name, snapshot: snapshot, interval: o.Interval, report: o.Report, guard: o.Guard,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if s.interval <= 0 {
		s.interval = time.Second
	}
	if s.report == nil {
		s.report = func(int, time.Duration, error) {}
	}
	if s.guard == nil {
		s.guard = func(f func()) { f() }
	}
	go s.loop()
	return s
}

// maxDuty bounds the share of one core the saver takes: a snapshot that
// took d waits at least maxDuty times d before the next, so a state large
// enough to take long to encode (thousands of busy rooms on a loaded
// machine) is saved less often rather than starving the node.
const maxDuty = 10

// loop saves once an interval, or less often when snapshots take long.
func (s *Saver) loop() {
	defer close(s.done)
	wait := s.interval
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		s.guard(func() { _ = s.Save() })
		s.mu.Lock()
		wait = max(s.interval, maxDuty*s.encoding)
		s.mu.Unlock()
	}
}

// Save takes the snapshot and writes it if it differs from what was last
// written; a failed write is reported, and tried again at the next save.
func (s *Saver) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	data, err := s.snapshot()
	s.encoding = time.Since(start)
	if err != nil {
		s.report(0, time.Since(start), err)
		return err
	}
	sum := sha256.Sum256(data)
	if s.wrote && sum == s.last {
		return nil
	}
	err = s.dir.Write(s.name, data)
	s.report(len(data), time.Since(start), err)
	if err == nil {
		s.last, s.wrote = sum, true
	}
	return err
}

// Close stops the saver and saves once more (a graceful stop); it returns
// that save's error.
func (s *Saver) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.guard(func() { err = s.Save() })
	})
	return err
}
