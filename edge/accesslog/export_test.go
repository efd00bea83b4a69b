package accesslog

import "io"

// OpenWriter starts a log that writes to w, for the tests that must stall
// or break the writer.
func OpenWriter(w io.Writer, o Options) *Log {
	l := newLog("", o)
	l.out = w
	go l.run()
	return l
}

// Liner formats lines as a log's writer does, with the visitor key given.
type Liner struct{ ids *visitorIDs }

// NewLiner is a Liner for key.
func NewLiner(key []byte) *Liner { return &Liner{newVisitorIDs(key)} }

// Append appends the line a log of format f writes for e.
func (l *Liner) Append(b []byte, f Format, e *Entry) []byte {
	if f == Common {
		return appendCommon(b, e, l.ids)
	}
	return appendJSON(b, e, l.ids)
}

// AppendLine is the line a log of format f writes for e.
func AppendLine(b []byte, f Format, e *Entry, key []byte) []byte {
	return NewLiner(key).Append(b, f, e)
}
