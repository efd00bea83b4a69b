package policy

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// The allocation chain. A node allocates each room again and again: on
// every merge that changes its state, at least every few hundred
// milliseconds, and before the first request of a new minute. Each
// allocation follows the one before (Allocation.Next), which hands on the
// node's admission ledger, so that the continuous split knows what this
// node admitted since the minute began. The steps around that, which part
// of the merged state to read and when to start the chain afresh, are
// written here once, for the node, the simulator and the tests' ring model.

// AllocationEvery is the longest a node goes without allocating again: its
// allocation loop runs at least this often, and on a merge that changes its
// state at most every AllocationFollow.
const AllocationEvery = 250 * time.Millisecond

// Chain is a node's allocation chain for one room: its latest allocation,
// and the ring's time that allocation was made at. Its methods return the
// chain that continues from the new allocation and leave the value they
// are called on ending where it did, so a node that falls back on an older
// allocation steps on from that one's chain (the admission ledger is the
// same all along the chain).
type Chain struct {
	self     crdt.ReplicaID
	strategy Strategy
	last     *Allocation
	at       time.Time
	// resume is what an earlier chain knew of the order inside the
	// arrival slots, for the first allocation (ResumeChain).
	resume *arrivalCurves
}

// NewChain starts the chain of node self, dividing the slots by strategy s.
// Its first allocation is a fresh Allocate.
func NewChain(self crdt.ReplicaID, s Strategy) Chain {
	return Chain{self: self, strategy: s}
}

// Last is the chain's latest allocation; nil before the first.
func (c Chain) Last() *Allocation { return c.last }

// Allocate computes the allocation that follows the chain at now, from
// room (with its cluster facts: Nodes, Lag, Side) and snapshot snap, and
// returns it with the chain that continues from it.
//
// When the ring's time stepped back since the last allocation (by the
// node's first clock correction after it joined, or as the peer that made
// the median left), the ledger is dated in a time that has not come yet,
// so the chain starts afresh, keeping only the order inside the arrival
// slots.
func (c Chain) Allocate(room Room, snap *crdt.RoomSnapshot, now time.Time) (*Allocation, Chain) {
	var a *Allocation
	switch {
	case c.last == nil:
		a = build(nil, room, snap, now, maker{c.self, c.strategy, c.resume.resumed(now)})
		c.resume = nil
	case c.at.After(now):
		// The order inside the arrival slots is dated by the slots, not
		// by the ledger: it carries on. Started afresh, a ring restarted
		// whole placed its visitors by their slots' shares after the
		// first clock correction stepped its time back.
		a = build(nil, room, snap, now, maker{c.self, c.strategy, c.last.arr.resumed(now)})
	default:
		a = c.last.Next(room, snap, now)
	}
	c.last, c.at = a, now
	return a, c
}

// Step is Sight.Take then Allocate: the allocation that follows the chain
// at now, from what the node sees of the ring.
func (c Chain) Step(room Room, s Sight, now time.Time) (*Allocation, Chain) {
	room, snap := s.Take(room)
	return c.Allocate(room, &snap, now)
}

// Sight is what a node sees of the ring when it allocates: how many nodes
// it counts live, which replicas are theirs, and its merged state.
type Sight struct {
	// Live is how many nodes the node counts live, itself included. Fewer
	// than the room's Nodes (the nodes it expects) means that part of the
	// ring is cut off (see Side).
	Live int
	// Reachable returns whether a replica belongs to a node the node
	// counts live. It is called only while part of the ring is cut off,
	// once, before any snapshot is taken, so that it may read the node's
	// state (the snapshot's keep runs while the state is locked).
	Reachable func() func(crdt.ReplicaID) bool
	// Snapshot is the merged state's snapshot of the room at the second of
	// the allocation, summed over the replicas keep accepts (nil: every
	// replica).
	Snapshot func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot
	// Whole reads every replica's entries even while part of the ring is
	// cut off, stale columns and all, as nodes did before Side: a baseline
	// for the simulator and the tests to compare with, never a node's way.
	Whole bool
}

// Take returns the room and the snapshot to allocate from. While part of
// the ring is cut off, the snapshot holds only the reachable replicas'
// entries and the room runs on its part of the limits (CutOff), with what
// the node last heard of the others; otherwise it is the whole snapshot and
// room as it was.
func (s Sight) Take(room Room) (Room, crdt.RoomSnapshot) {
	if s.Whole || s.Live >= room.Nodes {
		return room, s.Snapshot(nil)
	}
	reach := s.Reachable()
	snap := s.Snapshot(reach)
	rest := s.Snapshot(func(r crdt.ReplicaID) bool { return !reach(r) })
	return room.CutOff(s.Live, &rest), snap
}
