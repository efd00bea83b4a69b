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
// # Data centers
//
// A node may belong to a data center (State.SetDatacenter): then it holds
// the replica entries of its own data center only, and every other data
// center as aggregate entries (Delta.Aggregates), each the sum of some of
// that data center's replicas' entries in one cell, written by the data
// center's carriers (State.Carry) under the id of the Group of replicas it
// sums. Entries of one group are max-merged like any entry; a reader takes,
// per data center and cell, the largest sum over groups that share no
// replica (datacenter.go), so the figure never exceeds the true sum, comes
// to it once a carrier has heard every replica, and adds up the two sides
// of a data center split in two, whose carriers each sum their own side
// under a group of its own. A snapshot then counts this data center's
// replicas one by one and every other data center as one replica
// (DatacenterReplica): the admission split between data centers follows
// their traffic as the split between the nodes of one does. Aggregates are
// pruned with the horizon and refused beyond the bounds as entries are,
// their value bound scaled by the replicas a group sums (CheckAggregate),
// and packed a few bytes each (aggcell.go), so a node of a ring of 300
// data centers holds a busy room within the budget a node of 50 does.
//
// The package is pure data: no I/O, no clock, no randomness, no locking. Time
// is always an argument, in unix minutes.
package crdt
