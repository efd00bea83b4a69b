package crdt

import (
	"cmp"
	"slices"
)

// Mark is one member of a Marks set: an id and the unix second after which
// it no longer matters.
type Mark struct {
	ID      string
	Expires int64
}

// Marks is a replicated set of ids that each expire: the record of things
// that happen once across the ring (a single-use code spent, a code revoked,
// a notice delivered). Merging is union, an id present on both sides keeping
// the later expiry, so replicas that have heard of the same marks hold the
// same set whatever the order.
//
// A mark is dropped once its expiry has passed (Prune), and the set keeps the
// horizon it was pruned at: a late copy of a mark that expires at or before
// the horizon is ignored, so a pruned mark never comes back. Callers choose
// an expiry no earlier than the last moment the mark can matter (a code's
// own expiry), so that dropping it loses nothing.
//
// The zero value is an empty set. A Marks is not safe for concurrent use.
type Marks struct {
	m       map[string]int64
	horizon int64
}

// Has reports whether id is marked and its mark has not expired at now.
func (s *Marks) Has(id string, now int64) bool {
	e, ok := s.m[id]
	return ok && e > now
}

// Expiry returns id's expiry and whether it is marked.
func (s *Marks) Expiry(id string) (int64, bool) {
	e, ok := s.m[id]
	return e, ok
}

// Add marks id until expires, as a local write, and returns the mark to send
// to peers. It reports false, and stores nothing, when the mark would already
// be pruned (expires at or before the horizon); a mark already held with a
// later expiry is returned as held.
func (s *Marks) Add(id string, expires int64) (Mark, bool) {
	if expires <= s.horizon {
		return Mark{}, false
	}
	s.Observe(Mark{ID: id, Expires: expires})
	return Mark{ID: id, Expires: s.m[id]}, true
}

// Observe merges one mark and reports whether the set changed.
func (s *Marks) Observe(m Mark) bool {
	if m.Expires <= s.horizon {
		return false
	}
	if e, ok := s.m[m.ID]; ok && e >= m.Expires {
		return false
	}
	if s.m == nil {
		s.m = map[string]int64{}
	}
	s.m[m.ID] = m.Expires
	return true
}

// Merge folds the given marks into s and returns those that changed it, in
// the order given: what a node relays to its peers.
func (s *Marks) Merge(ms []Mark) []Mark {
	var out []Mark
	for _, m := range ms {
		if s.Observe(m) {
			out = append(out, m)
		}
	}
	return out
}

// MergeSet folds o into s, horizon included, and reports whether s changed.
func (s *Marks) MergeSet(o *Marks) bool {
	changed := false
	if o.horizon > s.horizon {
		s.Prune(o.horizon)
		changed = true
	}
	for id, e := range o.m {
		if s.Observe(Mark{ID: id, Expires: e}) {
			changed = true
		}
	}
	return changed
}

// Prune drops every mark that expires at or before now and raises the
// horizon to now (it never lowers it). It reports whether a mark was dropped.
func (s *Marks) Prune(now int64) bool {
	if now > s.horizon {
		s.horizon = now
	}
	dropped := false
	for id, e := range s.m {
		if e <= s.horizon {
			delete(s.m, id)
			dropped = true
		}
	}
	return dropped
}

// Horizon is the latest time the set was pruned at.
func (s *Marks) Horizon() int64 { return s.horizon }

// Len is the number of marks held.
func (s *Marks) Len() int { return len(s.m) }

// Entries returns the marks sorted by id: the whole set as a delta.
func (s *Marks) Entries() []Mark {
	out := make([]Mark, 0, len(s.m))
	for id, e := range s.m {
		out = append(out, Mark{ID: id, Expires: e})
	}
	slices.SortFunc(out, func(a, b Mark) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Clone returns an independent copy.
func (s *Marks) Clone() *Marks {
	c := &Marks{horizon: s.horizon}
	if len(s.m) > 0 {
		c.m = make(map[string]int64, len(s.m))
		for id, e := range s.m {
			c.m[id] = e
		}
	}
	return c
}

// Equal reports whether both sets hold the same marks and horizon.
func (s *Marks) Equal(o *Marks) bool {
	if s.horizon != o.horizon || len(s.m) != len(o.m) {
		return false
	}
	for id, e := range s.m {
		if oe, ok := o.m[id]; !ok || oe != e {
			return false
		}
	}
	return true
}
