package accesslog

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Recorder is a request's ResponseWriter while the access log is on: it
// records what the answer's status and size are in Entry, the line the
// request path fills in (the outcome it decided, the room, the visitor,
// the place in line).
type Recorder struct {
	http.ResponseWriter
	Entry Entry
}

// WriteHeader records the answer's status (the first final one: an
// informational 1xx is not the answer) and passes it on.
func (a *Recorder) WriteHeader(code int) {
	if a.Entry.Status == 0 && code >= 200 {
		a.Entry.Status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

// Write counts the answer's bytes; a body written without a status is a
// 200, as net/http sends it.
func (a *Recorder) Write(b []byte) (int, error) {
	if a.Entry.Status == 0 {
		a.Entry.Status = http.StatusOK
	}
	n, err := a.ResponseWriter.Write(b)
	a.Entry.Bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController (the reverse proxy's flushes and a
// WebSocket's hijack) reach the connection's writer.
func (a *Recorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// Flush passes a flush on (the reverse proxy flushes the origin's answer
// as it comes).
func (a *Recorder) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
		return
	}
	_ = http.NewResponseController(a.ResponseWriter).Flush()
}

// recorders are reused from request to request: the log costs the
// request path no allocation.
var recorders = sync.Pool{New: func() any { return new(Recorder) }}

// Begin starts the line of a request whose answer goes to w: e holds what
// is known before it is answered (the time, the client, what it asked
// for). The request answers through the Recorder, and hands it to End.
func (l *Log) Begin(w http.ResponseWriter, e Entry) *Recorder {
	a := recorders.Get().(*Recorder)
	a.ResponseWriter, a.Entry = w, e
	return a
}

// End hands a's line to the log once its request is answered, at end; the
// caller is done with a then.
func (l *Log) End(a *Recorder, end time.Time) {
	a.Entry.Duration = end.Sub(a.Entry.Time)
	if a.Entry.Status == 0 {
		// Nothing written: net/http answers 200 with no body.
		a.Entry.Status = http.StatusOK
	}
	l.Write(&a.Entry)
	*a = Recorder{}
	recorders.Put(a)
}

// Collectors are the log's metrics, for the node's registry: lines dropped
// because the buffer was full, and lines lost because the file could not
// be written.
func (l *Log) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "access_log_dropped_total",
			Help: "Access log lines dropped because the writer had fallen behind (its buffer was full): the requests were answered, their lines not written.",
		}, func() float64 { return float64(l.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "waitroom", Name: "access_log_failed_total",
			Help: "Access log lines lost because writing them failed (a full disk, a file that could not be opened again after SIGHUP).",
		}, func() float64 { return float64(l.Failed()) }),
	}
}
