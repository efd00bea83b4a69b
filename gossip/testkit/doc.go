// Package testkit is the test support every package's tests share: one
// poll helper to wait for a condition that another goroutine makes true
// (a gossip round, a ring forming, an allocation recomputed), one fake
// clock that a test moves by hand, one buffer that collects output
// written by goroutines the test does not control, one way to find a
// free loopback port, and the machine's load average and a process's CPU
// time for measurements.
//
// It imports nothing of waitroom's own, so that the tests of any package,
// gossip's as well as edge's, can use it without an import cycle. It lives
// under gossip because gossip is the lowest layer whose tests wait on other
// goroutines; nothing in it knows of gossip.
package testkit
