//go:build race

package cookie_test

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are meaningless under it.
const raceEnabled = true
