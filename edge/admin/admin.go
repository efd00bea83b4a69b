package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/webhook/deliver"
)

// Options are what the admin API needs besides the node: what runs the
// node as a process (edge/agent) gives them.
type Options struct {
	// Token is the bearer token a caller must send (admin_token_file's);
	// nil asks for none.
	Token []byte
	// Ready is what GET /readyz answers: whether the node should be sent
	// visitors at the node's time now. Nil answers as GET /healthz does.
	Ready func(now time.Time) bool
	// Webhooks are the node's webhooks, whose deliveries the state
	// document and GET /webhooks show; nil when none run.
	Webhooks *deliver.Hooks
}

// API is one node's admin endpoint: its handler (Handler) and the
// operator's console, whose charts it samples after each round of the
// node's allocation loop.
type API struct {
	s       *edge.Server
	log     zerolog.Logger
	opts    Options
	console console
}

// New makes the admin API of node s, one per node: it adds the merged
// rooms' gauges to the node's metrics, and starts sampling the console's
// charts at once, so that they have a history when an operator opens them.
func New(s *edge.Server, o Options) *API {
	a := &API{s: s, log: s.Log(), opts: o}
	s.Registry().MustRegister(&stateCollector{a: a}, &lagCollector{s: s})
	s.AfterEachRound(panicConsole, a.sampleConsole)
	return a
}

// Where a recovered panic of the admin API is counted
// (waitroom_panics_total{where}).
const (
	panicAdmin   = "admin"
	panicConsole = "console" // sampling the console's charts
)

// Handler serves the admin endpoint: GET /state, GET
// /rooms/{name}/status, GET /metrics, GET /healthz, GET /readyz, the room
// API, the codes API, the webhook API and the console (GET /dashboard). It
// listens on loopback by default and never on the public listener; see
// gate for who may use it.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.StateDoc())
	})
	mux.HandleFunc("GET /rooms/{name}/status", func(w http.ResponseWriter, r *http.Request) {
		rs, ok := a.RoomStatus(r.PathValue("name"), a.s.RingNow())
		if !ok {
			writeJSON(w, http.StatusNotFound, api.Error{Error: "no room named " + r.PathValue("name")})
			return
		}
		writeJSON(w, http.StatusOK, rs)
	})
	mux.HandleFunc("GET /rooms/{name}/analytics", a.serveAnalytics)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.s.Registry(), promhttp.HandlerOpts{}))
	a.registerRooms(mux)
	a.registerCodes(mux)
	a.dashboard().Register(mux)
	a.registerWebhooks(mux)
	open := http.NewServeMux()
	open.HandleFunc("/healthz", a.serveHealth)
	open.HandleFunc("/readyz", a.serveReady)
	return a.recover(newGate(a.s.Config(), a.opts.Token, open, mux))
}

// Shutdown ends the console's event streams, so that the admin listener
// can close: call it as the listener shuts down.
func (a *API) Shutdown() { a.dashboard().Shutdown() }

// recover answers a panic of the admin API with a 500 and its count,
// rather than a connection that breaks off.
func (a *API) recover(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			a.s.Panicked(panicAdmin, p, debug.Stack())
			writeJSON(w, http.StatusInternalServerError, api.Error{Error: "internal error (logged and counted in waitroom_panics_total)"})
		}()
		h.ServeHTTP(w, r)
	})
}

// serveHealth answers GET /healthz, open to anyone who reaches the admin
// listener (load balancers know no token), so it tells nothing but whether
// the node should get traffic: 503 while it is cut off from its peers and
// configured to fail closed (stale_state: closed), when it would queue every
// new visitor; 200 otherwise.
func (a *API) serveHealth(w http.ResponseWriter, r *http.Request) {
	writeHealth(w, !a.s.StaleClosed(a.s.Now()))
}

// serveReady answers GET /readyz, open like /healthz, with nothing but ok
// or not: 200 when the node is ready (Options.Ready), 503 otherwise.
func (a *API) serveReady(w http.ResponseWriter, r *http.Request) {
	if a.opts.Ready == nil {
		a.serveHealth(w, r)
		return
	}
	writeHealth(w, a.opts.Ready(a.s.Now()))
}

func writeHealth(w http.ResponseWriter, ok bool) {
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, api.Health{OK: ok})
}

func (a *API) serveAnalytics(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if a.s.Room(name) == nil {
		writeError(w, http.StatusNotFound, "no room named %q", name)
		return
	}
	minutes := 60
	if q := r.URL.Query().Get("minutes"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "minutes: %q must be a whole number of minutes from 1 to %d", q, maxAnalyticsMinutes)
			return
		}
		minutes = n
	}
	// Counters older than the retention are pruned; asking for more
	// returns what is kept.
	minutes = min(minutes, maxAnalyticsMinutes)
	writeJSON(w, http.StatusOK, a.analytics(name, minutes, a.s.RingNow()))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, api.Error{Error: fmt.Sprintf(format, args...)})
}
