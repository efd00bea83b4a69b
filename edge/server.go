package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/accesslog"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/roomreg"
	"github.com/waitroom/waitroom/edge/visitors"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// Options are what the caller of New provides besides the config: what
// runs the node as a process (edge/agent) has read the keys from their
// files and decided the gossip's security; a harness gives its own.
type Options struct {
	Log   zerolog.Logger
	Clock func() time.Time // time.Now when nil
	// CookieKeys seal and open the visitors' tokens; every node of a ring
	// has the same ones.
	CookieKeys *cookie.Keyring
	// GossipKeys authenticate and encrypt gossip; InsecureGossip runs it
	// without a key (the operator said so), and then a room's secret stays
	// out of what the node gossips. GossipBind is the address gossip binds,
	// cfg.Gossip when "".
	GossipKeys     [][]byte
	InsecureGossip bool
	GossipBind     string
	// Incarnation overrides the gossip incarnation (tests).
	Incarnation uint64
	// GossipTune adjusts gossip (tests, the demo).
	GossipTune func(*gossip.Config)
	// Restore is the replica the node saved in its data directory, taken
	// back before it joins (gossip.Config.Restore); nil on a first start.
	Restore *gossip.Saved
	// RestorePlaces is the order inside each room's arrival slots that the
	// node saved in its data directory (see places.go), by room; nil on a
	// first start.
	RestorePlaces map[string][]byte
}

// Server is one waitroom node: its rooms, its gossip node, its keys and its
// handlers.
type Server struct {
	cfg   *config.Config
	log   zerolog.Logger
	clock func() time.Time
	// ring is the ring's time (see ringNow): the gossip node's, set when
	// it starts.
	ring func() time.Time
	node *gossip.Node
	keys *cookie.Keyring
	// table holds the rooms in force and their routes; it is replaced
	// whole when a room is created, changed or deleted anywhere in the
	// cluster.
	table    atomic.Pointer[roomTable]
	tableMu  sync.Mutex                  // one writer of the table at a time
	seen     map[string]crdt.LWW[[]byte] // room registers the table was built from
	wasStale atomic.Bool
	fallback http.Handler // answers unrouted requests (see unrouted), or nil without a public listener
	metrics  *metrics
	// revoked holds the sessions revoked here, until their tokens expire.
	revoked visitors.Revoked
	// shuffleKey orders shuffled pre-queues; derived from the cookie key,
	// so every node has the same one and visitors cannot learn it.
	shuffleKey []byte

	// held is how many requests are held for the next allocation now
	// (see holding).
	held atomic.Int64
	// jitter draws where in its range a visitor's next refresh interval
	// falls (policy.JitteredRefresh): rand.Float64, or a fixed sequence in
	// a test that compares whole answers.
	jitter func() float64

	kick      chan struct{}
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	// forward is the forward-auth endpoint (nil when off).
	forward *forwardHandler

	// access is the access log (nil when off; see access.go).
	access *accesslog.Log

	// rounds are what runs after each round of the allocation loop (see
	// AfterEachRound).
	roundsMu sync.Mutex
	rounds   []round

	// sources are the room registers as written by a source this node
	// knows (see RoomSource).
	sourcesMu sync.Mutex
	sources   map[string]roomOrigin

	// places are the rooms' places taken back from the data directory and
	// not yet resumed (see resumeChain).
	placesMu sync.Mutex
	places   map[string][]byte
}

type route struct {
	host string // lower-case; "" matches any host
	path string
	room *room
}

// roomTable is the set of rooms in force, with their routes ordered most
// specific first.
type roomTable struct {
	rooms  map[string]*room
	routes []route
}

// New builds a node from a validated config: it prepares the rooms and
// starts gossip and the allocation loop. Call Close when done.
func New(cfg *config.Config, opts Options) (*Server, error) {
	s, err := prepare(cfg, opts)
	if err != nil {
		return nil, err
	}
	s.places = maps.Clone(opts.RestorePlaces)
	bind := opts.GossipBind
	if bind == "" {
		bind = cfg.Gossip
	}
	gcfg := gossip.Config{
		Name:        cfg.Node,
		Incarnation: opts.Incarnation,
		Bind:        bind,
		Advertise:   cfg.Advertise,
		Seeds:       cfg.Seeds,
		Keys:        opts.GossipKeys,
		Insecure:    opts.InsecureGossip,
		Label:       cfg.GossipLabel,
		Profile:     gossip.Profile(cfg.GossipProfile),
		Clock:       s.clock,
		Log:         s.log,
		OnChange:    s.kickAllocations,
		// The gossip layer recovers its own panics; the node counts and
		// logs them with its own (see failsafe.go).
		OnPanic: func(where string, p any, stack []byte) { s.panicked(where, "", p, stack, true) },
		Restore: opts.Restore,
	}
	if cfg.NamesDatacenter() {
		// The data center's pool is the one above (its seeds are its
		// members); the carriers' pool between data centers has its own
		// addresses, with the ring's keys and label.
		gcfg.Datacenter, gcfg.Carriers = cfg.Datacenter, cfg.Carriers
		gcfg.WANBind, gcfg.WANAdvertise, gcfg.WANSeeds = cfg.WANGossip, cfg.WANAdvertise, cfg.WANSeeds
		gcfg.WANProfile = gossip.Profile(cfg.WANGossipProfile)
	}
	// Room settings from peers are validated like the admin API's before
	// they merge, and counts within their room's limits; without a key,
	// secrets stay out of gossip.
	gcfg.CheckRegister = s.checkRoomRegister
	gcfg.CheckEntry = s.checkCell
	if opts.InsecureGossip {
		gcfg.Redact = roomreg.StripSecrets
	}
	if opts.GossipTune != nil {
		opts.GossipTune(&gcfg)
	}
	if err := s.openAccessLog(cfg); err != nil {
		return nil, err
	}
	node, err := gossip.Start(gcfg)
	if err != nil {
		s.closeAccessLog()
		return nil, err
	}
	s.node = node
	s.ring = node.RingNow
	if opts.Restore != nil {
		for name := range opts.Restore.RegisterNames(roomreg.Prefix) {
			s.noteSource(strings.TrimPrefix(name, roomreg.Prefix), SourceRestored)
		}
	}
	// The config file seeds the rooms' registers; a newer runtime change,
	// restored from the data directory or learned from peers, wins over it
	// (see SeedRegister).
	seedAt := cfg.Modified
	if seedAt.IsZero() {
		seedAt = s.clock()
	}
	for i := range cfg.Rooms {
		raw, err := json.Marshal(&cfg.Rooms[i])
		if err != nil {
			return nil, err
		}
		name := cfg.Rooms[i].Name
		s.node.SeedRegister(roomreg.Name(name), raw, seedAt.UnixMilli())
		// The file's settings in force, seeded now or restored as they
		// were seeded before the restart, are the file's.
		if reg, ok := s.node.Register(roomreg.Name(name)); ok && bytes.Equal(reg.Value, raw) {
			s.noteSource(name, SourceFile)
		}
	}
	s.syncRooms(s.ringNow())
	s.wg.Add(1)
	go s.allocationLoop()
	return s, nil
}

// Check makes the checks New makes of the rooms and the node's own
// settings before a node starts, offline, with the cookie keys the node
// would seal with: the rooms (routes, bypass rules, pages and their
// templates, challenges, origin URLs), the default origin and forward-auth,
// without joining a ring. edge/agent's Check adds what runs the process
// (key files, gossip security, the admin token, TLS, webhooks).
func Check(cfg *config.Config, keys *cookie.Keyring) error {
	_, err := prepare(cfg, Options{Log: zerolog.Nop(), CookieKeys: keys})
	return err
}

// prepare builds a node from cfg up to the start of its gossip: every
// check of the rooms and the node's settings that can refuse the config is
// made here.
func prepare(cfg *config.Config, opts Options) (*Server, error) {
	if opts.CookieKeys == nil {
		return nil, errors.New("no cookie keys: a node cannot seal its visitors' tokens")
	}
	if cfg.NamesDatacenter() {
		if err := gossip.CheckDatacenter(cfg.Datacenter, cfg.GossipLabel); err != nil {
			return nil, fmt.Errorf("datacenter: %w", err)
		}
	}
	s := &Server{
		cfg:    cfg,
		log:    opts.Log,
		clock:  opts.Clock,
		keys:   opts.CookieKeys,
		kick:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		jitter: rand.Float64,
	}
	s.table.Store(&roomTable{rooms: map[string]*room{}})
	if s.clock == nil {
		s.clock = time.Now
	}
	s.metrics = newMetrics()
	s.shuffleKey = s.keys.Derive("waitroom shuffle")
	// Build every configured room once before gossip starts, so a bad
	// room stops start-up with a clear error instead of a log line.
	for i := range cfg.Rooms {
		if _, err := newRoom(s, &cfg.Rooms[i]); err != nil {
			return nil, fmt.Errorf("room %q: %w", cfg.Rooms[i].Name, err)
		}
	}
	// Requests that match no room: refused unless the operator chose to
	// pass them to the default origin. The handler is in place whenever a
	// public listener runs, so that a malformed request is always refused
	// with 400, and never proxied.
	if len(cfg.Rooms) > 0 || cfg.Origin != "" || cfg.Listen != config.DefaultListen {
		u := &unrouted{s: s}
		if cfg.Unrouted == config.UnroutedPass && cfg.Origin != "" {
			p, err := newProxy(s, nil, cfg.Origin)
			if err != nil {
				return nil, fmt.Errorf("origin: %w", err)
			}
			u.pass = p
		}
		s.fallback = u
	}
	if cfg.ForwardAuth.On() {
		var err error
		if s.forward, err = newForwardHandler(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ringNow is the ring's time (gossip.Node.RingNow), the one every node
// reads alike whatever its own clock says: arrival buckets, minute budgets,
// allocations, the counter rule, the times sealed in cookies (sealed by one
// node, opened by another) and the phases of events all go by it. What times
// a span on this machine stays on the node's own clock (s.clock): timeouts,
// readiness, staleness and the gossip layer's measurements.
func (s *Server) ringNow() time.Time { return s.ring() }

// gossipLag is the bound on gossip delay the policy assumes (policy.Room.Lag):
// the measured one when there is one, else the configured one.
func (s *Server) gossipLag() time.Duration {
	l, _ := s.lagInUse(s.clock())
	return l
}

// configuredLag is the config's bound on gossip delay, or the profile's
// typical worst case.
func (s *Server) configuredLag() time.Duration {
	if s.cfg.GossipLag > 0 {
		return time.Duration(s.cfg.GossipLag)
	}
	switch s.cfg.GossipProfile {
	case "local":
		return time.Second
	case "wan":
		return 10 * time.Second
	}
	return 2 * time.Second
}

// lagInUse is the lag the policy assumes at now and whether it comes from
// measurement. The policy must leave room for what the other nodes admitted
// within the lag that this node has not heard of, so the lag decides how
// full a flooded room gets before it queues: the configured bound (1-10 s)
// is far above the usual delay (0.1-0.3 s). The measurement is used only
// once every live peer has given enough recent samples (gossip.RingDelay),
// and never beyond the configured bound; gossip_lag_measured: false turns
// it off.
func (s *Server) lagInUse(now time.Time) (time.Duration, bool) {
	return s.lagFrom(s.node.RingDelay(now))
}

// lagFrom is the lag the policy assumes for a ring delay d (measured: every
// live peer's delay is known well enough to use).
func (s *Server) lagFrom(d time.Duration, measured bool) (time.Duration, bool) {
	conf := s.configuredLag()
	if !measured || (s.cfg.GossipLagMeasured != nil && !*s.cfg.GossipLagMeasured) {
		return conf, false
	}
	return policy.AssumedLag(d, conf), true
}

// Lag is the gossip delay the allocations assume and what it comes from.
type Lag struct {
	// InUse is the lag the policy assumes (policy.Room.Lag) for the ring
	// delay in Ring. (Allocations reuse a delay figure for up to a quarter
	// of a second, so theirs may trail this by that much.)
	InUse time.Duration
	// Measured: InUse comes from the measured delay, not the config.
	Measured bool
	// Configured is the configured bound (gossip_lag, or the profile's),
	// and MeasuringOn false when gossip_lag_measured is false.
	Configured  time.Duration
	MeasuringOn bool
	// Ring is the measured delay: the ring-wide figure and each live
	// peer's delay and clock offset.
	Ring gossip.RingLag
}

// Lag reports the lag in use at now, the node's own time.
func (s *Server) Lag(now time.Time) Lag {
	ring := s.node.Lag(now)
	inUse, measured := s.lagFrom(ring.Delay, ring.Measured)
	return Lag{
		InUse:       inUse,
		Measured:    measured,
		Configured:  s.configuredLag(),
		MeasuringOn: s.cfg.GossipLagMeasured == nil || *s.cfg.GossipLagMeasured,
		Ring:        ring,
	}
}

// StaleClosed reports whether the node is cut off from its peers and
// configured to fail closed, when it would queue every new visitor (GET
// /healthz says so). Entering and leaving that state is logged.
func (s *Server) StaleClosed(now time.Time) bool {
	after := time.Duration(s.cfg.StaleAfter)
	if after <= 0 {
		after = time.Duration(config.DefaultStaleAfter)
	}
	stale := s.node.Stale(now, after)
	mode := s.cfg.StaleState
	if mode == "" {
		mode = "open"
	}
	// A node starts out of touch until it has joined; that is no news, so
	// only a change after the first contact is logged.
	if s.wasStale.Swap(stale) != stale && !s.node.LastHeard().IsZero() {
		ev := s.log.Info()
		msg := "in touch with the cluster again"
		if stale {
			ev, msg = s.log.Warn(), "no fresh state from peers"
		}
		ev.Str("stale_state", mode).Time("last_heard", s.node.LastHeard()).Msg(msg)
	}
	return stale && mode == "closed"
}

// Node is the server's gossip node.
func (s *Server) Node() *gossip.Node { return s.node }

// Config is the node's configuration as New was given it; the caller must
// not change it. Rooms changed at run time are in Rooms.
func (s *Server) Config() *config.Config { return s.cfg }

// Log is the node's log.
func (s *Server) Log() zerolog.Logger { return s.log }

// Now is the node's own clock, which times spans on this machine
// (timeouts, readiness, staleness); RingNow dates what the ring shares.
func (s *Server) Now() time.Time { return s.clock() }

// RingNow is the ring's time as this node reads it (see ringNow).
func (s *Server) RingNow() time.Time { return s.ringNow() }

// Registry is the node's Prometheus registry: the request path's counters
// and the merged rooms' gauges, to which what runs beside the node (the
// listeners, the webhooks) adds its own; GET /metrics serves it.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ServesHost reports whether a room in force is routed by host (without a
// port): the hosts a public certificate may be asked for.
func (s *Server) ServesHost(host string) bool {
	for _, rt := range s.table.Load().routes {
		if rt.host != "" && config.HostWithoutPort(rt.host) == host {
			return true
		}
	}
	return false
}

// kickAllocations asks the allocation loop to recompute soon. It never
// blocks: gossip calls it from its receive path.
func (s *Server) kickAllocations() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// allocationLoop recomputes every room's allocation when merged state
// changes (at most every policy.AllocationFollow, 50 ms) and at least every
// policy.AllocationEvery (250 ms), which also rolls the allocation over at
// minute boundaries.
func (s *Server) allocationLoop() {
	defer s.wg.Done()
	// Every step below recovers its own panics; this is the last guard,
	// should the loop's own code fail: the loop starts again.
	defer func() {
		if p := recover(); p != nil {
			s.panicked(panicLoop, "", p, debug.Stack(), true)
			s.wg.Add(1)
			go s.allocationLoop()
		}
	}()
	tick := time.NewTicker(policy.AllocationEvery)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.kick:
			if d := time.Since(last); d < policy.AllocationFollow {
				select {
				case <-s.stop:
					return
				case <-time.After(policy.AllocationFollow - d):
				}
			}
		}
		last = time.Now()
		s.refreshAllocations(s.ringNow())
	}
}

// RefreshAllocations runs one round of the allocation loop now, at the
// ring's time: rooms and revocations synced from gossip, every room's
// allocation recomputed. The loop does this at least every 250 ms; a
// harness that moves a fake clock, or that has seen gossip bring what it
// waits for, calls it instead of sleeping for the loop (see edge/edgetest).
func (s *Server) RefreshAllocations() { s.refreshAllocations(s.ringNow()) }

// refreshAllocations is one round of the allocation loop: rooms and
// revocations synced from what gossip brought, then every room's
// allocation recomputed at now.
//
// Each step recovers its own panics (see failsafe.go): a room whose
// allocation fails runs in its failure mode while the others go on, and a
// failed step is tried again on the next round.
func (s *Server) refreshAllocations(now time.Time) {
	s.safely(panicLoop, func() { s.syncRooms(now) })
	s.safely(panicLoop, func() { s.syncRevocations(now) })
	for _, rm := range s.rooms() {
		s.safely(panicAllocation, func() { rm.refresh(now) })
	}
	s.roundsMu.Lock()
	rounds := s.rounds
	s.roundsMu.Unlock()
	for _, r := range rounds {
		s.safely(r.where, func() { r.fn(now) })
	}
}

// round is a step that runs after each round of the allocation loop.
type round struct {
	where string
	fn    func(now time.Time)
}

// AfterEachRound has fn run after each round of the allocation loop, at the
// round's ring time, once the rooms' allocations are fresh: the console
// samples its charts there and the webhooks look for changes to tell of. A
// panic of fn is recovered and counted under where, and fn runs again on
// the next round. The loop does not wait for anything fn starts.
func (s *Server) AfterEachRound(where string, fn func(now time.Time)) {
	s.roundsMu.Lock()
	defer s.roundsMu.Unlock()
	s.rounds = append(slices.Clip(s.rounds), round{where, fn})
}

// Close stops the node: allocation loop, then gossip (leaving the
// cluster), then the access log, whose buffered lines it writes: edge/agent
// calls it once the listeners have drained.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		err = s.node.Close()
		s.closeAccessLog()
	})
	return err
}

// route finds the room for a request: the first matching route, most
// specific first. It first puts the request's path and Host in their
// canonical spelling, in place (see canonicalise), so that the bypass rules
// and the origin see what was routed. A request without a canonical
// spelling matches no room; the unrouted handler refuses it.
func (s *Server) route(r *http.Request) *room {
	key, err := canonicalise(r)
	if err != nil {
		return nil
	}
	host := r.Host
	hostNoPort := host
	// Most Hosts name no port: asking SplitHostPort about them would cost
	// an error value for every request.
	if strings.IndexByte(host, ':') >= 0 {
		if h, _, err := net.SplitHostPort(host); err == nil {
			hostNoPort = h
			if strings.HasPrefix(host, "[") {
				hostNoPort = "[" + h + "]"
			}
		}
	}
	routes := s.table.Load().routes
	for i := range routes {
		rt := &routes[i]
		if rt.host != "" && rt.host != host && rt.host != hostNoPort {
			continue
		}
		if routeMatches(key, rt.path) {
			return rt.room
		}
	}
	return nil
}
