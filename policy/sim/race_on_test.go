//go:build race

package sim_test

// raceEnabled: the simulator runs on one goroutine, so the race detector
// finds nothing in a run and only slows it (about five times); under it the
// goal checks keep a representative few of the short scenarios, and CI runs
// them all once without it (.ci/run).
const raceEnabled = true
