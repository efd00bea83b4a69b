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

// AppendLine is the line a log of format f writes for e.
func AppendLine(b []byte, f Format, e *Entry, key []byte) []byte {
	if f == Common {
		return appendCommon(b, e, newVisitorIDs(key))
	}
	return appendJSON(b, e, newVisitorIDs(key))
}
