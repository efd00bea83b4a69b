// Package sim measures how faithfully the admission policy holds a room's
// limits across many independent nodes, and how fair it is to the people
// waiting: a deterministic discrete-event simulation of a waitroom cluster
// that drives the real crdt and policy code.
//
// # What is simulated
//
// Virtual time only: one priority queue of events ordered by (time,
// sequence), no goroutines, no wall clock, and one *rand.Rand (PCG seeded
// from the scenario's seed) for everything random, drawn in event order. The
// same scenario gives byte-identical JSON. A 30-minute event with ten nodes
// and 10,000 visitors runs in a few seconds.
//
//   - Nodes: each has its own crdt.State replica, its own clock (virtual
//     time + skew, corrected to the ring's time by the rule a gossip node
//     keeps its time by, crdt.RingOffset and crdt.RingNow, from the
//     offsets of the peers it sees) and its own allocation chain
//     (policy.Chain), stepped every 250 ms of virtual time, after every
//     gossip delivery that changes the state (at most every 50 ms) and
//     when a request finds the minute turned, the periods of a node's
//     allocation loop. Room.Lag is the lag a node assumes: each takes a
//     delay sample from the first arrival of every gossip message that
//     changes its state (stamped with its origin's clock when its oldest
//     change was made) and of every beat a peer sends after
//     crdt.BeatInterval without counts of its own, reads the ring's delay
//     by crdt's rule (crdt.Delays, crdt.RingDelay: the 99th percentile per
//     peer over a minute, the highest over the live peers, once each gave
//     eight samples) and assumes policy.AssumedLag of it; until then, or
//     with gossip.lag_measured: false, the configured bound (room.lag, or
//     the policy default: a node's gossip_lag, or its profile's).
//   - Membership, per node, as its gossip layer reports it: Room.Nodes is
//     the node's expected members, the members it counts live but never
//     fewer than the largest ring it saw in the last ten virtual minutes
//     (less the nodes that announced a clean leave);
//     gossip.Node.ExpectedMembers. While it counts fewer live than it
//     expects, it allocates from the entries of the replicas it counts
//     live and its part of the limits (policy.Sight). A crashed node, or
//     the far side of a partition, stops counting live after
//     nodes.failure_detection and stays expected for the ten minutes;
//     nodes.cut_handling: whole switches the cut handling off (the whole
//     snapshot, stale columns and all, Sight.Whole) for comparison. Seed
//     lists, whose length is another floor of a node's expected members,
//     are not modelled.
//   - Gossip: a node's own new entries (the crdt.Entry values State.Add
//     returns) are gathered for gossip.batch (50 ms) and sent to every other
//     node it counts live, each copy delayed by gossip.delay ± gossip.jitter
//     and lost with probability gossip.loss; every gossip.push_pull (30 s)
//     each node exchanges its whole state with a random peer it counts
//     live, so loss heals.
//   - Data centers (nodes.datacenters): each gossips within itself as
//     above, so a node measures its lag and its ring's time among its data
//     center's members; between data centers only figures travel. Every
//     gossip.wan.round each data center's carrier (its first member) sums
//     the cells that changed at it (crdt.State.Carry) and sends the
//     aggregate entries that grew to every other data center's carrier,
//     each copy delayed by the WAN's delay ± jitter and, when lost, sent
//     again a round later; that carrier merges them (crdt.State.MergeAt)
//     and relays what was new to its members. Room.Nodes adds the other
//     data centers' nodes (crdt.State.OtherDatacenterNodes) to the
//     expected members, as the edge does. Only shift events are modelled
//     with data centers.
//   - Visitors: arrivals follow the scenario's curve (uniform, step, spike
//     or phases, Poisson or evenly spaced) and its per-node split, which
//     shift events move over time. The token is the visitor's state
//     (policy.Counting: bucket, accepted-at, last check-in, refresh
//     interval, where it is counted, expiry) and the priority group its
//     code gave it (Phase.Group). Each request takes the steps of every
//     request (policy.TurnOf, then policy.Request for one that is decided
//     on), and what it counts is the counter rule's (policy.Count): the
//     code a node runs for it. A queued visitor checks in after its
//     token's refresh interval: the proof interval (policy.ProofRefresh)
//     after its first page, from which on it counts as waiting, then the
//     page's refresh interval (policy.Allocation.RefreshInterval: 4–6 s
//     near the front of the line, 17–23 s behind it; a refresh spammer
//     sooner; an early check-in is not an attempt), may give up
//     (abandonment), and once admitted browses for its time on the origin,
//     a request every request interval; its session lives
//     session_duration after its last request.
//   - Events: a node crash (the node stops; its visitors' next requests
//     reach other nodes with the same token; the others stop counting it
//     live after nodes.failure_detection), a clean leave (the node ships
//     its last counts and announces it; the others stop expecting it when
//     the announcement arrives, one gossip delay later), a restart of a
//     node that crashed or left (a new process: a new incarnation with an
//     empty state that expects the whole ring, its seeds, and joins every
//     live node at once by a full-state push-pull), a partition (for a
//     while, every message between its groups is lost, in flight or not;
//     after failure detection each node counts only its own group live; on
//     heal every node rejoins the peers it lost within a second, by a
//     full-state push-pull with each, and counts them live once their state
//     has arrived) and traffic shifts. Visitors keep reaching their node
//     through a partition.
//
// # What is measured
//
// The truth, kept outside the nodes (package policy/truth, which the
// real-process fidelity run shares), as the origin sees it by the
// simulated wall clock, whatever the nodes' minute buckets say: a visitor
// is active from its admission until session_duration after its last
// request to the origin (every request the origin sees is fed to it from
// browse, the admission's own included; a request a node lets through after
// the session ran out opens a new one); new users per minute are the
// admissions within a wall-clock minute; a FIFO inversion is an admission
// while someone who arrived in an earlier wall-clock minute still waits and
// is let in more than two seconds later (or never); the utilisation at the
// first queueing is active / total_active_users or this minute's admissions
// / new_users_per_minute, whichever is larger, when the first visitor is
// queued. Result.Figures gives those four and the others (share of time
// above the limit, utilisation while queueing, the correlation of wait with
// arrival minute, the estimate error), and CheckGoals checks every run
// against the four goals (peak active and peak new users per minute ≤ 1.02
// of the limits, utilisation at the first queueing ≥ 0.95, FIFO inversions
// ≤ 1%) and any others the scenario lists; the text and Markdown reports
// mark every miss. Result.Partitions adds, for each partition, the room's
// peaks while cut and after the heal, the FIFO inversions across the sides,
// and each side's admissions per minute against its part of the limit, its
// peak active, its queue at the heal and the waits of those who arrived
// during the cut. Report prints the comparison table and JSON; package
// policy/sim/plot draws the PNG plots (gonum/plot): active users vs the
// limit, queue length, admissions per minute, and the
// wait-vs-arrival-minute heatmap of Cloudflare's "Waiting Room: Random
// Queueing and Custom Web/Mobile Apps".
//
// Scenarios live in testdata/scenarios; `waitroom sim --scenario FILE` runs
// one. docs/sim/RESULTS.md holds the comparison of the reference's
// per-minute split (policy.ReferencePerMinute) with ours (policy.Continuous);
// `waitroom sim --markdown` prints its tables and `--readme` the README's.
package sim
