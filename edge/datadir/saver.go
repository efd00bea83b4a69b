package datadir

import (
	"sync"
	"time"
)

// Saver keeps one file of the directory up to date with what snapshot
// returns: at most once every interval while something changed (Changed),
// and once more when it stops, so that a graceful stop leaves the latest
// state and a crash loses at most the last interval.
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

	mu      sync.Mutex
	changed bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// SaverOptions are a Saver's settings.
type SaverOptions struct {
	Interval time.Duration // at most one write per interval; 1 s when 0
	Report   func(size int, took time.Duration, err error)
	// Guard, when set, runs each write (the node's panic recovery).
	Guard func(func())
}

// NewSaver starts a saver of the file named name; Close stops it, writing
// once more if anything changed since the last write.
func NewSaver(d *Dir, name string, snapshot func() ([]byte, error), o SaverOptions) *Saver {
	s := &Saver{
		dir: d, name: name, snapshot: snapshot, interval: o.Interval, report: o.Report, guard: o.Guard,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
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

// Changed says that what the file holds has changed; the saver writes it
// within an interval. It never blocks.
func (s *Saver) Changed() {
	s.mu.Lock()
	s.changed = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop writes when kicked, at most once an interval.
func (s *Saver) loop() {
	defer close(s.done)
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		if wait := s.interval - time.Since(last); wait > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		s.guard(func() { s.writeIfChanged() })
	}
}

// writeIfChanged writes the file when something changed since the last
// write; a failed write leaves it marked changed, to be tried again.
func (s *Saver) writeIfChanged() {
	s.mu.Lock()
	changed := s.changed
	s.changed = false
	s.mu.Unlock()
	if !changed {
		return
	}
	if err := s.Flush(); err != nil {
		s.mu.Lock()
		s.changed = true
		s.mu.Unlock()
	}
}

// Flush writes the file now, whatever changed, and reports it.
func (s *Saver) Flush() error {
	start := time.Now()
	data, err := s.snapshot()
	if err == nil {
		err = s.dir.Write(s.name, data)
	}
	s.report(len(data), time.Since(start), err)
	return err
}

// Close stops the saver and writes the file once more if anything changed
// since the last write (a graceful stop); it returns that write's error.
func (s *Saver) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if changed {
			s.guard(func() { err = s.Flush() })
		}
	})
	return err
}
