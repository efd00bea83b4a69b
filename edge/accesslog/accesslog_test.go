package accesslog_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/quick"
	"time"
	"unicode/utf8"

	"github.com/waitroom/waitroom/edge/accesslog"
)

var key = []byte("a cookie key's derived access-log key")

func queuedEntry() accesslog.Entry {
	return accesslog.Entry{
		Time: time.Date(2026, 12, 6, 14, 0, 5, 123e6, time.UTC), Node: "a", Room: "shop",
		Outcome: accesslog.Queued, Visitor: 0xdeadbeef, Bucket: time.Date(2026, 12, 6, 13, 58, 0, 0, time.UTC).Unix() / 60,
		Position: 12, PositionKnown: true, Status: 200, Bytes: 5120, Duration: 412 * time.Microsecond,
		Client: "192.0.2.7", Method: "GET", Host: "shop.example", Path: "/tickets", Proto: "HTTP/1.1",
	}
}

func TestALineSaysWhatBecameOfTheRequest(t *testing.T) {
	admitted := queuedEntry()
	admitted.Outcome, admitted.Bucket, admitted.PositionKnown, admitted.Position = accesslog.Admitted, 0, false, 0
	forward := admitted
	forward.ForwardAuth = true
	for _, tc := range []struct {
		name   string
		format accesslog.Format
		e      accesslog.Entry
		want   string
	}{
		{"a queued visitor's JSON line has its bucket and place in line", accesslog.JSON, queuedEntry(),
			`{"time":"2026-12-06T14:00:05.123Z","node":"a","room":"shop","outcome":"queued","visitor":"VISITOR","bucket":"2026-12-06T13:58Z","position":12,"status":200,"bytes":5120,"duration_ms":0.412,"client":"192.0.2.7","method":"GET","host":"shop.example","path":"/tickets"}` + "\n"},
		{"an admitted visitor's JSON line has neither", accesslog.JSON, admitted,
			`{"time":"2026-12-06T14:00:05.123Z","node":"a","room":"shop","outcome":"admitted","visitor":"VISITOR","status":200,"bytes":5120,"duration_ms":0.412,"client":"192.0.2.7","method":"GET","host":"shop.example","path":"/tickets"}` + "\n"},
		{"a forward-auth answer says so", accesslog.JSON, forward,
			`{"time":"2026-12-06T14:00:05.123Z","node":"a","room":"shop","outcome":"admitted","visitor":"VISITOR","status":200,"bytes":5120,"duration_ms":0.412,"client":"192.0.2.7","method":"GET","host":"shop.example","path":"/tickets","forward_auth":true}` + "\n"},
		{"the common format starts as every proxy's and carries waitroom's fields after it", accesslog.Common, queuedEntry(),
			`192.0.2.7 - - [06/Dec/2026:14:00:05 +0000] "GET /tickets HTTP/1.1" 200 5120 node=a room=shop outcome=queued visitor=VISITOR bucket=2026-12-06T13:58Z position=12 duration_ms=0.412 host="shop.example"` + "\n"},
		{"an unrouted request in the common format has no room and no client", accesslog.Common, accesslog.Entry{Time: admitted.Time, Node: "a", Outcome: accesslog.Unrouted, Status: 404, Method: "GET", Host: "other.example", Path: "/"},
			`- - - [06/Dec/2026:14:00:05 +0000] "GET /" 404 - node=a room=- outcome=unrouted duration_ms=0.000 host="other.example"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(accesslog.AppendLine(nil, tc.format, &tc.e, key))
			id := visitorID(t, tc.format, got)
			if want := strings.Replace(tc.want, "VISITOR", id, 1); got != want {
				t.Errorf("line:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// visitorID is the visitor id a line shows ("" without one).
func visitorID(t *testing.T, f accesslog.Format, line string) string {
	t.Helper()
	if f == accesslog.JSON {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %v: %s", err, line)
		}
		s, _ := m["visitor"].(string)
		return s
	}
	_, after, ok := strings.Cut(line, " visitor=")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(after, " ")
	return id
}

func TestTheVisitorIDFollowsAVisitorAndHidesItsToken(t *testing.T) {
	e := queuedEntry()
	first := visitorID(t, accesslog.JSON, string(accesslog.AppendLine(nil, accesslog.JSON, &e, key)))
	t.Run("two nodes with the same key write the same id for the same token", func(t *testing.T) {
		other := e
		other.Node, other.Outcome = "b", accesslog.Admitted
		if got := visitorID(t, accesslog.JSON, string(accesslog.AppendLine(nil, accesslog.JSON, &other, key))); got != first {
			t.Errorf("node b wrote %q, node a %q", got, first)
		}
	})
	t.Run("the id is not the token's", func(t *testing.T) {
		if strings.Contains(first, "deadbeef") || len(first) != 16 {
			t.Errorf("visitor id %q shows the token's id or is not 16 hex digits", first)
		}
	})
	t.Run("another key gives another id", func(t *testing.T) {
		if got := visitorID(t, accesslog.JSON, string(accesslog.AppendLine(nil, accesslog.JSON, &e, []byte("another ring")))); got == first {
			t.Errorf("two keys gave the same id %q", got)
		}
	})
}

// randomEntry is an entry whose strings are anything a request may carry:
// control characters, quotes, backslashes, invalid UTF-8, line breaks.
func randomEntry(r *rand.Rand) accesslog.Entry {
	str := func() string {
		b := make([]byte, r.IntN(24))
		for i := range b {
			switch r.IntN(4) {
			case 0:
				b[i] = byte(r.IntN(0x20))
			case 1:
				b[i] = `"\{}[],: `[r.IntN(9)]
			case 2:
				b[i] = byte(0x80 + r.IntN(0x80))
			default:
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		s := string(b)
		if r.IntN(4) == 0 {
			s += "\u2028é\u2029"
		}
		return s
	}
	return accesslog.Entry{
		Time: time.Unix(r.Int64N(4e9), r.Int64N(1e9)), Node: str(), Room: str(),
		Outcome: accesslog.Outcome(r.IntN(10)), Visitor: r.Uint64(), Bucket: r.Int64N(1e8),
		Position: r.Int64N(1e6), PositionKnown: r.IntN(2) == 0, Status: r.IntN(600),
		Bytes: r.Int64N(1e9), Duration: time.Duration(r.Int64N(1e11)),
		Client: str(), Method: str(), Host: str(), Path: str(), Proto: str(), ForwardAuth: r.IntN(2) == 0,
	}
}

func TestEveryLineIsOneLineAndValidWhateverTheRequestCarried(t *testing.T) {
	t.Run("a JSON line is always one valid JSON object that gives back the request's strings", func(t *testing.T) {
		check := func(seed uint64) bool {
			e := randomEntry(rand.New(rand.NewPCG(seed, 1)))
			line := accesslog.AppendLine(nil, accesslog.JSON, &e, key)
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Logf("not one line: %q", line)
				return false
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Logf("%v: %q", err, line)
				return false
			}
			if utf8.ValidString(e.Path) && m["path"] != e.Path {
				t.Logf("path %q came back as %q", e.Path, m["path"])
				return false
			}
			return m["outcome"] == e.Outcome.String()
		}
		if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
			t.Error(err)
		}
	})
	t.Run("a common-format line is always one line of printable ASCII, its request line one quoted field", func(t *testing.T) {
		check := func(seed uint64) bool {
			e := randomEntry(rand.New(rand.NewPCG(seed, 2)))
			line := accesslog.AppendLine(nil, accesslog.Common, &e, key)
			body := line[:len(line)-1]
			for _, c := range body {
				if c < ' ' || c >= 0x7f {
					t.Logf("byte %#x in %q", c, line)
					return false
				}
			}
			// The client is one field, then "- - [time]", then the
			// request line between the only two quotes before the status.
			fields := strings.SplitN(string(body), " ", 2)
			if len(fields) != 2 || !strings.HasPrefix(fields[1], "- - [") {
				t.Logf("client is not one field: %q", line)
				return false
			}
			if n := strings.Count(string(body), `"`); n != 4 {
				t.Logf("%d quotes in %q", n, line)
				return false
			}
			return line[len(line)-1] == '\n'
		}
		if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
			t.Error(err)
		}
	})
}

func TestALogReopensItsFileAfterLogrotateMovedIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, err := accesslog.Open(path, accesslog.Options{VisitorKey: key})
	if err != nil {
		t.Fatal(err)
	}
	e := queuedEntry()
	l.Write(&e)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	e.Path = "/after"
	l.Write(&e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, path string }{
		{"the line before the reopen is in the moved file", path + ".1", `"path":"/tickets"`},
		{"the line after it is in a new file at the same path", path, `"path":"/after"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(b, []byte("\n")) != 1 || !bytes.Contains(b, []byte(tc.path)) {
				t.Errorf("%s holds %q, want one line with %s", tc.file, b, tc.path)
			}
		})
	}
}

// stalled is a destination that does not take a write until it is let go:
// a disk that stalls.
type stalled struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	got     bytes.Buffer
}

func (s *stalled) Write(b []byte) (int, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(b)
}

func TestAFullBufferDropsLinesAndCountsThemWithoutWaiting(t *testing.T) {
	w := &stalled{entered: make(chan struct{}), release: make(chan struct{})}
	l := accesslog.OpenWriter(w, accesslog.Options{Buffer: 2})
	e := queuedEntry()
	l.Write(&e)
	<-w.entered // the writer holds the first line, stuck in its write
	for range 5 {
		l.Write(&e) // two wait in the buffer, three are dropped
	}
	if got := l.Dropped(); got != 3 {
		t.Errorf("dropped = %d, want 3", got)
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(w.got.Bytes(), []byte("\n")); n != 3 {
		t.Errorf("%d lines written, want the 3 that were not dropped", n)
	}
}

// failing is a destination whose writes fail: a full disk.
type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestLinesThatCannotBeWrittenAreCountedAsFailed(t *testing.T) {
	l := accesslog.OpenWriter(failing{}, accesslog.Options{})
	e := queuedEntry()
	l.Write(&e)
	l.Write(&e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := l.Failed(); got != 2 {
		t.Errorf("failed = %d, want 2", got)
	}
}

// panicking is a destination whose first write panics.
type panicking struct {
	n   int
	got bytes.Buffer
}

func (p *panicking) Write(b []byte) (int, error) {
	p.n++
	if p.n == 1 {
		panic("a broken writer")
	}
	return p.got.Write(b)
}

func TestTheWriterLivesThroughAPanic(t *testing.T) {
	p := &panicking{}
	var panics []any
	l := accesslog.OpenWriter(p, accesslog.Options{OnPanic: func(v any, _ []byte) { panics = append(panics, v) }})
	e := queuedEntry()
	l.Write(&e)
	// The first line's write panics, whether the ticker or the reopen
	// below writes it; the writer then runs again.
	_ = l.Reopen()
	l.Write(&e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(panics) != 1 {
		t.Errorf("panics reported: %v, want one", panics)
	}
	if n := bytes.Count(p.got.Bytes(), []byte("\n")); n != 1 {
		t.Errorf("%d lines written after the panic, want 1", n)
	}
}

func TestAnAccessLogFormatIsJSONOrCommon(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want accesslog.Format
		ok   bool
	}{{"", accesslog.JSON, true}, {"json", accesslog.JSON, true}, {"common", accesslog.Common, true}, {"clf", 0, false}, {"JSON", 0, false}} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := accesslog.ParseFormat(tc.in)
			if (err == nil) != tc.ok || (tc.ok && f != tc.want) {
				t.Errorf("ParseFormat(%q) = %v, %v", tc.in, f, err)
			}
		})
	}
}

// BenchmarkLine is the writer's work for one request: the line formatted,
// the visitor's id hashed (the request path only hands over the entry).
func BenchmarkLine(b *testing.B) {
	for _, f := range []struct {
		name string
		f    accesslog.Format
	}{{"json", accesslog.JSON}, {"common", accesslog.Common}} {
		b.Run(f.name, func(b *testing.B) {
			e := queuedEntry()
			l := accesslog.NewLiner(key)
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				buf = l.Append(buf[:0], f.f, &e)
			}
		})
	}
}
