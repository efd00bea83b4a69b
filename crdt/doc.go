// Package crdt owns waitroom's replicated data: the conflict-free counters and
// registers that every node merges from gossip, and the room state built from
// them.
//
// # Building blocks
//
//   - GCounter: one monotone entry per replica, merged by max. Only the owning
//     replica ever raises its own entry, so max-merge never loses an increment.
//   - PNCounter: two GCounters, plus and minus; its value may dip below zero
//     while messages are reordered, so readers clamp totals at zero.
//   - LWW: a last-writer-wins register stamped with a hybrid logical clock;
//     equal stamps are broken by replica id, never by arrival order, so every
//     node settles on the same value.
//
// # Room state
//
// State holds, per room, one GCounter per Key (kind, bucket, minute; the
// bucket is the arrival bucket for the Waiting kinds, see Key for the
// others). PN counters are stored as two kinds (plus and minus) so that every
// cell of the state is a plain max-merged G-counter entry; that keeps merge,
// delta extraction and pruning one mechanism:
//
//   - Arrivals[minute]: distinct visitors first seen per node per minute; the
//     traffic share of each node.
//   - Admitted[minute]: new admissions per node per minute.
//   - Active[minute] (PN): a session is counted in the minute of its latest
//     request; moving it adds to the old minute's minus side and the new
//     minute's plus side. Revocation adds to the minus side only.
//   - Waiting[bucket][minute] (PN): the same, for queued visitors, per arrival
//     bucket.
//
// Deltas are state-based: an Entry carries the value of one replica's cell,
// not an increment, so a duplicate or a reordered delivery is harmless.
//
// Pruning drops every cell whose minute is older than a horizon and remembers
// the horizon, so a late message can never resurrect a pruned cell. Every node
// prunes on its own, from its own clock.
//
// Replica ids name a node and an incarnation chosen at start, so a restarted
// node writes in a fresh column instead of below its earlier, larger entries
// (which max-merge would hide).
//
// The package is pure data: no I/O, no clock, no randomness, no locking. Time
// is always an argument, in unix minutes.
package crdt
