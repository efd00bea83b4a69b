package visitors

import (
	"slices"
	"sync"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// Counted is one count per visitor at this node. The counter rule
// (policy.Count) moves a visitor's count from where its state says it is
// counted to where it is counted now; handed the same old state twice, it
// adds two counts. A cookie is such a state, and it can be sent many times:
// six asset requests of one browser in parallel at a slice boundary, or an
// admitted cookie replayed twenty times on purpose. So the node keeps, per
// token id, the state it last counted the token in, and the rule's "before"
// is that entry unless the cookie is newer (counted later, at another
// node: the visitor moved, and the cookie says where it is counted now).
// Reading the entry, deciding, adding the increments and writing the new
// entry happen under the token's lock (Lock), so two requests of one token
// at one node move its count once.
//
// The bound. At one node, any number of copies of one cookie, in parallel
// or replayed later, count once: the first moves the count, the others find
// the entry at least as new as their cookie and move nothing. Replayed at
// every one of N nodes, one cookie counts at most once per node (each node
// takes the cookie's cell out and puts its own in: at most N counts, for no
// longer than the cookie lets its bearer in). A visitor who moves between
// nodes the ordinary way, always sending its latest cookie, is counted
// once. What this does not stop: a client that keeps several of its own
// cookies and plays older ones at one node and the newer answers at another
// can leave a count behind per round, each in a cell that ends with the
// session (or the waiting window); doing better needs the nodes to share
// per-token state (a distinct-count sketch), not yet done.
//
// Memory is bounded. An entry is dropped once its cell has left every
// window and its cookie has expired (sweeps run as a shard grows), and a
// shard never holds more than CountedCap/countedShards entries: past that
// the entries nearest to their end (the oldest) are evicted first, an eighth
// of the shard at a time. An evicted token is counted from its cookie again,
// so past the cap the bound above loosens to one count per eviction.
//
// The zero value is ready to use.
type Counted struct {
	shards [countedShards]Shard
}

// CountedCap bounds a Counted table: about 1M tokens, some 100 MB at most.
// At 1,000 admissions a second over 10 nodes with 30-minute sessions a node
// holds about 180,000 live sessions.
const CountedCap = 1 << 20

const (
	countedShards = 64
	minCountSweep = 1024
)

// Shard is the part of a Counted table that one token id falls in, locked
// by Lock for one request's read, decision and write.
type Shard struct {
	mu      sync.Mutex
	m       map[uint64]countedEntry
	sweepAt int
}

type countedEntry struct {
	c     policy.Counting
	until int64 // unix second after which the entry protects nothing
}

// Lock returns token id's shard, locked; nil for tokens without an id
// (sealed before ids existed), which are counted from their cookie alone.
// Every method of a nil *Shard is valid.
func (t *Counted) Lock(id uint64) *Shard {
	if id == 0 {
		return nil
	}
	sh := &t.shards[id%countedShards]
	sh.mu.Lock()
	return sh
}

// Unlock releases a shard Lock returned; nil is a no-op.
func (sh *Shard) Unlock() {
	if sh != nil {
		sh.mu.Unlock()
	}
}

// Before is the state the counter rule starts from for token tok: the
// entry when there is one and the cookie is not newer (see Counted), else
// the cookie's. sh is tok's shard, locked, or nil.
func (sh *Shard) Before(tok cookie.Token) policy.Counting {
	c := CountingOf(tok)
	if sh == nil {
		return c
	}
	e, ok := sh.m[tok.ID]
	if !ok || c.LastCheckIn > e.c.LastCheckIn || (c.Admitted() && !e.c.Admitted()) {
		return c
	}
	return e.c
}

// Put records that token id is now counted as c, at unix second now.
func (sh *Shard) Put(id uint64, c policy.Counting, now int64) {
	if sh == nil {
		return
	}
	if sh.m == nil {
		sh.m = map[uint64]countedEntry{}
		sh.sweepAt = minCountSweep
	}
	sh.m[id] = countedEntry{c: c, until: countedUntil(c)}
	if len(sh.m) < sh.sweepAt {
		return
	}
	for k, e := range sh.m {
		if e.until < now {
			delete(sh.m, k)
		}
	}
	limit := CountedCap / countedShards
	if len(sh.m) > limit {
		// Oldest first: the entries nearest to their end.
		ends := make([]int64, 0, len(sh.m))
		for _, e := range sh.m {
			ends = append(ends, e.until)
		}
		slices.Sort(ends)
		cut := ends[len(ends)-limit+limit/8]
		for k, e := range sh.m {
			if e.until < cut {
				delete(sh.m, k)
			}
		}
	}
	// The next sweep comes as the shard doubles, but no later than one
	// entry past the cap, so that the cap holds.
	sh.sweepAt = min(max(minCountSweep, 2*len(sh.m)), limit+1)
}

// Len is the number of entries the shard holds.
func (sh *Shard) Len() int {
	if sh == nil {
		return 0
	}
	return len(sh.m)
}

// countedUntil is when an entry stops mattering: its cookie has expired and
// its cell has left every window.
func countedUntil(c policy.Counting) int64 {
	until := c.ExpiresAt
	switch {
	case c.Admitted():
		until = max(until, c.Counted)
	case c.Counted != 0:
		until = max(until, (c.Counted+crdt.DefaultWaitingWindow)*60)
	}
	return until
}

// CountingOf is the counter rule's view of a cookie's token.
func CountingOf(t cookie.Token) policy.Counting {
	return policy.Counting{
		Bucket:          t.Bucket,
		AcceptedAt:      t.AcceptedAt,
		LastCheckIn:     t.LastCheckIn,
		RefreshInterval: t.RefreshInterval,
		Counted:         t.CountedMinute,
		ExpiresAt:       t.ExpiresAt,
		Arrived:         t.Arrived,
	}
}

// SetCounting writes the counter rule's state back into a token.
func SetCounting(t *cookie.Token, c policy.Counting) {
	t.Bucket = c.Bucket
	t.AcceptedAt = c.AcceptedAt
	t.LastCheckIn = c.LastCheckIn
	t.RefreshInterval = c.RefreshInterval
	t.CountedMinute = c.Counted
	t.ExpiresAt = c.ExpiresAt
	t.Arrived = c.Arrived
}
