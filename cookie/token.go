package cookie

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Token is the visitor's state, sealed into the cookie.
type Token struct {
	Bucket          int64  // arrival bucket: unix minute (unix seconds / 60) of the first request
	AcceptedAt      int64  // unix seconds when admitted; 0 while queued
	LastCheckIn     int64  // unix seconds of the last counted request/check-in
	RefreshInterval uint16 // seconds until the next check-in counts (jittered per check-in)
	CountedMinute   int64  // where the visitor is counted: queued, the unix minute of its waiting cell; admitted, the expiry second of its session cell; 0 = not counted
	ExpiresAt       int64  // unix seconds; the server checks this, never trusting the browser's cookie expiry
	Infinite        bool   // flagged for the infinite queue (bots)
	ID              uint64 // random per visitor, drawn at the first request: orders a shuffled pre-queue
	Verified        bool   // the visitor solved the room's bot challenge
	// Arrived is when, inside its arrival bucket, the visitor came: tenths
	// of a second since the bucket's minute began, by the ring's time
	// (0..599). It orders visitors of one bucket. A token written before
	// it existed reads as 0, the bucket's start.
	Arrived uint16
	// Priority is field 11: the room's priority group a code admitted the
	// visitor to, "" for none (see token_priority.go).
	Priority string
}

// Admitted reports whether the visitor has been let through to the origin.
func (t Token) Admitted() bool { return t.AcceptedAt != 0 }

// Token layout: a MessagePack array of the fields in declaration order.
// baseFields is the layout before Arrived, which a token whose Arrived is 0
// still uses (so tokens of earlier versions and new ones without the field
// are the same bytes); tokenFields is the longest this version writes. A
// decoder reads arrays of baseFields up to maxFields elements, skipping the
// scalar fields it does not know, so a token of a later version with more
// fields still opens here.
const (
	baseFields  = 9
	tokenFields = 11
	maxFields   = 15
)

// maxPayloadLen is the longest payload appendPayload writes: the array
// header, five int64s of up to 9 bytes, a uint16 of up to 3, a bool
// (Infinite), a uint64 of up to 9, a bool (Verified) and a uint16 of up to
// 3 (Arrived).
const maxPayloadLen = 1 + 5*9 + 3 + 1 + 9 + 1 + 3 + maxGroupLen

// MarshalMsgpack returns the token's MessagePack encoding, the plaintext that
// [Keyring.Seal] encrypts (see the package documentation). It implements
// msgpack.Marshaler without importing a MessagePack library.
func (t Token) MarshalMsgpack() ([]byte, error) {
	return t.appendPayload(make([]byte, 0, maxPayloadLen)), nil
}

// UnmarshalMsgpack decodes what [Token.MarshalMsgpack] writes. It accepts any
// MessagePack integer encoding that fits the field and only a boolean for
// Infinite and Verified: the data must be exactly one array of 9 to 15
// elements, of which those after Arrived are integers, booleans or nil.
// Errors wrap [ErrMalformed].
// It implements msgpack.Unmarshaler.
func (t *Token) UnmarshalMsgpack(data []byte) error {
	v, err := decodePayload(data)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// appendPayload appends the fixed MessagePack array, its fields (compact
// integers and booleans) first to last in field order, without reflection or
// allocation.
func (t *Token) appendPayload(b []byte) []byte {
	n := t.fields()
	b = append(b, 0x90|byte(n)) // fixarray
	b = appendInt(b, t.Bucket)
	b = appendInt(b, t.AcceptedAt)
	b = appendInt(b, t.LastCheckIn)
	b = appendUint(b, uint64(t.RefreshInterval))
	b = appendInt(b, t.CountedMinute)
	b = appendInt(b, t.ExpiresAt)
	if t.Infinite {
		b = append(b, 0xc3)
	} else {
		b = append(b, 0xc2)
	}
	b = appendUint(b, t.ID)
	if t.Verified {
		b = append(b, 0xc3)
	} else {
		b = append(b, 0xc2)
	}
	if n > baseFields {
		b = appendUint(b, uint64(t.Arrived))
	}
	if n > 10 {
		b = t.appendGroup(b)
	}
	return b
}

// appendUint writes n in the smallest MessagePack encoding, as msgpack's
// Encoder.EncodeUint does.
func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n)) // positive fixint
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
	}
}

// appendInt writes n in the smallest MessagePack encoding, as msgpack's
// Encoder.EncodeInt does.
func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n)) // negative fixint
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
	}
}

// Payload errors. They are built once so that rejecting garbage, which a
// waiting room under attack does a lot of, costs no allocation.
var (
	errPayloadHeader   = fmt.Errorf("cookie: payload is not an array of %d to %d elements: %w", baseFields, maxFields, ErrMalformed)
	errPayloadUnknown  = fmt.Errorf("cookie: payload field after the known ones is not a scalar: %w", ErrMalformed)
	errPayloadShort    = fmt.Errorf("cookie: payload truncated: %w", ErrMalformed)
	errPayloadNotInt   = fmt.Errorf("cookie: payload field is not an integer: %w", ErrMalformed)
	errPayloadRange    = fmt.Errorf("cookie: payload integer out of range: %w", ErrMalformed)
	errPayloadNotBool  = fmt.Errorf("cookie: payload flag is not a boolean: %w", ErrMalformed)
	errPayloadTrailing = fmt.Errorf("cookie: trailing bytes after payload: %w", ErrMalformed)
)

// decodePayload reads a token from its MessagePack array. It never panics:
// every read is bounds-checked by the payloadReader.
func decodePayload(data []byte) (Token, error) {
	r := payloadReader{b: data}
	n, ok := r.arrayLen()
	if !ok || n < baseFields || n > maxFields {
		if !ok && r.err != nil {
			return Token{}, r.err
		}
		return Token{}, errPayloadHeader
	}
	var t Token
	t.Bucket = r.int()
	t.AcceptedAt = r.int()
	t.LastCheckIn = r.int()
	ri := r.int()
	if r.err == nil && (ri < 0 || ri > math.MaxUint16) {
		r.err = errPayloadRange
	}
	t.RefreshInterval = uint16(ri)
	t.CountedMinute = r.int()
	t.ExpiresAt = r.int()
	t.Infinite = r.bool()
	t.ID = r.uint()
	t.Verified = r.bool()
	if n > baseFields {
		a := r.int()
		if r.err == nil && (a < 0 || a > math.MaxUint16) {
			r.err = errPayloadRange
		}
		t.Arrived = uint16(a)
	}
	if n > 10 {
		t.Priority = r.str()
	}
	for range n - tokenFields {
		r.skip()
	}
	if r.err != nil {
		return Token{}, r.err
	}
	if len(r.b) != 0 {
		return Token{}, errPayloadTrailing
	}
	return t, nil
}

// payloadReader consumes MessagePack values from b. After the first error it
// returns zero values and keeps the error.
type payloadReader struct {
	b   []byte
	err error
}

// take returns the next n bytes, or nil and records errPayloadShort.
func (r *payloadReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = errPayloadShort
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *payloadReader) arrayLen() (int, bool) {
	p := r.take(1)
	if p == nil {
		return 0, false
	}
	switch c := p[0]; {
	case c&0xf0 == 0x90: // fixarray
		return int(c & 0x0f), true
	case c == 0xdc: // array 16
		if p = r.take(2); p != nil {
			return int(binary.BigEndian.Uint16(p)), true
		}
	case c == 0xdd: // array 32
		if p = r.take(4); p != nil {
			n := binary.BigEndian.Uint32(p)
			if n > math.MaxInt32 {
				return math.MaxInt32, true // certainly wrong, but never negative
			}
			return int(n), true
		}
	}
	return 0, false
}

// int reads any MessagePack integer that fits an int64.
func (r *payloadReader) int() int64 {
	p := r.take(1)
	if p == nil {
		return 0
	}
	c := p[0]
	switch {
	case c <= 0x7f: // positive fixint
		return int64(c)
	case c >= 0xe0: // negative fixint
		return int64(int8(c))
	}
	switch c {
	case 0xcc:
		if p = r.take(1); p != nil {
			return int64(p[0])
		}
	case 0xcd:
		if p = r.take(2); p != nil {
			return int64(binary.BigEndian.Uint16(p))
		}
	case 0xce:
		if p = r.take(4); p != nil {
			return int64(binary.BigEndian.Uint32(p))
		}
	case 0xcf:
		if p = r.take(8); p != nil {
			n := binary.BigEndian.Uint64(p)
			if n > math.MaxInt64 {
				r.err = errPayloadRange
				return 0
			}
			return int64(n)
		}
	case 0xd0:
		if p = r.take(1); p != nil {
			return int64(int8(p[0]))
		}
	case 0xd1:
		if p = r.take(2); p != nil {
			return int64(int16(binary.BigEndian.Uint16(p)))
		}
	case 0xd2:
		if p = r.take(4); p != nil {
			return int64(int32(binary.BigEndian.Uint32(p)))
		}
	case 0xd3:
		if p = r.take(8); p != nil {
			return int64(binary.BigEndian.Uint64(p))
		}
	default:
		r.err = errPayloadNotInt
	}
	return 0
}

// uint reads a non-negative integer that may use the full uint64 range.
func (r *payloadReader) uint() uint64 {
	if len(r.b) > 0 && r.b[0] == 0xcf {
		r.take(1)
		if p := r.take(8); p != nil {
			return binary.BigEndian.Uint64(p)
		}
		return 0
	}
	v := r.int()
	if v < 0 && r.err == nil {
		r.err = errPayloadRange
		return 0
	}
	return uint64(v)
}

// skip reads one field of a later version: any integer, a boolean or nil.
func (r *payloadReader) skip() {
	if r.err != nil {
		return
	}
	if len(r.b) > 0 {
		switch r.b[0] {
		case 0xc0, 0xc2, 0xc3: // nil, false, true
			r.take(1)
			return
		case 0xcf:
			r.uint()
			return
		}
	}
	r.int()
	if r.err == errPayloadNotInt {
		r.err = errPayloadUnknown
	}
}

func (r *payloadReader) bool() bool {
	p := r.take(1)
	if p == nil {
		return false
	}
	switch p[0] {
	case 0xc2:
		return false
	case 0xc3:
		return true
	}
	r.err = errPayloadNotBool
	return false
}

// Sentinel errors. Every error from [Keyring.Open] and [Token.UnmarshalMsgpack]
// wraps exactly one of them.
var (
	// ErrMalformed: the value is not a token this package could have
	// written (bad base64, unknown version, truncated, bad payload).
	ErrMalformed = errors.New("malformed token")
	// ErrUnknownKey: the token names a key id the keyring does not hold
	// (sealed under a key since removed, or forged).
	ErrUnknownKey = errors.New("unknown key id")
	// ErrAuth: the token failed authentication: tampered with, sealed
	// for another room, or sealed under another secret with the same id.
	ErrAuth = errors.New("token authentication failed")
	// ErrExpired: the token opened but its ExpiresAt is in the past.
	ErrExpired = errors.New("token expired")
	// ErrTooLarge: the value is longer than MaxValueLen.
	ErrTooLarge = errors.New("token too large")
)
