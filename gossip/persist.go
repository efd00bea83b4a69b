package gossip

import (
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
)

// A node's replica of the ring's state can be saved (Save) and taken back
// when the node starts again (Config.Restore), so that a node, or a whole
// ring, that stops at once comes back with what the ring was told: rooms
// and every register with its stamp, the counter cells still inside their
// windows (its own under its earlier incarnation, which it never writes
// again), the marks, and the members it knew. What is restored merges as a
// peer's whole state would, before the node joins: whatever the ring holds
// that is newer still wins through the ordinary merge, and the members it
// knew are looked for beside the seeds, as serf's snapshot does.
//
// The saved form is [full state, marks, members]: the full state and the
// marks in the wire's own encoding (a push-pull state and a marks message,
// read by the one decoder, Decode), and the members as [[name, addr]...].

// MaxSaved bounds a saved state: a push-pull state and every mark, with
// room to spare.
const MaxSaved = 4 * MaxFullState

// maxSavedMembers bounds the members a saved state lists.
const maxSavedMembers = 4096

// Saved is a node's state as Save wrote it, decoded and validated by
// DecodeSaved.
type Saved struct {
	delta   crdt.Delta
	marks   []crdt.Mark
	members []savedMember
}

// savedMember is a member the node knew, other than itself.
type savedMember struct {
	Name, Addr string
}

// wireSaved is the saved form.
type wireSaved struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack struct{} `msgpack:",as_array"`
	Full     []byte
	Marks    []byte
	Members  [][2]string
}

// Rooms, Registers, Cells and Marks count what a saved state holds, for
// the log line of a restore.
func (s *Saved) Rooms() int {
	seen := map[string]bool{}
	for _, e := range s.delta.Entries {
		seen[e.Key.Room] = true
	}
	return len(seen)
}

// Registers is how many registers the saved state holds.
func (s *Saved) Registers() int { return len(s.delta.Registers) }

// Cells is how many counter entries the saved state holds.
func (s *Saved) Cells() int { return len(s.delta.Entries) }

// Marks is how many marks the saved state holds.
func (s *Saved) Marks() int { return len(s.marks) }

// Members is how many members, other than the node, the saved state lists.
func (s *Saved) Members() int { return len(s.members) }

// RegisterNames lists the names of the saved registers that start with
// prefix, sorted, with their stamps and replicas: what the caller took
// back, to tell later whether a register still holds what was restored.
func (s *Saved) RegisterNames(prefix string) map[string]crdt.LWW[[]byte] {
	out := map[string]crdt.LWW[[]byte]{}
	for _, r := range s.delta.Registers {
		if len(r.Name) >= len(prefix) && r.Name[:len(prefix)] == prefix {
			out[r.Name] = r.Reg
		}
	}
	return out
}

// Save encodes the node's whole replica: every counter cell it holds (its
// own and its peers'), every register as written (secrets included: the
// caller keeps the bytes sealed), the marks, and the live members other
// than itself.
func (n *Node) Save() ([]byte, error) {
	n.mu.Lock()
	full, horizon := n.state.Full(), n.state.Horizon()
	marks := n.marks.Entries()
	marksHorizon := n.marks.Horizon()
	n.mu.Unlock()
	fb, err := EncodeFull(full, horizon)
	if err != nil {
		return nil, fmt.Errorf("save state: %w", err)
	}
	mb, err := EncodeMarks(marks, marksHorizon)
	if err != nil {
		return nil, fmt.Errorf("save marks: %w", err)
	}
	w := wireSaved{Full: fb, Marks: mb}
	for _, m := range n.Members() {
		if m.Name != n.cfg.Name && m.Alive {
			w.Members = append(w.Members, [2]string{m.Name, m.Addr})
		}
	}
	b, err := msgpack.Marshal(&w)
	if err != nil {
		return nil, fmt.Errorf("save: %w", err)
	}
	if len(b) > MaxSaved {
		return nil, fmt.Errorf("save: %d bytes, more than the %d a node reads back", len(b), MaxSaved)
	}
	return b, nil
}

// DecodeSaved decodes and validates what Save wrote. Any error means none
// of it may be taken back.
func DecodeSaved(b []byte) (*Saved, error) {
	if len(b) > MaxSaved {
		return nil, fmt.Errorf("saved state: %w: %d bytes > %d", errOversize, len(b), MaxSaved)
	}
	w, err := decodeBody(b, (*reader).saved)
	if err != nil {
		return nil, fmt.Errorf("saved state: %w", err)
	}
	full, err := Decode(w.Full, MaxSaved)
	if err == nil && full.Type != msgFull {
		err = fmt.Errorf("%w: %d where a full state belongs", errType, full.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("saved state: %w", err)
	}
	marks, err := Decode(w.Marks, MaxSaved)
	if err == nil && marks.Type != msgMarks {
		err = fmt.Errorf("%w: %d where marks belong", errType, marks.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("saved marks: %w", err)
	}
	s := &Saved{delta: full.Delta, marks: marks.Marks}
	for i, m := range w.Members {
		if m[0] == "" || len(m[0]) > maxRegisterName {
			return nil, fmt.Errorf("saved member %d: %w: name of %d bytes", i, errValidation, len(m[0]))
		}
		if _, _, err := splitHostPort(m[1]); err != nil {
			return nil, fmt.Errorf("saved member %q: %w: %v", m[0], errValidation, err)
		}
		s.members = append(s.members, savedMember{Name: m[0], Addr: m[1]})
	}
	return s, nil
}

// saved reads [full, marks, [[name, addr]...]].
func (r *reader) saved() (w wireSaved, err error) {
	if err = r.array(3); err != nil {
		return w, err
	}
	if w.Full, err = r.bin(); err != nil {
		return w, fmt.Errorf("full state: %w", err)
	}
	if w.Marks, err = r.bin(); err != nil {
		return w, fmt.Errorf("marks: %w", err)
	}
	if w.Members, err = list(r, 3, r.member); err != nil {
		return w, fmt.Errorf("members: %w", err)
	}
	if len(w.Members) > maxSavedMembers {
		return w, fmt.Errorf("%d members, more than %d", len(w.Members), maxSavedMembers)
	}
	return w, nil
}

// member reads [name, addr].
func (r *reader) member() (m [2]string, err error) {
	if err = r.array(2); err != nil {
		return m, err
	}
	if m[0], err = r.str(); err != nil {
		return m, err
	}
	m[1], err = r.str()
	return m, err
}

// restore takes a saved state back before the node joins: the cells and
// registers are screened and merged as a peer's whole state would be, the
// marks merged, what has left the retention window pruned, and the members
// it knew remembered as lost, so the join loop looks for them beside the
// seeds; the ring it knew counts as its size for the ten minutes a ring's
// peak counts (ExpectedMembers), so that a node back before its peers does
// not take their part of the room.
func (n *Node) restore(s *Saved) {
	ring := n.RingNow()
	now := ring.UnixMilli()
	delta := n.screen(crdt.Delta{Entries: slices.Clone(s.delta.Entries), Registers: slices.Clone(s.delta.Registers)}, now)
	n.mu.Lock()
	n.state.MergeAt(delta, now)
	n.marks.Merge(s.marks)
	n.marks.Prune(ring.Unix())
	n.mu.Unlock()
	n.Prune()
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	for _, m := range s.members {
		if m.Name != n.cfg.Name {
			n.lost[m.Addr] = n.clock().UnixNano()
		}
	}
	if len(s.members) > 0 {
		n.peakMembers.Store(int64(len(s.members) + 1))
		n.peakAt.Store(n.clock().UnixNano())
	}
}
