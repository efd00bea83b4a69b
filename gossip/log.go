package gossip

import (
	"bytes"
	"errors"

	"github.com/rs/zerolog"
)

// logWriter turns memberlist's "[LEVEL] memberlist: text" lines into
// zerolog events at the matching level. A line that reports refused traffic
// (no key opens it, another label) goes to refuse instead, when set, which
// counts every such line and logs a few: a stranger's flood must not flood
// the log.
//
// While the node stops, memberlist closes its sockets before it stops its
// own gossip and probe timers, so a round that fires in between fails with
// "use of closed network connection": that line says nothing an operator
// must act on, and goes to debug when stopping (when set) says the node is
// stopping.
type logWriter struct {
	log      zerolog.Logger
	refuse   func(reason string, err error)
	stopping func() bool
}

func (w logWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := zerolog.InfoLevel
	if len(line) > 0 && line[0] == '[' {
		if end := bytes.IndexByte(line, ']'); end > 0 {
			switch string(line[1:end]) {
			case "DEBUG", "TRACE":
				level = zerolog.DebugLevel
			case "WARN":
				level = zerolog.WarnLevel
			case "ERR", "ERROR":
				level = zerolog.ErrorLevel
			}
			line = bytes.TrimSpace(line[end+1:])
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	if w.refuse != nil {
		if reason := classifyMemberlist(line); reason != "" {
			w.refuse(reason, errors.New(string(line)))
			return len(p), nil
		}
	}
	if level > zerolog.DebugLevel && w.stopping != nil && bytes.Contains(line, []byte("use of closed network connection")) && w.stopping() {
		level = zerolog.DebugLevel
	}
	w.log.WithLevel(level).Str("component", "memberlist").Msg(string(line))
	return len(p), nil
}
