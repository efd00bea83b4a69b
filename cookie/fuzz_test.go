package cookie_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
)

// FuzzOpen checks that Open never panics, that every failure wraps exactly
// one sentinel, and that whatever opens re-seals and re-opens to the same
// token. The committed corpus (testdata/fuzz/FuzzOpen, described and written
// in corpus_test.go) holds values sealed under keyNew and keyOld, valid at
// fuzzNow, and broken ones.
func FuzzOpen(f *testing.F) {
	ring := mustRing(f, keyNew, keyOld)
	old := mustRing(f, keyOld)
	f.Add(ring.Seal("shop", queued), "shop", fuzzNow)
	f.Add(old.Seal("shop", admitted), "shop", fuzzNow)
	f.Add(ring.Seal("", cookie.Token{ExpiresAt: farFuture, Infinite: true}), "", fuzzNow)
	f.Add(ring.Seal("shop", largeID), "shop", fuzzNow)
	f.Add(ring.Seal("shop", verified), "shop", fuzzNow)
	f.Add(ring.Seal("shop", longest), "shop", fuzzNow)
	f.Add(ring.Seal("shop", arrivedLate), "shop", fuzzNow)
	f.Add(sealPayload(keyNew, "shop", make([]byte, 12), withExtraFields(arrivedLate, 1, 0x05)), "shop", fuzzNow)
	f.Add(sealPayload(keyNew, "shop", make([]byte, 12), eightFields(queued)), "shop", fuzzNow)
	f.Add(ring.Seal("shop", queued), "shop", queued.ExpiresAt+1)
	f.Add("", "shop", fuzzNow)
	f.Add(strings.Repeat("A", cookie.MaxValueLen+1), "shop", fuzzNow)
	f.Fuzz(func(t *testing.T, value, room string, now int64) {
		tok, err := ring.Open(value, room, time.Unix(now, 0))
		if err != nil {
			if !wrapsExactlyOne(err) {
				t.Fatalf("Open error %v does not wrap exactly one sentinel", err)
			}
			if tok != (cookie.Token{}) {
				t.Fatalf("Open returned %+v with error %v", tok, err)
			}
			if len(value) > cookie.MaxValueLen && !errors.Is(err, cookie.ErrTooLarge) {
				t.Fatalf("a %d-byte value gave %v, want ErrTooLarge", len(value), err)
			}
			return
		}
		if now > tok.ExpiresAt {
			t.Fatalf("Open accepted a token that expired at %d at %d", tok.ExpiresAt, now)
		}
		again, err := ring.Open(ring.Seal(room, tok), room, time.Unix(now, 0))
		if err != nil || again != tok {
			t.Fatalf("re-sealed token opened to %+v, %v; want %+v", again, err, tok)
		}
	})
}

// FuzzUnmarshalMsgpack reaches the payload decoder directly, which FuzzOpen
// cannot: a fuzzer never forges a GCM tag.
func FuzzUnmarshalMsgpack(f *testing.F) {
	for _, tok := range []cookie.Token{queued, admitted, {}, longest, largeID, verified, arrivedLate} {
		b, _ := tok.MarshalMsgpack()
		f.Add(b)
	}
	// The layout before Verified: an eight-element array ending with ID.
	f.Add(eightFields(admitted))
	// An array16 header, then an int64 and a uint64 above the int64 range.
	f.Add([]byte{0xdc, 0x00, 0x09, 0xd3, 0, 0, 0, 0, 0, 0, 0, 1, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	// Seven short fields, then an ID spelled as a negative int64, then Verified.
	f.Add([]byte{0x99, 1, 2, 3, 4, 5, 6, 0xc2, 0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc3})
	// A later version's eleventh and twelfth elements: skipped.
	f.Add(withExtraFields(arrivedLate, 2, 0x05, 0xc3))
	// Eight short fields, then an integer where Verified belongs.
	f.Add([]byte{0x99, 1, 2, 3, 4, 5, 6, 0xc2, 8, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var tok cookie.Token
		if err := tok.UnmarshalMsgpack(data); err != nil {
			if !errors.Is(err, cookie.ErrMalformed) {
				t.Fatalf("UnmarshalMsgpack error %v does not wrap ErrMalformed", err)
			}
			return
		}
		b, _ := tok.MarshalMsgpack()
		var again cookie.Token
		if err := again.UnmarshalMsgpack(b); err != nil || again != tok {
			t.Fatalf("re-encoded token decoded to %+v, %v; want %+v", again, err, tok)
		}
	})
}
