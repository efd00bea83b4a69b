// Package dashboard serves the operator's console on the admin listener: one
// page (plain HTML, JavaScript and SVG, embedded in the binary, nothing to
// build) that shows the whole ring as the node's merged state sees it and
// updates itself from a stream of server-sent events.
//
// The package knows nothing of how a room decides: the node hands it a
// frame (any JSON document: the state document with what the console adds)
// and a history of samples it records as its allocation loop runs. What
// the console changes (emergency stop, queue_all, limits) it changes
// through the node's admin API, from the browser, with the operator's token:
// the page itself holds no data and no power.
package dashboard

import (
	"embed"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Window is how far back the console's charts reach; Step is how often the
// node records a sample for them.
const (
	Window = 35 * time.Minute
	Step   = 10 * time.Second
)

// Sample is the ring's figures at one moment, as one node's merged state
// holds them.
type Sample struct {
	Time  time.Time             `json:"t"`
	Rooms map[string]RoomSample `json:"rooms"`
}

// RoomSample is one room's figures in a Sample.
type RoomSample struct {
	Active int64 `json:"active"`
	Queued int64 `json:"queued"`
	// NewThisMinute is the admissions of the current minute so far.
	NewThisMinute int64 `json:"new"`
	// Shares is each node's share of the room's arrivals (0 to 1).
	Shares map[string]float64 `json:"shares,omitempty"`
}

// History keeps the samples of the last Window, oldest first. Safe for
// concurrent use.
type History struct {
	mu      sync.Mutex
	samples []Sample
}

// Due reports whether a sample taken at now would be the next one: none
// yet, or the last at least Step before now.
func (h *History) Due(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.samples) == 0 || now.Sub(h.samples[len(h.samples)-1].Time) >= Step
}

// Add records s and forgets the samples older than Window before it. A
// sample not after the last one (a clock that went back) replaces the
// history rather than making the charts run backwards.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.samples); n > 0 && !s.Time.After(h.samples[n-1].Time) {
		h.samples = h.samples[:0]
	}
	h.samples = append(h.samples, s)
	cut := 0
	for cut < len(h.samples) && s.Time.Sub(h.samples[cut].Time) > Window {
		cut++
	}
	h.samples = append(h.samples[:0], h.samples[cut:]...)
}

// Samples returns a copy of the history, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Sample(nil), h.samples...)
}

//go:embed page
var page embed.FS

// Dashboard serves the console's page and its event stream.
type Dashboard struct {
	frame    func() any
	interval time.Duration
	done     chan struct{}
	once     sync.Once
}

// New serves frames from frame, one per interval (a second when 0).
func New(frame func() any, interval time.Duration) *Dashboard {
	if interval <= 0 {
		interval = time.Second
	}
	return &Dashboard{frame: frame, interval: interval, done: make(chan struct{})}
}

// PagePath is the console's address on the admin listener; EventsPath its
// event stream's.
const (
	PagePath   = "/dashboard"
	EventsPath = "/dashboard/events"
)

// Register adds GET PagePath, its scripts and GET EventsPath to mux.
func (d *Dashboard) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+PagePath, d.servePage)
	mux.HandleFunc("GET "+PagePath+"/{file}", d.servePage)
	mux.HandleFunc("GET "+EventsPath, d.serveEvents)
}

// IsPage reports whether a request for path asks only for the console's
// static page or its script, which hold no figures: the admin gate lets a
// browser load them without the token, so that the page can ask for it.
func IsPage(path string) bool {
	return path == PagePath || path == PagePath+"/console.js" || path == PagePath+"/console.css"
}

// Shutdown ends every event stream, so that the admin listener's graceful
// shutdown does not wait for the browsers watching it.
func (d *Dashboard) Shutdown() { d.once.Do(func() { close(d.done) }) }

func (d *Dashboard) servePage(w http.ResponseWriter, r *http.Request) {
	name, types := "page/index.html", "text/html; charset=utf-8"
	switch r.PathValue("file") {
	case "":
	case "console.js":
		name, types = "page/console.js", "text/javascript; charset=utf-8"
	case "console.css":
		name, types = "page/console.css", "text/css; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	body, err := page.ReadFile(name)
	if err != nil {
		http.Error(w, "the console's page is missing from this build", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", types)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	_, _ = w.Write(body)
}

// streamFor is how long one event stream lasts before the browser
// reconnects: it bounds what a stream a proxy forgot costs.
const streamFor = 10 * time.Minute

// serveEvents streams frames as server-sent events ("event: frame"), the
// first at once.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	end := time.NewTimer(streamFor)
	defer end.Stop()
	for {
		// The admin listener has a whole-response deadline; a stream
		// moves it on with every frame.
		_ = rc.SetWriteDeadline(time.Now().Add(d.interval + 30*time.Second))
		body, err := json.Marshal(d.frame())
		if err != nil {
			return
		}
		if _, err := w.Write([]byte("event: frame\ndata: ")); err != nil {
			return
		}
		if _, err := w.Write(body); err != nil {
			return
		}
		if _, err := w.Write([]byte("\n\n")); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-d.done:
			return
		case <-end.C:
			return
		case <-tick.C:
		}
	}
}
