package cookie_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
)

// Fixed test keys. They are public, so they protect nothing; that is fine
// for tests and for the committed fuzz corpus, which was sealed under them.
var (
	keyOld = cookie.Key{ID: 1, Secret: bytes.Repeat([]byte{0x11}, cookie.SecretLen)}
	keyNew = cookie.Key{ID: 2, Secret: bytes.Repeat([]byte{0x22}, cookie.SecretLen)}
	// keyImpostor reuses keyNew's id with another secret.
	keyImpostor = cookie.Key{ID: 2, Secret: bytes.Repeat([]byte{0x33}, cookie.SecretLen)}
)

// Times used across the tests: fuzzNow is the "now" of the committed corpus.
var (
	testNow   = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z
	fuzzNow   = testNow.Unix()
	farFuture = int64(4102444800) // 2100-01-01T00:00:00Z
)

// queued and admitted are typical tokens, as the edge would write them.
var (
	queued = cookie.Token{
		Bucket:          testNow.Unix() / 60,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 21,
		CountedMinute:   testNow.Unix() / 60,
		ExpiresAt:       testNow.Unix() + 300,
	}
	admitted = cookie.Token{
		Bucket:          testNow.Unix()/60 - 12,
		AcceptedAt:      testNow.Unix() - 30,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 19,
		CountedMinute:   testNow.Unix() / 60,
		ExpiresAt:       testNow.Unix() + 600,
	}
)

func mustRing(tb testing.TB, keys ...cookie.Key) *cookie.Keyring {
	tb.Helper()
	k, err := cookie.NewKeyring(keys...)
	if err != nil {
		tb.Fatalf("NewKeyring: %v", err)
	}
	return k
}
