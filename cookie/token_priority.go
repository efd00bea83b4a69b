package cookie

// Field 11, the priority group, is written only when the visitor has one
// (with field 10, the arrival offset, before it even when that is 0), so a
// token without a group is the shorter array older nodes read.

// maxGroupLen is the longest encoding of field 11: a string of up to
// MaxCodeGroup bytes with its header.
const maxGroupLen = 2 + MaxCodeGroup

// fields is how many fields t encodes to.
func (t *Token) fields() int {
	switch {
	case t.Priority != "":
		return 11
	case t.Arrived != 0:
		return 10
	}
	return baseFields
}

// appendGroup appends field 11, the priority group.
func (t *Token) appendGroup(b []byte) []byte {
	g := t.Priority
	if len(g) > MaxCodeGroup {
		g = g[:MaxCodeGroup]
	}
	if len(g) < 32 {
		return append(append(b, 0xa0|byte(len(g))), g...) // fixstr
	}
	return append(append(b, 0xd9, byte(len(g))), g...) // str 8
}

// str reads a MessagePack string of up to MaxCodeGroup bytes.
func (r *payloadReader) str() string {
	p := r.take(1)
	if p == nil {
		return ""
	}
	var n int
	switch c := p[0]; {
	case c&0xe0 == 0xa0: // fixstr
		n = int(c & 0x1f)
	case c == 0xd9: // str 8
		if p = r.take(1); p == nil {
			return ""
		}
		n = int(p[0])
	default:
		r.err = errPayloadNotStr
		return ""
	}
	if n > MaxCodeGroup {
		r.err = errPayloadRange
		return ""
	}
	return string(r.take(n))
}

var errPayloadNotStr = errPayloadNotInt
