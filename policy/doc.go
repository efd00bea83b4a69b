// Package policy decides, on one node, who enters a waiting room.
//
// It is pure: Allocate (and Next) turn the room's settings, the node's merged
// crdt snapshot and a time passed in into an Allocation; Decide then answers
// one visitor at a time from it with a few atomic operations, and Estimate
// says how long a queued visitor will wait. Nothing here reads a clock, draws
// global randomness or does I/O. The reference design is in
// shared/reference; the numbers below are its worked examples, and the tests
// reproduce them.
//
// # Open slots
//
// Each minute the room may take
//
//	S = min(total_active_users − active, new_users_per_minute − admitted this minute)
//
// more visitors, never fewer than zero (000: 10,000 total, 2,000 per minute,
// 7,000 active → min(3,000, 2,000) = 2,000). Active counts the sessions of
// the last session_duration minutes. The sessions of the minute now expiring
// leave during this minute at the second their last request came; not
// knowing those seconds, we take them as spread evenly and count
// ActiveExpiring × (1 − elapsed/60) of them.
//
// # FIFO: the oldest buckets first
//
// A visitor's bucket is the minute of their first request. S is reserved for
// the oldest buckets first (000: buckets of 500, 1,000 and 1,000 with 2,000
// slots get 500, 1,000 and 500). A bucket reserved in full is covered: its
// visitors may enter at any node, because they are distinct people already
// counted and cannot be admitted twice. What is left, the pool U, is either
// the slots of the one partly covered bucket or, when every bucket is
// covered, the remainder for new visitors (200 waiting leave 1,800). The pool
// is what nodes split between them. A bucket newer than the partial one, and
// a new visitor while any bucket is partial, wait.
//
// # Random: everyone is new
//
// Random queueing keeps the same buckets but ignores them: all of S is pool,
// and every request, first or queued, has the same chance at it (000: all
// 2,000 slots split 1,200 / 800). Because the buckets are kept, switching
// FIFO → random → FIFO keeps the order of those still waiting (000's
// 5 → 4 → 3 → 2 → 1). Under the continuous strategy the new-user slots of a
// minute are released with the clock (all of them by five seconds before its
// end) rather than all at :00, so the check-ins that happen to come just
// after the minute turns do not take them all; the randomness comes from when
// visitors check in, which the edge jitters.
//
// # Splitting the pool between nodes
//
// Each node decides alone, so the pool is split. A node's share is its
// traffic over the larger of all traffic and new_users_per_minute; what
// traffic does not claim is the Anywhere part, divided evenly between
// Room.Nodes nodes (001: 50 active of 200, San Jose 20 and London 30 → San
// Jose 10% of 150 = 15 slots, Anywhere 75% = 113, a tenth of it each). A node
// with no history has only its Anywhere part. Within a node there is nothing
// to split: one process counts exactly, as the reference's data-center
// counters do. The reference later made the Anywhere part one global counter,
// so one node could take all 113 at once; without a coordinator a node takes
// its part per lag, and the continuous re-division below hands it the rest
// within seconds (128 visitors reaching San Jose over ten seconds all go in).
//
// Traffic is a node's arrivals plus its admissions per minute; admissions
// keep a node that serves a queue its share after its new arrivals dry up.
// (If the edge counts every distinct visitor it sees in a minute as an
// arrival, queued check-ins included, shares follow the queue directly.)
//
// # Two strategies
//
// ReferencePerMinute is the reference: at the minute's first allocation the
// pool is split by the traffic two minutes earlier (002: 16:31's 50/50 split
// 16:33's slots, 16:32's 45/55 split 16:34's), and that split holds until the
// minute ends. Slots a quiet node does not use stay unused; a busy node
// queues with the room far from full. It is kept as a baseline.
//
// Continuous, the default, re-divides the pool at every allocation, which
// the edge makes whenever the merged state changes. Gossip shows every node
// every other node's admissions within one lag L (Room.Lag), so:
//
//   - The share uses the traffic of the last sixty seconds (the previous
//     minute pro rata and the current one), not of two minutes ago, so a
//     burst moves the share within a lag.
//   - A node counts its own traffic as it stood one lag ago. Every other node
//     has seen at least that much of it, and sees the others at least as
//     fresh, so each node's denominator is at least the common total and the
//     shares of all nodes add up to at most one, whatever each view lags.
//   - Within any span of one lag, a node admits at most its share (plus its
//     Anywhere part) of the pool as it stood at the span's start: it sees
//     the pool U with its own admissions exact and takes share × (U + k) − k,
//     where k is what it admitted during the last lag. After one lag the
//     others' admissions are visible, k drops, and the node takes its share
//     of what is still unused. A node whose traffic is the burst soon holds
//     nearly all the share and so nearly all the slots (in the tests, with
//     L = 1 s, one of five nodes takes 94% of a minute's slots within six
//     seconds, where the reference gives it 20%); a quiet node keeps its
//     share of what is left.
//   - Shares are rounded on one line from 0 to the pool, with an offset all
//     nodes draw alike from the room and the lag window, so the whole slots
//     add up to at most the pool, and a share below one slot still gets a
//     slot in proportion.
//
// No free-for-all below some utilisation: a flood that reaches every node in
// the same second (the start of a ticket sale) would be admitted n times
// over. Far from the limit the Anywhere part is most of the pool anyway.
//
// # Overshoot bound
//
// Assume gossip delivers within L, Room.Nodes is at least the number of
// nodes admitting, and clocks agree to well within L. Then in every span of
// one lag the pool admissions of all nodes add up to at most the pool at the
// span's start, plus the slots that sessions ending and a new minute add
// meanwhile: by the two points above, Σ share × (U + k) ≤ U(t − L). So the
// split itself never overshoots. What remains:
//
//   - FIFO: a visitor queued at another node less than L ago is not yet in
//     this node's covered count, so its pool looks larger by them. Overshoot
//     ≤ the visitors queued, cluster-wide, within one lag whom the open
//     slots cover at once. That happens only while some node has used its
//     share and another has not; with visitors arriving at the new-user
//     limit it is at most N × L / 60 s (N = new_users_per_minute).
//   - Rounding: zero when views agree and every node has traffic; at most
//     one slot per lag for each node whose view differs or whom the others
//     have not heard from (it cannot know its place on the shared line).
//   - The expiring minute, taken as spread evenly: a burst of last requests at
//     one second of minute m − session_duration is misjudged by at most
//     that burst × the elapsed part of the minute, during minute m only.
//
// That is L/60 s of the new-user limit at worst (1.7% for L = 1 s) and near
// zero in a steady state (in the tests, with L = 1 s, five nodes flooded at
// :00 with gossip 0, 0.3 or 1 s late admit 995..1,000 of 1,000). The bound needs L to bound the
// gossip delay: when gossip is slower, each node counts its own flood as seen
// by the others, and a flood at every node at once can admit up to Nodes
// times the pool (measured: 5,000 of 1,000 with gossip at 2 L). Hence
// DefaultLag is 2 s, twice a slow gossip round; a larger L only slows
// re-division, and leaves about one lag's refill of active slots unused.
//
// ReferencePerMinute overshoots by what other nodes admitted in the lag
// before each minute's split, and undershoots by every unused share.
//
// # Methods and switches
//
// passthrough admits everyone (still counted); reject turns everyone away
// with a static page; queue_all queues everyone not already admitted, keeps
// positions and gives no estimate; suspended passes everyone through without
// a cookie or a count. Suspended wins over everything, queue_all over the
// method. With MaxQueue set, a new visitor who would be queued while
// MaxQueue or more wait is turned away (Reject) and the page shows
// queueIsFull; those already queued keep their place.
//
// # Estimated wait
//
// The admission rate is the average of the last five minutes (the current
// one in part), from every node's admissions. FIFO (002): visitors ahead /
// rate, rounded up, at least one minute (60 ahead at 30 a minute: 2
// minutes); a visitor whose bucket is covered is told one minute. Random
// (000): with P = rate / visitors waiting, the wait within which a share p
// of visitors get in is n = log(1 − p) / log(1 − P) (P = 0.1, p = 0.5:
// 6.58 minutes); the page shows the 25th to the 75th percentile. Without a
// rate, and under queue_all, the wait is unknown.
//
// # Using it from the edge
//
// Keep one *Allocation per room in an atomic pointer. Call Allocate once,
// then Next on the latest allocation whenever the merged state changes
// (throttled) and at every minute boundary: Next carries the node's
// admission counters and the record of its recent admissions that the
// continuous split needs (Allocate alone must assume all of this minute's
// own admissions are recent, which gives about the reference's split). Per
// request, Decide; on Admit record Admitted and Active for the current
// minute and take the visitor out of its Waiting cell before the next
// allocation; on Queue move the Waiting count to (bucket, now). Estimate
// fills the queue page; Summary and EligibleSlots serve the admin endpoint.
// The snapshot is read with Room.Windows().
package policy
