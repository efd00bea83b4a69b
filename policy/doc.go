// Package policy decides, on one node, who enters a waiting room.
//
// It is pure: Allocate (and Next) turn the room's settings, the node's merged
// crdt snapshot and a time passed in into an Allocation; Decide then answers
// one visitor at a time from it with a few atomic operations, and Estimate
// says how long a queued visitor will wait. Nothing here reads a clock, draws
// global randomness or does I/O. The design is Cloudflare's Waiting Room as
// its engineers describe it in "Waiting Room: Random Queueing and Custom
// Web/Mobile Apps" (below: Random Queueing), "How Waiting Room makes queueing
// decisions on Cloudflare's highly distributed network" (Queueing Decisions)
// and "Building Waiting Room on Workers and Durable Objects" (Durable
// Objects); "the reference" below is that design. The numbers below are the
// write-ups' worked examples, and the tests reproduce them.
//
// # Open slots
//
// Each minute the room may take
//
//	S = min(total_active_users − active, new_users_per_minute − admitted this minute)
//
// more visitors, never fewer than zero (Random Queueing: 10,000 total, 2,000
// per minute, 7,000 active → min(3,000, 2,000) = 2,000). Active counts the
// sessions whose cookies still let their visitors in: each session is
// counted in the cell of its expiry second, rounded up to the room's session
// slice (1 s for short sessions, 15 s for 30-minute ones, see SessionSlice),
// and a snapshot at second t sums the cells that expire after t.
//
// # FIFO: the oldest buckets first
//
// A visitor's bucket is the minute of their first request. S is reserved for
// the oldest buckets first (Random Queueing: buckets of 500, 1,000 and 1,000 with 2,000
// slots get 500, 1,000 and 500). A bucket reserved in full is covered: its
// visitors may enter at any node, because they are distinct people already
// counted and cannot be admitted twice. What is left, the pool U, is either
// the slots of the one partly covered bucket or, when every bucket is
// covered, the remainder for new visitors (200 waiting leave 1,800). The pool
// is what nodes split between them. A bucket newer than the partial one, and
// a new visitor while a bucket of an earlier minute is partial, wait. Under
// the continuous strategy a new visitor competes with those queued in the
// current minute's bucket when that is the partial one: within a bucket the
// order is whoever comes first once slots open, and letting them in is no
// inversion (they came in the same minute), while holding them left slots
// free until the queued ones' next check-in, up to a refresh interval later.
//
// # FIFO as the visitors see it: a covered bucket's check-ins go first
//
// A covered bucket's visitors may enter anywhere, but only when they next
// check in, up to one refresh interval (Room.CheckIn, the edge's 20 s ± 3 s;
// NearCheckIn for a bucket near the front of the line for a while, see
// Allocation.RefreshInterval) later. Admitting the pool meanwhile, a newer bucket's visitors or the new
// visitors of the minute who need no check-in, lets in someone who came in
// a later minute while someone who came earlier still waits, and is let in
// seconds later: a FIFO inversion at the origin. That is what a regional
// flood (one node with four times the traffic of each other) measured:
// 4.4% of admissions with three real processes, 16.5% in the policy's ring
// model, nearly all at the minute turn, when the new minute's slots cover
// the oldest bucket and the new visitors take the rest at once. So under
// the continuous strategy, once a bucket is covered, pool admissions of
// newer buckets and new visitors wait until its count is gone or one
// check-in interval and a lag have passed since the chain last saw it
// become covered as it stands, whatever the count says then (visitors who
// gave up keep their count for the waiting window and must not hold the
// queue that long). "Last" and "as it stands" matter: a bucket that was
// covered, then not (the minute turned and its coverage with it, or the
// active limit's slots went elsewhere), turned its visitors away
// meanwhile, and a visitor may join a bucket after it was covered (the
// current minute's bucket grows; counts from other nodes arrive); each
// comes back up to one interval later. So the interval starts again when
// the bucket becomes covered after a break or its count grows. Covered by
// the open slots, that is: a bucket kept covered only because coverage
// sticks for the minute (below) is this node's promise alone; the other
// nodes may treat it as the partial bucket and turn its visitors away, so
// its interval starts once the open slots cover it (at the next minute's
// turn, say). Timed from the first coverage instead, 1-minute sessions at
// 1.5 × the per-minute limit over three nodes, where the active limit's
// slots open one by one, inverted 4.6% of admissions in the ring model (9%
// at the origin with three real processes); timed so, none. The model
// measures 0.4% for the regional flood after. It costs nothing of the per-minute limit (the
// minute's slots wait for its remaining seconds) and at most one check-in
// interval of the slots that ending sessions free. Covered buckets are not
// held behind each other: their slots are reserved, whatever the order, and
// holding them concentrated their admissions enough to overshoot the active
// limit in the simulator's reference experiment (1.034 × the limit). A
// chain's first allocation takes the buckets it finds covered as covered
// long ago, as the reference does. The reference strategy keeps the
// reference's rules.
//
// Under the continuous strategy coverage sticks for the rest of the minute:
// once an allocation of minute m has covered a bucket (of an earlier
// minute), later allocations of m keep it covered, as long as no more
// visitors wait in it than were covered, even when S has dropped below what
// it needs. What took its slots was the pool, admitted by other nodes on
// views up to one lag old, or the per-minute limit catching up as the active
// one freed slots; refusing the bucket's last visitors then, after the next
// bucket has gone in elsewhere, is a FIFO inversion (the simulator measured
// 2–9% of admissions before this, none after). The pool is what S leaves
// after the covered buckets, never below zero.
//
// # Random: everyone is new
//
// Random queueing keeps the same buckets but ignores them: all of S is pool,
// and every request, first or queued, has the same chance at it (Random
// Queueing: all 2,000 slots split 1,200 / 800). Because the buckets are kept,
// switching FIFO → random → FIFO keeps the order of those still waiting
// (Random Queueing's 5 → 4 → 3 → 2 → 1). Under the continuous strategy the
// new-user slots of a minute are released with the clock (all of them by five
// seconds before its end) rather than all at :00, so the check-ins that
// happen to come just after the minute turns do not take them all; the
// randomness comes from when visitors check in, which the edge jitters.
// While anybody waits, the pool is split between the nodes by where the
// visitors wait, not by traffic, each node's waiting weighted by the chance
// that one of them checks in while a slot is the node's, so that every
// waiting visitor has the same chance whichever node it waits at (see
// drawShares and drawWeight).
//
// # Splitting the pool between nodes
//
// Each node decides alone, so the pool is split. A node's share is its
// traffic over the larger of all traffic and new_users_per_minute; what
// traffic does not claim is the Anywhere part, divided evenly between
// Room.Nodes nodes (Queueing Decisions: 50 active of 200, San Jose 20 and
// London 30 → San Jose 10% of 150 = 15 slots, Anywhere 75% = 113, a tenth of
// it each). A node with no history has only its Anywhere part. Within a node
// there is nothing to split: one process counts exactly, as the reference's
// data-center counters do. The reference later made the Anywhere part one
// global counter, so one node could take all 113 at once; without a
// coordinator a node takes its part per lag, and the continuous re-division
// below hands it the rest within seconds (128 visitors reaching San Jose over
// ten seconds all go in).
//
// Traffic is a node's arrivals: the edge counts every distinct visitor it
// sees in a minute, queued check-ins and admitted visitors' first request of
// the minute included, so shares follow the queue and the browsing visitors
// directly. Admissions are not added: every admitted visitor is already an
// arrival. Because browsing visitors count, traffic near the limit is a
// multiple of new_users_per_minute and the Anywhere part is zero there;
// bursts at one node are what the burst allowance below is for.
//
// # Two strategies
//
// ReferencePerMinute is the reference: at the minute's first allocation the
// pool is split by the traffic two minutes earlier (Durable Objects: 16:31's
// 50/50 split 16:33's slots, 16:32's 45/55 split 16:34's), and that split
// holds until the minute ends. Slots a quiet node does not use stay unused; a
// busy node queues with the room far from full. It is kept as a baseline.
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
//     nodes draw alike from the room and the second of the ring's time
//     (never from their own lags, which differ), so the whole slots add up
//     to at most the pool, and a share below one slot still gets a slot in
//     proportion.
//
// No free-for-all below some utilisation: a flood that reaches every node in
// the same second (the start of a ticket sale) would be admitted n times
// over. Far from the limit the Anywhere part is most of the pool anyway.
//
// # What the lag hides: a flood at every node queues early
//
// A node cannot tell how late the others' admissions reach it, only that
// they arrive within L. So, near the limit, it must leave room for what
// every other node may have admitted within one lag without its knowing:
// with n nodes each admitting r a second, it queues its next visitor once
// the room has fewer than about (n − 1)·r·L slots left, however soon the
// others' admissions in fact arrive. When gossip takes the whole lag, the
// slots it held back are what the others did take, and the room fills; when
// gossip takes d < L, about (n − 1)·r·(L − d) stay free until the queued
// visitors' next check-in. That is why a fresh room of 40 flooded by 120
// visitors in ten seconds at three real processes on loopback (gossip
// ~0.1 s, the edge's default lag 2 s) queued at 24 of 40. A node's own
// traffic, counted as it stood one lag ago for the shares to add up to at
// most one, costs a little more (its fraction of the pool falls below 1/n
// while its flood grows). In the policy's ring model (three nodes, 4
// visitors a second each, limits 40/40): lag 2 s and gossip 0.2 s queue at
// 0.525 of the limits; lag 1 s and gossip 1 s at 0.95; lag 300 ms and
// gossip 100 ms at 0.975; never above the limits. The simulator agrees
// (3 nodes, gossip 100 ms: 0.45 with the default lag, 0.925 with 300 ms).
// Estimating the delay from the merged state is not possible: a steady
// stream of updates looks the same whether each is 0.1 s or 1 s old. The
// remedy is a Room.Lag that fits the real gossip delay, measured rather
// than configured; a larger one only costs this fill, a smaller one voids
// the overshoot bound below. So gossip stamps every count it sends with the
// time of the change at its origin and measures each peer's clock offset
// over its probes, and the edge sets Room.Lag to twice the highest per-peer
// 99th percentile of the delay over the last minute plus the 50 ms an
// allocation takes to follow a merge, at least 150 ms and never above the
// configured gossip_lag; until every live peer has given enough samples,
// and with gossip_lag_measured: false, it keeps the configured lag.
//
// Even a measured lag is two to three times the usual delay, and it rises
// with the load of the machine: a real fresh flood on a loaded machine
// still queued at 34 of 40. A visitor queued only for the slots kept back
// so need not be sent away for a refresh interval: while nobody waits, Held
// says so, and the edge holds the request and decides again on its next
// allocations, for up to two lags (at most MaxHold), by when the others'
// admissions have arrived or the node's allowance has renewed. Holding
// counts nothing and takes nothing; the held visitor is decided by Decide
// as if it came then, with the node's bursts off.
//
// # Bursts
//
// Near the end of a minute at steady load just under the limit, the pool is
// about one lag's worth of the room's demand, and a node's share of it a
// slot or two per lag; arrivals are random, and a node that gets four
// visitors within one lag queues some with the room below its limit (the
// simulator: 13–24 visitors in 20 minutes at 97% load, the first at 88–96%,
// whatever the seed and however the shares are measured: the shares of a
// pool add up to the pool, so no split by shares absorbs this). So while
// nobody waits (in the node's view), a node may make within one lag, share
// or not, up to
//
//	b = ⌈λ + 4√λ⌉ + 1
//
// pool admissions, λ being its admissions of the last sixty seconds per lag
// (with nobody waiting, its demand), and never more than the pool less what
// the other nodes are expected to take within the lag (their admissions of
// the last sixty seconds per lag, or, when what it heard them admit within
// the last lag is more than four standard deviations above that, what it
// heard: a flood at every node, which the sixty seconds show at a fraction
// of its pace). That covers a Poisson burst at four
// standard deviations (simulator: 0–4 visitors queued below 97% in 20
// minutes, first queueing at ≥ 0.966, no change in any scenario with a
// queue). The first visitor queued anywhere turns it off everywhere within
// a lag: a new visitor counts as waiting only from its proof, two seconds
// later (see Count), so the count of new visitors queued (the snapshot's
// Queued) says so at once, for the rest of the minute and the first seconds
// of the next.
//
// Its price is the one case it cannot tell from a burst: a flood that
// reaches every node within the same lag while nobody waits and the pool is
// nearly used. Then every node takes b: the room overshoots by at most
// (n − 1)·b − Λ + λ, Λ the room's admissions per lag, once (for 500 a
// minute over ten nodes with L = 2 s: λ = 1.7, b = 8, at most 57, 11%; the
// cluster test's pessimistic model, where nobody queues, measures 3%).
//
// # Overshoot bound
//
// Assume gossip delivers within L, Room.Nodes is at least the number of
// nodes admitting, and clocks agree to well within L. Then in every span of
// one lag the pool admissions of all nodes add up to at most the pool at the
// span's start, plus the slots that sessions ending and a new minute add
// meanwhile: by the two points above, Σ share × (U + k) ≤ U(t − L). So the
// split by shares never overshoots. What remains:
//
//   - FIFO: a visitor queued at another node less than L ago is not yet in
//     this node's covered count, so its pool looks larger by them. Overshoot
//     ≤ the visitors queued, cluster-wide, within one lag whom the open
//     slots cover at once. That happens only while some node has used its
//     share and another has not; with visitors arriving at the new-user
//     limit it is at most N × L / 60 s (N = new_users_per_minute).
//   - Rounding: zero when views agree and every node has traffic; at most
//     one slot per lag for each node whose view differs or whom the others
//     have not heard from (it cannot know its place on the shared line),
//     and one slot when the offset turns within a lag of an admission the
//     node has not heard of yet (see roundedPart).
//   - The expiring minute, taken as spread evenly: a burst of last requests at
//     one second of minute m − session_duration is misjudged by at most
//     that burst × the elapsed part of the minute, during minute m only.
//   - Bursts, while nobody waits: at most (n − 1)·b − Λ + λ once, as above.
//   - FIFO coverage that sticks within a minute admits a covered bucket's
//     visitors even when S has dropped below them: by what the pool took
//     beyond S, which the points above bound, and only until the minute
//     ends.
//
// Bursts aside, that is L/60 s of the new-user limit at worst (1.7% for
// L = 1 s) and near zero in a steady state (in the tests, with L = 1 s, five
// nodes flooded at :00 with gossip 0, 0.3 or 1 s late admit 995..1,000 of
// 1,000). The bound needs L to bound the gossip delay: when gossip is
// slower, each node counts its own flood as seen by the others, and a flood
// at every node at once can admit up to Nodes times the pool (measured:
// 5,000 of 1,000 with gossip at 2 L). Hence DefaultLag is 2 s, twice a slow
// gossip round; a larger L only slows re-division, and leaves about one
// lag's refill of active slots unused.
// Room.Lag must cover the real gossip delay: the edge sets it from the
// delay it measures, bounded by its gossip settings (gossip_lag, or the
// profile's), as above. In the simulator, gossip at
// 5 s with the default 2 s lag admitted 1.9–2.0 × the per-minute limit and
// 1.11 × the active one; the same traffic with Room.Lag = 10 s stays within
// 1.01.
//
// Clocks must agree across nodes to well within L; the policy cannot make
// them. Each node counts the minute budget, and stamps buckets, by its own
// clock: with offsets of ±30 s a true minute overlaps two node-minutes, and
// the simulator measures 1.17 × the per-minute limit and half of all
// admissions followed by a refusal of someone who truly came earlier (a node
// whose clock is behind puts later visitors into earlier buckets). A budget
// over a sliding sixty seconds would not help: it still reads node clocks,
// and under steady load just below the limit it leaves no more than the
// last 3% of a minute's slots at any moment, queueing in every minute.
// Skew is out of the policy's scope: keep clocks synchronised (NTP), or
// have the edge pass a time corrected by the offsets gossip can measure.
//
// ReferencePerMinute overshoots by what other nodes admitted in the lag
// before each minute's split, and undershoots by every unused share.
//
// # A cut ring
//
// The bound needs every node's admissions to arrive within L. When the ring
// is cut (a partition, or nodes that stopped answering), the other part's
// columns stop growing while its nodes may go on admitting; read as live,
// they tell each part that the slots the other takes are free, and in a
// 2-vs-3 split the parts admitted 1.4–2 × the per-minute limit together. The
// edge then hands Allocate only the reachable replicas' entries, with what
// it last heard of the others (Room.Side, Room.CutOff), and the reachable
// part keeps to
//
//	min(its part of each limit, what the whole room has left as last heard)
//
// where its part is reachable/Room.Nodes of the limit, rounded down. Parts
// with complementary views stay within the limits together: either each
// keeps to its part, or one had taken more than its part before the cut and
// the others are held by the room-wide term, which counted it (a 2-vs-3
// split at 60 a minute admits 24 + 36; TestACutRingStaysWithinTheLimitsTogether
// runs the cases). Within the part the split is the usual one, from the
// part's own traffic. The cost: a busier part cannot use the slots a quieter
// one leaves, and nodes that died rather than split off keep their part of
// the limits unused until they are back or the edge stops expecting them.
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
// The admission rate is the average, over every node's admissions, of the
// last five full minutes since the first of them that admitted anyone (a
// surge two minutes old has two minutes of rate, not two fifths of five).
// The current minute is left out: with the per-minute limit binding, its
// admissions come at its start, and a part of it overstates the whole; it
// serves only until a full minute exists.
//
// FIFO (Durable Objects): visitors ahead / rate, rounded up, at least one
// minute (60 ahead at 30 a minute: 2 minutes); a visitor whose bucket is
// covered is told one minute. Ahead are everyone in older buckets and those
// of the visitor's own bucket who came before it and still wait: the token
// keeps when inside its minute the visitor came, the ring counts each
// bucket's visitors per third of a minute, and a bucket's earlier visitors
// take its slots first (order.go). The same count is the visitor's place in
// line (Allocation.Position). Without the slot counts (a bucket older than
// the retention window) the bucket is taken as spread evenly over its
// minute.
// The reference strategy keeps the reference's estimate: older
// buckets only, over the average of the last five minutes with the current
// one in part.
//
// Under the continuous strategy, once total_active_users can bind before a
// visitor's turn, the wait comes from when the slots free rather than from
// the rate (forecast.go): the snapshot lists the running sessions by expiry
// second; those of visitors who left end at it, those still browsing end a
// session after they leave, which, taking visitors to leave in the order
// they came in, the admissions of the last minutes tell; every slot that
// frees is taken by the next in line and frees again a browse and a session
// later; and the per-minute budget paces it all at the admissions per
// minute of the recent minutes in which the active limit left room. A
// random queue's percentiles follow the same admissions.
//
// Random (Random Queueing): with P = rate / visitors waiting, the wait within
// which a share p of visitors get in is n = log(1 − p) / log(1 − P) (P = 0.1,
// p = 0.5: 6.58 minutes); the page shows the 25th to the 75th percentile.
// Without a rate, and under queue_all, the wait is unknown.
//
// # Using it from a node
//
// Keep one *Allocation per room in an atomic pointer, the latest of the
// room's Chain. Step the chain whenever the merged state changes (at most
// every AllocationFollow), at least every AllocationEvery and at every
// minute boundary, with what the node sees of the ring (Sight): it calls
// Allocate once, then Next on the latest allocation, which carries the
// node's admission counters and the record of its recent admissions that
// the continuous split needs (Allocate alone must assume all of this
// minute's own admissions are recent, which gives about the reference's
// split), and starts afresh when the ring's time steps back. Room.CheckIn is
// the longest refresh interval the node gives queued visitors (0:
// DefaultCheckIn, 20 s ± 3 s). Per request, TurnOf says whether it is a
// session's, an early check-in or one to decide on; a Request is decided
// (Decide, or DecidePriority for a priority holder, and Held), and its
// Decision's Count (the counter rule) says what to add to the node's
// entries: on Admit the admission and the session, the visitor taken out
// of its Waiting cell; on Queue its Waiting count moved to (bucket, now).
// The simulator and the tests' ring model take the same steps. Estimate
// fills the queue page; Summary and EligibleSlots serve the admin endpoint.
// The snapshot is read with Room.Windows().
package policy
