package cookie_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/cookie"
)

// anyID draws an ID from the whole uint64 range, half the time from the
// boundaries of its encodings (0, small, 2^63-1, 2^63, math.MaxUint64 and the
// rest of idWidths), which a uniform draw would almost never hit.
var anyID = rapid.OneOf(rapid.Uint64(), rapid.SampledFrom(idWidths))

// anyToken draws any token at all, its expiry included.
var anyToken = rapid.Custom(func(t *rapid.T) cookie.Token {
	return cookie.Token{
		Bucket:          rapid.Int64().Draw(t, "bucket"),
		AcceptedAt:      rapid.Int64().Draw(t, "acceptedAt"),
		LastCheckIn:     rapid.Int64().Draw(t, "lastCheckIn"),
		RefreshInterval: rapid.Uint16().Draw(t, "refreshInterval"),
		CountedMinute:   rapid.Int64().Draw(t, "countedMinute"),
		ExpiresAt:       rapid.Int64().Draw(t, "expiresAt"),
		Infinite:        rapid.Bool().Draw(t, "infinite"),
		ID:              anyID.Draw(t, "id"),
		Verified:        rapid.Bool().Draw(t, "verified"),
	}
})

func TestProperties(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	t.Run("any token sealed with an expiry not yet passed opens to itself", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tok := anyToken.Draw(t, "token")
			room := rapid.String().Draw(t, "room")
			now := rapid.Int64Max(tok.ExpiresAt).Draw(t, "now")
			value := ring.Seal(room, tok)
			if len(value) > maxSealedLen {
				t.Fatalf("sealed value is %d characters, want at most %d", len(value), maxSealedLen)
			}
			got, err := ring.Open(value, room, time.Unix(now, 0))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got != tok {
				t.Fatalf("Open = %+v, want %+v", got, tok)
			}
		})
	})
	t.Run("any token opened after its expiry is expired", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tok := anyToken.Filter(func(tok cookie.Token) bool { return tok.ExpiresAt < math.MaxInt64 }).Draw(t, "token")
			now := rapid.Int64Min(tok.ExpiresAt+1).Draw(t, "now")
			_, err := ring.Open(ring.Seal("shop", tok), "shop", time.Unix(now, 0))
			if !errors.Is(err, cookie.ErrExpired) {
				t.Fatalf("Open error = %v, want ErrExpired", err)
			}
		})
	})
	t.Run("any token opened in another room fails authentication", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tok := anyToken.Draw(t, "token")
			room := rapid.String().Draw(t, "room")
			other := rapid.String().Filter(func(s string) bool { return s != room }).Draw(t, "other")
			_, err := ring.Open(ring.Seal(room, tok), other, testNow)
			if !errors.Is(err, cookie.ErrAuth) {
				t.Fatalf("Open error = %v, want ErrAuth", err)
			}
		})
	})
	t.Run("any token's payload decodes with msgpack and with UnmarshalMsgpack to itself", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			tok := anyToken.Draw(t, "token")
			b, err := tok.MarshalMsgpack()
			if err != nil {
				t.Fatal(err)
			}
			var generic []any
			if err := msgpack.Unmarshal(b, &generic); err != nil || len(generic) != 9 {
				t.Fatalf("msgpack.Unmarshal(%x) = %v, %v; want 9 elements", b, generic, err)
			}
			if id, ok := asUint64(generic[7]); !ok || id != tok.ID {
				t.Fatalf("msgpack.Unmarshal(%x): element 7 = %v (%T), want ID %d", b, generic[7], generic[7], tok.ID)
			}
			if generic[8] != tok.Verified {
				t.Fatalf("msgpack.Unmarshal(%x): element 8 = %v (%T), want Verified %v", b, generic[8], generic[8], tok.Verified)
			}
			var got cookie.Token
			if err := got.UnmarshalMsgpack(b); err != nil || got != tok {
				t.Fatalf("UnmarshalMsgpack = %+v, %v; want %+v", got, err, tok)
			}
		})
	})
}
