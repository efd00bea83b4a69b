package cookie_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/cookie"
)

// asInt64 converts whatever integer type msgpack decoded into an int64.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

// asUint64 converts whatever non-negative integer msgpack decoded into a
// uint64, the whole uint64 range included.
func asUint64(v any) (uint64, bool) {
	if n, ok := v.(uint64); ok {
		return n, true
	}
	n, ok := asInt64(v)
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

func TestAdmitted(t *testing.T) {
	tests := []struct {
		name  string
		token cookie.Token
		want  bool
	}{
		{"a queued visitor is not admitted", queued, false},
		{"an admitted visitor is admitted", admitted, true},
		{"the zero token is not admitted", cookie.Token{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.token.Admitted(); got != tt.want {
				t.Errorf("Admitted() = %v, want %v", got, tt.want)
			}
		})
	}
}

// fields lists a token's values the way the msgpack array holds them.
func fields(tok cookie.Token) []any {
	f := []any{tok.Bucket, tok.AcceptedAt, tok.LastCheckIn, int64(tok.RefreshInterval), tok.CountedMinute, tok.ExpiresAt, tok.Infinite, tok.ID, tok.Verified}
	if tok.Arrived != 0 || tok.Priority != "" {
		f = append(f, int64(tok.Arrived))
	}
	if tok.Priority != "" {
		f = append(f, tok.Priority)
	}
	return f
}

// idWidths are IDs at every boundary of the uint64 encodings, the int64
// range's edge included.
var idWidths = []uint64{
	0, 1, math.MaxInt8, math.MaxInt8 + 1, math.MaxUint8, math.MaxUint8 + 1,
	math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1,
	math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64,
}

type namedToken struct {
	name  string
	token cookie.Token
}

var payloadTokens = append([]namedToken{
	{"a queued token", queued},
	{"an admitted token", admitted},
	{"the zero token", cookie.Token{}},
	{"a verified token", verified},
	{"an infinite-queue token", cookie.Token{Bucket: 29453760, LastCheckIn: 1767225600, RefreshInterval: 30, ExpiresAt: 1767225900, Infinite: true}},
	{"a verified infinite-queue token", cookie.Token{Bucket: 29453760, LastCheckIn: 1767225600, RefreshInterval: 30, ExpiresAt: 1767225900, Infinite: true, Verified: true}},
	{"a token of maximal values", cookie.Token{Bucket: math.MaxInt64, AcceptedAt: math.MaxInt64, LastCheckIn: math.MaxInt64, RefreshInterval: math.MaxUint16, CountedMinute: math.MaxInt64, ExpiresAt: math.MaxInt64, Infinite: true, ID: math.MaxUint64, Verified: true}},
	{"a token of minimal values", cookie.Token{Bucket: math.MinInt64, AcceptedAt: math.MinInt64, LastCheckIn: math.MinInt64, CountedMinute: math.MinInt64, ExpiresAt: math.MinInt64}},
	{"a token at every integer width boundary", cookie.Token{Bucket: 127, AcceptedAt: 128, LastCheckIn: -32, RefreshInterval: 256, CountedMinute: -33, ExpiresAt: math.MaxUint32 + 1}},
	{"a token just past the negative width boundaries", cookie.Token{Bucket: math.MinInt8 - 1, AcceptedAt: math.MinInt16 - 1, LastCheckIn: math.MinInt32 - 1, CountedMinute: math.MinInt8, ExpiresAt: math.MinInt16}},
	{"the longest token", longest},
	{"a token admitted by a priority code", cookie.Token{Bucket: 29453760, AcceptedAt: 1767225600, LastCheckIn: 1767225600, ExpiresAt: 1767225900, ID: 7, Priority: "vip"}},
}, append(withEveryIDWidth(queued), withEveryIDWidth(verified)...)...)

// withEveryIDWidth returns tok with each of idWidths as its ID.
func withEveryIDWidth(tok cookie.Token) []namedToken {
	var out []namedToken
	for _, id := range idWidths {
		tok.ID = id
		name := fmt.Sprintf("a token with ID %d", id)
		if tok.Verified {
			name = fmt.Sprintf("a verified token with ID %d", id)
		}
		out = append(out, namedToken{name, tok})
	}
	return out
}

func TestPayloadIsMsgpack(t *testing.T) {
	for _, tt := range payloadTokens {
		t.Run(tt.name+" decodes with msgpack.Unmarshal into []any", func(t *testing.T) {
			b, err := tt.token.MarshalMsgpack()
			if err != nil {
				t.Fatal(err)
			}
			var got []any
			if err := msgpack.Unmarshal(b, &got); err != nil {
				t.Fatalf("msgpack.Unmarshal(%x): %v", b, err)
			}
			want := fields(tt.token)
			if len(got) != len(want) {
				t.Fatalf("got %d elements, want %d", len(got), len(want))
			}
			for i := range 6 {
				if n, ok := asInt64(got[i]); !ok || n != want[i] {
					t.Errorf("element %d = %v (%T), want %v", i, got[i], got[i], want[i])
				}
			}
			if got[6] != want[6] {
				t.Errorf("element 6 = %v, want %v", got[6], want[6])
			}
			if n, ok := asUint64(got[7]); !ok || n != want[7] {
				t.Errorf("element 7 = %v (%T), want %v", got[7], got[7], want[7])
			}
			if got[8] != want[8] {
				t.Errorf("element 8 = %v (%T), want %v", got[8], got[8], want[8])
			}
		})
		t.Run(tt.name+" is byte for byte msgpack's compact encoding", func(t *testing.T) {
			b, _ := tt.token.MarshalMsgpack()
			var buf bytes.Buffer
			enc := msgpack.NewEncoder(&buf)
			enc.UseCompactInts(true)
			if err := enc.Encode(fields(tt.token)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, buf.Bytes()) {
				t.Errorf("MarshalMsgpack = %x, msgpack = %x", b, buf.Bytes())
			}
		})
		t.Run(tt.name+" written by msgpack with fixed-width ints decodes", func(t *testing.T) {
			b, err := msgpack.Marshal(fields(tt.token)) // int64 and uint64 as 9 bytes each
			if err != nil {
				t.Fatal(err)
			}
			var got cookie.Token
			if err := got.UnmarshalMsgpack(b); err != nil || got != tt.token {
				t.Errorf("UnmarshalMsgpack(%x) = %+v, %v; want %+v", b, got, err, tt.token)
			}
		})
		t.Run(tt.name+" round trips through msgpack.Marshal and msgpack.Unmarshal", func(t *testing.T) {
			b, err := msgpack.Marshal(tt.token) // uses Token.MarshalMsgpack
			if err != nil {
				t.Fatal(err)
			}
			var got cookie.Token
			if err := msgpack.Unmarshal(b, &got); err != nil || got != tt.token {
				t.Errorf("msgpack round trip = %+v, %v; want %+v", got, err, tt.token)
			}
		})
	}
}

func TestUnmarshalMsgpackRejects(t *testing.T) {
	good, _ := admitted.MarshalMsgpack()
	mp := func(v ...any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty input is malformed", nil},
		{"a map is malformed", []byte{0x80}},
		{"a six-element array is malformed", mp(1, 2, 3, 4, 5, 6)},
		{"a seven-element array, the layout before ID, is malformed", mp(1, 2, 3, 4, 5, 6, false)},
		{"an eight-element array, the layout before Verified, is malformed", mp(1, 2, 3, 4, 5, 6, false, 8)},
		{"an admitted token in the layout before Verified is malformed", eightFields(admitted)},
		{"a sixteen-element array is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, false, 10, "vip", 12, 13, 14, 15, 16)},
		{"an eleven-element array whose priority group is not a string is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, false, 10, 11)},
		{"an eleven-element array whose priority group is too long is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, false, 10, strings.Repeat("g", cookie.MaxCodeGroup+1))},
		{"an Arrived above 65535 is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, false, 65536)},
		{"a boolean where Arrived belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, false, true)},
		{"a payload cut before Verified is malformed", good[:len(good)-1]},
		{"a payload cut inside the ID is malformed", good[:len(good)-5]},
		{"a payload cut after the ID's type byte is malformed", good[:len(good)-9]},
		{"a payload missing the ID is malformed", good[:len(good)-10]},
		{"a payload cut inside an integer is malformed", good[:3]},
		{"trailing bytes are malformed", append(bytes.Clone(good), 0xc0)},
		{"a string where an integer belongs is malformed", mp("x", 2, 3, 4, 5, 6, false, 8, false)},
		{"a float where an integer belongs is malformed", mp(1.5, 2, 3, 4, 5, 6, false, 8, false)},
		{"nil where an integer belongs is malformed", mp(nil, 2, 3, 4, 5, 6, false, 8, false)},
		{"an integer where the flag belongs is malformed", mp(1, 2, 3, 4, 5, 6, 1, 8, false)},
		{"a refresh interval above 65535 is malformed", mp(1, 2, 3, 65536, 5, 6, false, 8, false)},
		{"a negative refresh interval is malformed", mp(1, 2, 3, -1, 5, 6, false, 8, false)},
		{"a uint64 above the int64 range is malformed", mp(uint64(math.MaxUint64), 2, 3, 4, 5, 6, false, 8, false)},
		{"a negative ID is malformed", mp(1, 2, 3, 4, 5, 6, false, -1, false)},
		{"an ID of math.MinInt64 is malformed", mp(1, 2, 3, 4, 5, 6, false, int64(math.MinInt64), false)},
		{"a string where the ID belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, "8", false)},
		{"a float where the ID belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8.0, false)},
		{"nil where the ID belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, nil, false)},
		{"a flag where the ID belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, true, false)},
		{"an integer 1 where Verified belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, 1)},
		{"an integer 0 where Verified belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, 0)},
		{"nil where Verified belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, nil)},
		{"a string where Verified belongs is malformed", mp(1, 2, 3, 4, 5, 6, false, 8, "true")},
		{"an admitted token with 0x01 for Verified is malformed", append(bytes.Clone(good[:len(good)-1]), 0x01)},
		{"an array32 header claiming billions of elements is malformed", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"an array16 header cut short is malformed", []byte{0xdc, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got cookie.Token
			err := got.UnmarshalMsgpack(tt.data)
			if !errors.Is(err, cookie.ErrMalformed) {
				t.Fatalf("UnmarshalMsgpack(%x) error = %v, want ErrMalformed", tt.data, err)
			}
			if got != (cookie.Token{}) {
				t.Errorf("UnmarshalMsgpack changed the token on error: %+v", got)
			}
		})
	}
	t.Run("a nine-element array16 is accepted", func(t *testing.T) {
		b := append([]byte{0xdc, 0x00, 0x09}, good[1:]...)
		var got cookie.Token
		if err := got.UnmarshalMsgpack(b); err != nil || got != admitted {
			t.Fatalf("UnmarshalMsgpack = %+v, %v", got, err)
		}
	})
	t.Run("a nine-element array32 is accepted", func(t *testing.T) {
		b := append([]byte{0xdd, 0x00, 0x00, 0x00, 0x09}, good[1:]...)
		var got cookie.Token
		if err := got.UnmarshalMsgpack(b); err != nil || got != admitted {
			t.Fatalf("UnmarshalMsgpack = %+v, %v", got, err)
		}
	})
}

func TestUnmarshalMsgpackAcceptsAnyIDWidth(t *testing.T) {
	// The ID in every integer encoding a MessagePack writer may use, after
	// seven fields in their shortest spelling and before Verified.
	head := []byte{0x99, 1, 2, 3, 4, 5, 6, 0xc2}
	tests := []struct {
		name string
		id   []byte
		want uint64
	}{
		{"a positive fixint ID", []byte{0x05}, 5},
		{"a uint8 ID", []byte{0xcc, 0x05}, 5},
		{"a uint16 ID", []byte{0xcd, 0x00, 0x05}, 5},
		{"a uint32 ID", []byte{0xce, 0x00, 0x00, 0x00, 0x05}, 5},
		{"a uint64 ID", []byte{0xcf, 0, 0, 0, 0, 0, 0, 0, 0x05}, 5},
		{"an int8 ID", []byte{0xd0, 0x05}, 5},
		{"an int16 ID", []byte{0xd1, 0x00, 0x05}, 5},
		{"an int32 ID", []byte{0xd2, 0x00, 0x00, 0x00, 0x05}, 5},
		{"an int64 ID", []byte{0xd3, 0, 0, 0, 0, 0, 0, 0, 0x05}, 5},
		{"an int64 ID of math.MaxInt64", []byte{0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, math.MaxInt64},
		{"a uint64 ID of 2^63", []byte{0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0}, math.MaxInt64 + 1},
		{"a uint64 ID of math.MaxUint64", []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name+" decodes", func(t *testing.T) {
			var got cookie.Token
			if err := got.UnmarshalMsgpack(append(append(bytes.Clone(head), tt.id...), 0xc3)); err != nil || got.ID != tt.want || !got.Verified {
				t.Fatalf("UnmarshalMsgpack = %+v, %v; want ID %d, verified", got, err, tt.want)
			}
		})
	}
}

func TestUnmarshalMsgpackReadsVerified(t *testing.T) {
	// Eight fields in their shortest spelling, then Verified.
	head := []byte{0x99, 1, 2, 3, 4, 5, 6, 0xc2, 8}
	tests := []struct {
		name string
		flag byte
		want bool
	}{
		{"a payload ending in MessagePack false is not verified", 0xc2, false},
		{"a payload ending in MessagePack true is verified", 0xc3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got cookie.Token
			if err := got.UnmarshalMsgpack(append(bytes.Clone(head), tt.flag)); err != nil || got.Verified != tt.want {
				t.Fatalf("UnmarshalMsgpack = %+v, %v; want Verified %v", got, err, tt.want)
			}
			if got.Infinite || got.ID != 8 {
				t.Errorf("UnmarshalMsgpack = %+v; Verified leaked into another field", got)
			}
		})
	}
	t.Run("Verified is the last byte and Infinite does not set it", func(t *testing.T) {
		b, _ := cookie.Token{Infinite: true}.MarshalMsgpack()
		if b[len(b)-1] != 0xc2 {
			t.Errorf("MarshalMsgpack = %x, want it to end in c2 (false)", b)
		}
		b, _ = cookie.Token{Verified: true}.MarshalMsgpack()
		if b[len(b)-1] != 0xc3 || b[len(b)-3] != 0xc2 {
			t.Errorf("MarshalMsgpack = %x, want Infinite false (c2), ID 0, then Verified true (c3)", b)
		}
	})
}

func TestTokenLayoutsAcrossVersions(t *testing.T) {
	nine, _ := queued.MarshalMsgpack()
	ten, _ := arrivedLate.MarshalMsgpack()
	eleven, _ := grouped.MarshalMsgpack()
	tests := []struct {
		name string
		data []byte
		want cookie.Token
	}{
		{"a token without Arrived is the nine elements earlier versions wrote, arriving at its bucket's start", nine, queued},
		{"a token with Arrived is ten elements and keeps it", ten, arrivedLate},
		{"a token with a priority group is eleven elements and keeps both", eleven, grouped},
		{"a twelfth element that is an integer, from a later version, is skipped", withExtraFields(grouped, 1, 0x05), grouped},
		{"later elements that are a uint64, a boolean and nil are skipped", withExtraFields(grouped, 3, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc3, 0xc0), grouped},
		{"later elements after a nine-element token's Arrived of zero and empty group are skipped", withExtraFields(queued, 3, 0x00, 0xa0, 0x01), queued},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got cookie.Token
			if err := got.UnmarshalMsgpack(tt.data); err != nil || got != tt.want {
				t.Fatalf("UnmarshalMsgpack(%x) = %+v, %v; want %+v", tt.data, got, err, tt.want)
			}
		})
	}
	t.Run("the ten-element layout is what msgpack reads, Arrived last", func(t *testing.T) {
		var got []any
		if err := msgpack.Unmarshal(ten, &got); err != nil {
			t.Fatalf("msgpack.Unmarshal: %v", err)
		}
		if len(got) != 10 {
			t.Fatalf("array has %d elements, want 10", len(got))
		}
		if n, ok := asInt64(got[9]); !ok || n != int64(arrivedLate.Arrived) {
			t.Errorf("element 9 = %v, want %d", got[9], arrivedLate.Arrived)
		}
	})
	bad := []struct {
		name string
		data []byte
	}{
		{"a string where a later element belongs is malformed", withExtraFields(grouped, 1, 0xa1, 'x')},
		{"a later element cut short is malformed", withExtraFields(grouped, 1, 0xcd, 0x01)},
		{"sixteen elements are malformed", withExtraFields(grouped, 5, 1, 2, 3, 4, 5)},
		{"a negative Arrived is malformed", append(bytes.Clone(nine[:len(nine):len(nine)]), 0xff)},
	}
	bad[3].data[0]++ // the nine elements plus a tenth, -1
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var got cookie.Token
			if err := got.UnmarshalMsgpack(tt.data); !errors.Is(err, cookie.ErrMalformed) || got != (cookie.Token{}) {
				t.Fatalf("UnmarshalMsgpack(%x) = %+v, %v; want ErrMalformed", tt.data, got, err)
			}
		})
	}
}
