//go:build !race

package cookie_test

const raceEnabled = false
