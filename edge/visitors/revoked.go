package visitors

import (
	"sync"
	"sync/atomic"
)

// Revoked remembers the sessions this node has revoked until their tokens
// expire, so that a client which keeps its old cookie (ignoring the cleared
// one) can neither go on as an admitted visitor nor, by asking again for a
// page the origin answers with revoke, take its slot off the active count a
// second time, and a third, until the room looks empty.
//
// Revocations are also replicated (crdt.Revocations cells), and the node
// adds the ones it learns to its set, so a replay at another node is
// refused there within a gossip round and an allocation tick. The zero
// value is ready to use.
type Revoked struct {
	mu sync.RWMutex
	m  map[revokedKey]int64 // → unix seconds after which no copy of the token opens
	n  atomic.Int64         // len(m), so the request path skips the lock while none is held
	// sweepAt is the size at which expired entries are next swept out.
	sweepAt int
}

type revokedKey struct {
	room string
	id   uint64
}

const minRevokedSweep = 1024

// Add records the revocation of session id in room, whose token expires at
// unix second expires, and reports whether it is new at unix second now.
// Sessions without an id (tokens sealed before ids existed) cannot be told
// apart and are always new.
func (rs *Revoked) Add(room string, id uint64, expires, now int64) bool {
	if id == 0 {
		return true
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k := revokedKey{room, id}
	if until, ok := rs.m[k]; ok && until >= now {
		return false
	}
	if rs.m == nil {
		rs.m = map[revokedKey]int64{}
		rs.sweepAt = minRevokedSweep
	}
	rs.m[k] = expires
	if len(rs.m) >= rs.sweepAt {
		for k, until := range rs.m {
			if until < now {
				delete(rs.m, k)
			}
		}
		rs.sweepAt = max(minRevokedSweep, 2*len(rs.m))
	}
	rs.n.Store(int64(len(rs.m)))
	return true
}

// Has reports whether session id of room was revoked here.
func (rs *Revoked) Has(room string, id uint64) bool {
	if id == 0 || rs.n.Load() == 0 {
		return false
	}
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	_, ok := rs.m[revokedKey{room, id}]
	return ok
}

// Len is the number of revocations held.
func (rs *Revoked) Len() int { return int(rs.n.Load()) }
