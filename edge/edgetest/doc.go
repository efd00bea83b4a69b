// Package edgetest is the one harness for running waitroom nodes in one
// process: the fake origin every harness puts behind its nodes (Origin,
// which logs what it was asked, when and by whom), a single node in front
// of it on a fake clock (Fixture), the in-process cluster (Cluster: N real
// nodes built as `waitroom serve` builds them (agent.New) on loopback, on a fake clock the caller moves
// or on the wall clock, gossiping over memberlist or through a
// gossip.MemNet, killed, stopped and restarted at will), and a browser
// that calls a node's handler and keeps its cookies (Visitor).
//
// The edge tests use it, and so do the tools that run nodes in one process:
// the demo and the bench start their rings with it, and the real-process
// fidelity run puts the same origin behind its serve processes. Waiting is
// done with gossip/testkit's Poll and Eventually; the allocation loop is run
// with Server.RefreshAllocations rather than slept for.
//
// A test's constructors take its testing.TB and fail it; a tool's
// (StartOrigin, OpenCluster) return errors.
package edgetest
