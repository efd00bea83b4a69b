package edge

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// revokedSet remembers the sessions this node has revoked until their tokens
// expire, so that a client which keeps its old cookie (ignoring the cleared
// one) can neither go on as an admitted visitor nor, by asking again for a
// page the origin answers with revoke, take its slot off the active count a
// second time, and a third, until the room looks empty.
//
// Revocations are also replicated (crdt.Revocations cells), and every node
// adds the ones it learns to its set (Server.syncRevocations), so a replay
// at another node is refused there within a gossip round and an allocation
// tick. The zero value is ready to use.
type revokedSet struct {
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

// add records the revocation of session id in room, whose token expires at
// expires, and reports whether it is new. Sessions without an id (tokens
// sealed before ids existed) cannot be told apart and are always new.
func (rs *revokedSet) add(room string, id uint64, expires, now int64) bool {
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

// has reports whether session id of room was revoked here.
func (rs *revokedSet) has(room string, id uint64) bool {
	if id == 0 || rs.n.Load() == 0 {
		return false
	}
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	_, ok := rs.m[revokedKey{room, id}]
	return ok
}

// syncRevocations adds the revocations learned from the cluster to the
// node's set. A revoked token can live at most session_duration (30
// minutes at most) past its revocation, since it cannot be renewed once
// refused; the entry is kept that long.
func (s *Server) syncRevocations(now time.Time) {
	for _, rm := range s.rooms() {
		var keys []crdt.Key
		s.node.Read(func(st *crdt.State) { keys = st.Keys(rm.name, crdt.Revocations) })
		for _, k := range keys {
			expires := (k.Minute+1)*60 + maxSessionMinutes*60
			s.revoked.add(rm.name, uint64(k.Bucket), expires, now.Unix())
		}
	}
}

// maxSessionMinutes is the longest session_duration a room may have.
const maxSessionMinutes = 30
