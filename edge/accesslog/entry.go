package accesslog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"
	"time"
	"unicode/utf8"
)

// Outcome is what the request path decided for a request.
type Outcome uint8

// The outcomes, as the request path decides them.
const (
	// None: the request was answered before any decision (a panic's
	// answer, or a visitor held for the next allocation who went away).
	None Outcome = iota
	// Admitted: sent on to the origin, a new admission or a visitor within
	// its session.
	Admitted
	// Queued: a queue page (or its JSON) to a visitor who holds a place,
	// counted or back early.
	Queued
	// FirstPage: a new visitor's first queue page.
	FirstPage
	// Bypassed: straight through, uncounted (a bypass rule, a suspended
	// room, a passthrough room).
	Bypassed
	// Refused: turned away (the queue is full, a reject room, an
	// invite-only room without a code, a code that did not work, a client
	// that keeps no cookie, an address with no single meaning).
	Refused
	// Challenge: held by the bot challenge, or in the infinite queue.
	Challenge
	// Stopped: an admitted visitor held by the emergency stop.
	Stopped
	// Unrouted: no room's route matches (a 404, or the default origin).
	Unrouted
)

var outcomeNames = [...]string{
	None:      "none",
	Admitted:  "admitted",
	Queued:    "queued",
	FirstPage: "first_page",
	Bypassed:  "bypassed",
	Refused:   "refused",
	Challenge: "challenge",
	Stopped:   "stopped",
	Unrouted:  "unrouted",
}

// String is the outcome as a line writes it.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "none"
}

// Entry is one request, as the node hands it over. It holds no secret:
// Visitor is the token's id, which Log writes only as a keyed hash.
type Entry struct {
	Time    time.Time
	Node    string
	Room    string // "" for no room
	Outcome Outcome
	// Visitor is the id of the visitor's token (0: none, such as a
	// bypassed request).
	Visitor uint64
	// Bucket is a queued visitor's arrival bucket (unix minute; 0: not
	// queued), and Position its place in line when one is known.
	Bucket        int64
	Position      int64
	PositionKnown bool
	Status        int
	Bytes         int64
	Duration      time.Duration
	// Client is the client's address as the node takes it.
	Client string
	// Method, Host and Path are the request's; Path is the address's
	// path alone, escaped, never its query.
	Method, Host, Path, Proto string
	// ForwardAuth says the request was decided for a proxy in front,
	// through the forward-auth endpoint.
	ForwardAuth bool
}

// visitorIDs turns a token's id into the id a line shows: a keyed hash,
// the same on every node with the same key, from which neither the token's
// id nor its cookie can be learnt.
// Only one goroutine may use one (the log's writer); it reuses its hash
// and buffers from line to line.
type visitorIDs struct {
	mac hash.Hash
	in  [8]byte
	sum []byte
}

func newVisitorIDs(key []byte) *visitorIDs {
	return &visitorIDs{mac: hmac.New(sha256.New, key), sum: make([]byte, 0, sha256.Size)}
}

func (v *visitorIDs) append(b []byte, id uint64) []byte {
	binary.LittleEndian.PutUint64(v.in[:], id)
	v.mac.Reset()
	v.mac.Write(v.in[:])
	v.sum = v.mac.Sum(v.sum[:0])
	return hex.AppendEncode(b, v.sum[:8])
}

// appendJSON appends e as one JSON object and a newline.
func appendJSON(b []byte, e *Entry, ids *visitorIDs) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","node":`...)
	b = appendJSONString(b, e.Node)
	if e.Room != "" {
		b = append(b, `,"room":`...)
		b = appendJSONString(b, e.Room)
	}
	b = append(b, `,"outcome":"`...)
	b = append(b, e.Outcome.String()...)
	b = append(b, '"')
	if e.Visitor != 0 {
		b = append(b, `,"visitor":"`...)
		b = ids.append(b, e.Visitor)
		b = append(b, '"')
	}
	if e.Bucket != 0 {
		b = append(b, `,"bucket":"`...)
		b = time.Unix(e.Bucket*60, 0).UTC().AppendFormat(b, "2006-01-02T15:04Z07:00")
		b = append(b, '"')
		if e.PositionKnown {
			b = append(b, `,"position":`...)
			b = strconv.AppendInt(b, e.Position, 10)
		}
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64)
	if e.Client != "" {
		b = append(b, `,"client":`...)
		b = appendJSONString(b, e.Client)
	}
	b = append(b, `,"method":`...)
	b = appendJSONString(b, e.Method)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, e.Host)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, e.Path)
	if e.ForwardAuth {
		b = append(b, `,"forward_auth":true`...)
	}
	return append(b, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: control characters, quotes
// and backslashes escaped, invalid UTF-8 replaced, so that a line is
// valid JSON whatever a request carried.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but not valid JavaScript: escaped for the tools
			// that read a line as such.
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendCommon appends e in the common log format (client, identity and
// user, time, request line, status, bytes) and waitroom's fields after it
// as key=value pairs, so that tools that read the common format read the
// first part:
//
//	127.0.0.1 - - [06/Dec/2026:14:00:00 +0000] "GET /shop HTTP/1.1" 200 5120 node=a room=shop outcome=queued visitor=… bucket=… position=12 duration_ms=0.412 host="shop.example"
func appendCommon(b []byte, e *Entry, ids *visitorIDs) []byte {
	b = appendToken(b, e.Client)
	b = append(b, " - - ["...)
	b = e.Time.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
	b = append(b, `] "`...)
	b = appendEscaped(b, e.Method)
	b = append(b, ' ')
	b = appendEscaped(b, e.Path)
	if e.Proto != "" {
		b = append(b, ' ')
		b = appendEscaped(b, e.Proto)
	}
	b = append(b, `" `...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	if e.Bytes > 0 {
		b = strconv.AppendInt(b, e.Bytes, 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, " node="...)
	b = appendToken(b, e.Node)
	b = append(b, " room="...)
	b = appendToken(b, e.Room)
	b = append(b, " outcome="...)
	b = append(b, e.Outcome.String()...)
	if e.Visitor != 0 {
		b = append(b, " visitor="...)
		b = ids.append(b, e.Visitor)
	}
	if e.Bucket != 0 {
		b = append(b, " bucket="...)
		b = time.Unix(e.Bucket*60, 0).UTC().AppendFormat(b, "2006-01-02T15:04Z07:00")
		if e.PositionKnown {
			b = append(b, " position="...)
			b = strconv.AppendInt(b, e.Position, 10)
		}
	}
	b = append(b, " duration_ms="...)
	b = strconv.AppendFloat(b, float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, ` host="`...)
	b = appendEscaped(b, e.Host)
	b = append(b, '"')
	if e.ForwardAuth {
		b = append(b, " forward_auth=true"...)
	}
	return append(b, '\n')
}

// appendToken appends s where the common format has an unquoted field:
// "-" for nothing, and any byte that could split the field escaped.
func appendToken(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c >= 0x7f {
			return appendEscaped(b, s)
		}
	}
	return append(b, s...)
}

// appendEscaped appends s with quotes, backslashes, spaces in tokens and
// every byte outside printable ASCII written as \xHH, as nginx escapes its
// log's variables: one line stays one line, and a quoted field stays one
// field.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '"' || c == '\\' || c >= 0x7f {
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return b
}
