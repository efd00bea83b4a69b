// Package fidelity measures how faithfully a ring of real `waitroom serve`
// processes holds a room's limits, judged from the origin's side.
//
// [Run] starts, per scenario, N node processes on loopback (one cookie key
// file and one gossip key file shared by all, the first node the others'
// seed) in front of the one test origin (edgetest.Origin), which logs every
// request's visitor (the X-Fidelity-Visitor header the crowd sends, which
// the room passes through) and time. A crowd of cookie-keeping visitors
// (package crowd) arrives at the nodes by the scenario's weights, follows
// the queue page's Refresh, browses the origin for a while once let in, and
// leaves.
//
// [Judge] then computes the truth from the origin's log by wall-clock time
// with package truth, the judge the simulator uses too,
// whatever the nodes' own minute buckets say: a visitor is active from its
// first request to the origin until session_duration after its last one;
// new users per minute are admissions within a wall-clock minute; a FIFO
// inversion is an admission made while someone who arrived in an earlier
// minute, and had not given up, still waited and was let in more than two
// seconds later; utilisation at first queueing is the binding limit's use
// when the first visitor got a queue page. The goals those figures are held
// to are in [Goals].
//
// Every scenario also holds the ring to staying up: a node whose process
// exits on its own (the node-restart scenario's kill aside), or whose log
// tells of a panic, recovered or not, misses the goal, whatever its limits
// did (see health.go). Every node runs the same policy over the same merged
// state, so one panic is the whole ring down at once. Where a scenario
// switches the room's queueing method mid-run, it does so through a node's
// admin API, as an operator would (see switch.go). Where a scenario groups
// its nodes in data centers, each data center's first node is its members'
// seed, every node seeds the pool between data centers with the other data
// centers' nodes, and serve's hidden, test-only flags put the data centers
// a WAN apart on loopback (see datacenters.go).
//
// The package drives the processes over HTTP and signals only: of the
// room's own code it imports only that judge, which knows nothing of how
// the room decides, and the test origin's package, of which it uses the
// origin alone, so what it measures is what a visitor and an origin would
// see.
package fidelity
