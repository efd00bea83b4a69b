package cookie

// Fields after the ninth are optional: a token that needs none of them is
// the nine-field array older nodes read, and decoding accepts from nine
// fields up to maxTokenFields. Field 10 is the visitor's arrival offset
// (written as 0 here when a later field is needed and carried no further);
// field 11 is the priority group.
const (
	maxTokenFields = 11
	// maxExtraLen is the longest encoding of fields 10 and 11 as written:
	// a zero and a string of up to MaxCodeGroup bytes with its header.
	maxExtraLen = 1 + 2 + MaxCodeGroup
)

// fields is how many fields t encodes to.
func (t *Token) fields() int {
	if t.Priority != "" {
		return 11
	}
	return tokenFields
}

// appendExtra appends the fields after the ninth that t needs.
func (t *Token) appendExtra(b []byte) []byte {
	if t.fields() < 11 {
		return b
	}
	b = append(b, 0) // field 10
	g := t.Priority
	if len(g) > MaxCodeGroup {
		g = g[:MaxCodeGroup]
	}
	if len(g) < 32 {
		return append(append(b, 0xa0|byte(len(g))), g...) // fixstr
	}
	return append(append(b, 0xd9, byte(len(g))), g...) // str 8
}

// readExtra reads fields 10 to n.
func (t *Token) readExtra(r *payloadReader, n int) {
	if n >= 10 {
		r.int()
	}
	if n >= 11 {
		t.Priority = r.str()
	}
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
