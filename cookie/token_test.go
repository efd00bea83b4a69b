package cookie_test

import (
	"bytes"
	"errors"
	"math"
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
	return []any{tok.Bucket, tok.AcceptedAt, tok.LastCheckIn, int64(tok.RefreshInterval), tok.CountedMinute, tok.ExpiresAt, tok.Infinite}
}

var payloadTokens = []struct {
	name  string
	token cookie.Token
}{
	{"a queued token", queued},
	{"an admitted token", admitted},
	{"the zero token", cookie.Token{}},
	{"an infinite-queue token", cookie.Token{Bucket: 29453760, LastCheckIn: 1767225600, RefreshInterval: 30, ExpiresAt: 1767225900, Infinite: true}},
	{"a token of maximal values", cookie.Token{Bucket: math.MaxInt64, AcceptedAt: math.MaxInt64, LastCheckIn: math.MaxInt64, RefreshInterval: math.MaxUint16, CountedMinute: math.MaxInt64, ExpiresAt: math.MaxInt64, Infinite: true}},
	{"a token of minimal values", cookie.Token{Bucket: math.MinInt64, AcceptedAt: math.MinInt64, LastCheckIn: math.MinInt64, CountedMinute: math.MinInt64, ExpiresAt: math.MinInt64}},
	{"a token at every integer width boundary", cookie.Token{Bucket: 127, AcceptedAt: 128, LastCheckIn: -32, RefreshInterval: 256, CountedMinute: -33, ExpiresAt: math.MaxUint32 + 1}},
	{"a token just past the negative width boundaries", cookie.Token{Bucket: math.MinInt8 - 1, AcceptedAt: math.MinInt16 - 1, LastCheckIn: math.MinInt32 - 1, CountedMinute: math.MinInt8, ExpiresAt: math.MinInt16}},
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
			b, err := msgpack.Marshal(fields(tt.token)) // int64 as 9 bytes each
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
		{"an eight-element array is malformed", mp(1, 2, 3, 4, 5, 6, false, 8)},
		{"a truncated payload is malformed", good[:len(good)-1]},
		{"a payload cut inside an integer is malformed", good[:3]},
		{"trailing bytes are malformed", append(bytes.Clone(good), 0xc0)},
		{"a string where an integer belongs is malformed", mp("x", 2, 3, 4, 5, 6, false)},
		{"a float where an integer belongs is malformed", mp(1.5, 2, 3, 4, 5, 6, false)},
		{"nil where an integer belongs is malformed", mp(nil, 2, 3, 4, 5, 6, false)},
		{"an integer where the flag belongs is malformed", mp(1, 2, 3, 4, 5, 6, 1)},
		{"a refresh interval above 65535 is malformed", mp(1, 2, 3, 65536, 5, 6, false)},
		{"a negative refresh interval is malformed", mp(1, 2, 3, -1, 5, 6, false)},
		{"a uint64 above the int64 range is malformed", mp(uint64(math.MaxUint64), 2, 3, 4, 5, 6, false)},
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
	t.Run("a seven-element array16 is accepted", func(t *testing.T) {
		b := append([]byte{0xdc, 0x00, 0x07}, good[1:]...)
		var got cookie.Token
		if err := got.UnmarshalMsgpack(b); err != nil || got != admitted {
			t.Fatalf("UnmarshalMsgpack = %+v, %v", got, err)
		}
	})
}
