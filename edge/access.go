package edge

import (
	"fmt"
	"net/http"

	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/clientaddr"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/queuepage"
)

// The access log (access_log): one line per request the node answers, with
// what the request path decided for it. The request path's part is small
// and in one place: ServeHTTP and the forward-auth endpoint begin a line
// (beginAccess) and hand it to the log when the answer is written
// (endAccess), and each step that decides a request names its outcome
// (decided), where it counts it in the metrics. Formatting and writing are
// the log's writer goroutine's (package accesslog): a request never waits
// for the disk.

// openAccessLog opens the access log cfg names, if any, with its metrics:
// lines dropped because the buffer was full, and lines lost because the
// file could not be written (accesslog.Log.Collectors).
func (s *Server) openAccessLog(cfg *config.Config) error {
	if cfg.AccessLog == "" {
		return nil
	}
	format, err := accesslog.ParseFormat(cfg.AccessLogFormat)
	if err != nil {
		return fmt.Errorf("access_log_format: %w", err)
	}
	l, err := accesslog.Open(cfg.AccessLog, accesslog.Options{
		Format: format,
		// Every node of a ring seals with the same cookie key, so a
		// visitor has the same id in every node's log.
		VisitorKey: s.keys.Derive("waitroom access log visitor"),
		OnPanic:    func(p any, stack []byte) { s.panicked("access_log", "", p, stack, true) },
	})
	if err != nil {
		return fmt.Errorf("access_log %q: %w", cfg.AccessLog, err)
	}
	s.access = l
	s.metrics.reg.MustRegister(l.Collectors()...)
	return nil
}

// closeAccessLog writes the access log's buffered lines and closes it.
func (s *Server) closeAccessLog() {
	if s.access != nil {
		_ = s.access.Close()
	}
}

// ReopenAccessLog opens the access log's file again, after logrotate has
// moved it away (edge/agent calls it on SIGHUP). Without an access log it
// does nothing.
func (s *Server) ReopenAccessLog() error {
	if s.access == nil {
		return nil
	}
	return s.access.Reopen()
}

// beginAccess starts the line of a request: what it asked for, from whom
// (clientaddr.Of, the one reading of a request's client address) and when.
func (s *Server) beginAccess(w http.ResponseWriter, r *http.Request) *accesslog.Recorder {
	return s.access.Begin(w, accesslog.Entry{
		Time: s.clock(), Node: s.cfg.Node, Client: clientaddr.Of(r),
		// The path alone: a query may carry a code or a token.
		Method: r.Method, Host: r.Host, Path: r.URL.EscapedPath(), Proto: r.Proto,
	})
}

// endAccess hands a request's line to the log once it is answered; the
// request path is done with a then.
func (s *Server) endAccess(a *accesslog.Recorder) { s.access.End(a, s.clock()) }

// decided names the outcome of the request w answers, in room rm (nil for
// none) for visitor (a token's id, 0 for none), for its access-log line.
// It does nothing while the access log is off.
func decided(w http.ResponseWriter, rm *room, o accesslog.Outcome, visitor uint64) {
	if a, ok := w.(*accesslog.Recorder); ok {
		a.Entry.Outcome, a.Entry.Visitor = o, visitor
		if rm != nil {
			a.Entry.Room = rm.name
		}
	}
}

// decided names the request's outcome for its access-log line.
func (rq *request) decided(o accesslog.Outcome) { decided(rq.w, rq.rm, o, rq.tok.ID) }

// placed records a waiting visitor's arrival bucket and its place in line
// as its page shows them, for its access-log line.
func placed(w http.ResponseWriter, bucket int64, v *queuepage.Vars) {
	if a, ok := w.(*accesslog.Recorder); ok {
		a.Entry.Bucket, a.Entry.Position, a.Entry.PositionKnown = bucket, v.Position, v.PositionKnown
	}
}
