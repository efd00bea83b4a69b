package cookie_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"math"
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

// queued and admitted are typical tokens, as the edge would write them. The
// edge draws ID from crypto/rand, so a real ID almost always takes the 9-byte
// uint64 encoding; admitted's is at or above 2^63, past the int64 range.
var (
	queued = cookie.Token{
		Bucket:          testNow.Unix() / 60,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 21,
		CountedMinute:   testNow.Unix() / 60,
		ExpiresAt:       testNow.Unix() + 300,
		ID:              0x2545f4914f6cdd1d,
	}
	admitted = cookie.Token{
		Bucket:          testNow.Unix()/60 - 12,
		AcceptedAt:      testNow.Unix() - 30,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 19,
		CountedMinute:   testNow.Unix() / 60,
		ExpiresAt:       testNow.Unix() + 600,
		ID:              0x9e3779b97f4a7c15,
	}
)

// maxSealedLen is the longest value Seal writes, in characters: the
// unpadded base64 of version and key id (2 bytes), nonce (12), the longest
// payload (97: the array header, five int64s of 9 bytes, a uint16 of 3, a
// bool, a uint64 of 9, a bool, a uint16 of 3 and a 32-byte priority group
// with its 2-byte header) and the GCM tag (16), 127 bytes in all.
const maxSealedLen = 170

// longest is a token whose every field takes its widest encoding, so that it
// seals to exactly maxSealedLen characters.
var longest = cookie.Token{
	Bucket: math.MinInt64, AcceptedAt: math.MaxInt64, LastCheckIn: math.MinInt32 - 1,
	RefreshInterval: math.MaxUint8 + 1, CountedMinute: math.MaxUint32 + 1, ExpiresAt: math.MaxInt64,
	Infinite: true, ID: math.MaxUint32 + 1, Verified: true, Arrived: math.MaxUint8 + 1, Priority: "a-priority-group-of-32-bytes-max",
}

// verified is admitted after solving the room's bot challenge.
var verified = func() cookie.Token { t := admitted; t.ID = 0xd1b54a32d192ed03; t.Verified = true; return t }()

func mustRing(tb testing.TB, keys ...cookie.Key) *cookie.Keyring {
	tb.Helper()
	k, err := cookie.NewKeyring(keys...)
	if err != nil {
		tb.Fatalf("NewKeyring: %v", err)
	}
	return k
}

// sealPayload seals payload by hand, following the package documentation,
// as Seal would under key with nonce: for plaintexts Seal never writes. It
// panics if key's secret is not an AES-256 key.
func sealPayload(key cookie.Key, room string, nonce, payload []byte) string {
	block, err := aes.NewCipher(key.Secret)
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	header := []byte{cookie.Version, key.ID}
	wire := append(append(bytes.Clone(header), nonce...), gcm.Seal(nil, nonce, payload, append(header, room...))...)
	return base64.RawURLEncoding.EncodeToString(wire)
}

// arrivedLate is queued, arriving 42.7 s into its minute: a ten-element
// token.
var arrivedLate = func() cookie.Token { t := queued; t.Arrived = 427; return t }()

// grouped is arrivedLate with a priority group: the eleven elements this
// version writes at most.
var grouped = func() cookie.Token { t := arrivedLate; t.Priority = "vip"; return t }()

// withExtraFields is tok's payload with n more elements, encoded as extra,
// appended, as a later version that knows more fields might write it.
func withExtraFields(tok cookie.Token, n int, extra ...byte) []byte {
	b, _ := tok.MarshalMsgpack()
	b[0] += byte(n)
	return append(b, extra...)
}

// eightFields is tok's payload in the layout written before Verified was
// added: an eight-element array ending with ID.
func eightFields(tok cookie.Token) []byte {
	b, _ := tok.MarshalMsgpack()
	b = b[:len(b)-1] // Verified, always one byte
	b[0] = 0x98
	return b
}
