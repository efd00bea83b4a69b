package accesslog_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/edge/accesslog"
)

// endedLine is the JSON line a log writes for a request answered by
// answer through a Recorder that began at t0 and ended at t0+took.
func endedLine(t *testing.T, answer func(w http.ResponseWriter), took time.Duration) map[string]any {
	t.Helper()
	var out bytes.Buffer
	l := accesslog.OpenWriter(&out, accesslog.Options{VisitorKey: key})
	t0 := time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC)
	a := l.Begin(httptest.NewRecorder(), accesslog.Entry{Time: t0, Method: "GET", Path: "/"})
	answer(a)
	l.End(a, t0.Add(took))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("line %q: %v", out.String(), err)
	}
	return m
}

func TestARecorderWritesTheAnswersStatusAndSizeInItsLine(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
		status float64
		bytes  float64
	}{
		{"an answer with nothing written is a 200 with no body", func(http.ResponseWriter) {}, 200, 0},
		{"a body without a status is a 200 of its size", func(w http.ResponseWriter) { _, _ = w.Write([]byte("hello")) }, 200, 5},
		{"the status written is the status logged", func(w http.ResponseWriter) { w.WriteHeader(503); _, _ = w.Write([]byte("busy")) }, 503, 4},
		{"an informational status is not the answer", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(302) }, 302, 0},
		{"the bytes of every write add up", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte("ab"))
			_, _ = w.Write([]byte("cde"))
		}, 200, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := endedLine(t, tc.answer, 3*time.Millisecond)
			if m["status"] != tc.status || m["bytes"] != tc.bytes {
				t.Errorf("status %v bytes %v, want %v %v (line %v)", m["status"], m["bytes"], tc.status, tc.bytes, m)
			}
			if m["duration_ms"] != 3.0 {
				t.Errorf("duration_ms %v, want the 3 ms from Begin's time to End's", m["duration_ms"])
			}
		})
	}
}

func TestARecorderPassesFlushesOnAndUnwrapsToTheConnectionsWriter(t *testing.T) {
	l := accesslog.OpenWriter(&bytes.Buffer{}, accesslog.Options{})
	defer l.Close()
	rec := httptest.NewRecorder()
	a := l.Begin(rec, accesslog.Entry{})
	a.Flush()
	if !rec.Flushed {
		t.Error("a flush did not reach the connection's writer")
	}
	if a.Unwrap() != rec {
		t.Error("Unwrap is not the connection's writer")
	}
	l.End(a, time.Time{})
}

func TestTheLogsCollectorsCountDroppedAndFailedLines(t *testing.T) {
	l := accesslog.OpenWriter(failing{}, accesslog.Options{})
	e := queuedEntry()
	l.Write(&e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	want := map[string]float64{"waitroom_access_log_dropped_total": 0, "waitroom_access_log_failed_total": 1}
	if len(got) != len(want) || got["waitroom_access_log_dropped_total"] != 0 || got["waitroom_access_log_failed_total"] != 1 {
		t.Errorf("metrics %v, want %v (the one line that could not be written is failed)", got, want)
	}
}
