package edge

import (
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// revokeSession ends an admitted visitor's session at once: its count is
// taken off the session cell it is counted in (the counter rule's
// StepRevoke), here at once and on every other node after one gossip round.
func (rm *room) revokeSession(tok cookie.Token) {
	now := rm.s.ringNow().Unix()
	if !rm.s.revoked.Add(rm.name, tok.ID, tok.ExpiresAt, now) {
		// Revoked before (two requests in flight, or a client replaying
		// its old cookie): the slot was freed once already.
		return
	}
	var buf [3]crdt.Inc
	sh := rm.counted.Lock(tok.ID)
	incs, after := policy.Count(buf[:0], rm.viewAt(time.Unix(now, 0)).pol, rm.name, sh.Before(tok), policy.Event{Step: policy.StepRevoke, ID: tok.ID, At: now})
	if len(incs) > 0 {
		rm.mu.RLock()
		rm.s.node.Add(incs...)
		rm.mu.RUnlock()
		rm.m.revoked.Inc()
	}
	sh.Put(tok.ID, after, now)
	sh.Unlock()
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
			s.revoked.Add(rm.name, uint64(k.Bucket), expires, now.Unix())
		}
	}
}

// maxSessionMinutes is the longest session_duration a room may have.
const maxSessionMinutes = 30
