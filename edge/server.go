package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// RunOptions are what the caller of Run provides besides the config.
type RunOptions struct {
	Log   zerolog.Logger
	Clock func() time.Time // time.Now when nil
	// Ready, when set, is called once every listener is up.
	Ready func(*Server)
	// Incarnation overrides the gossip incarnation (tests).
	Incarnation uint64
	// GossipTune adjusts gossip (tests, the demo).
	GossipTune func(*gossip.Config)
	// GossipKeys are gossip keys held in memory, for a process that starts
	// a ring itself (the demo, tests); used when the config names none and
	// does not ask for insecure gossip.
	GossipKeys [][]byte
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
	adminTok []byte
	wasStale atomic.Bool
	fallback http.Handler // answers unrouted requests (see unrouted), or nil without a public listener
	metrics  *metrics
	// revoked holds the sessions revoked here, until their tokens expire.
	revoked revokedSet
	// shuffleKey orders shuffled pre-queues; derived from the cookie key,
	// so every node has the same one and visitors cannot learn it.
	shuffleKey []byte

	ready readiness  // what /readyz answers from (ready.go)
	tls   *publicTLS // the public listener's HTTPS (tls.go); nil: plain HTTP

	// held is how many requests are held for the next allocation now
	// (see holding).
	held atomic.Int64

	kick      chan struct{}
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	publicAddr, adminAddr, redirectAddr string

	// forward is the forward-auth endpoint (nil when off) and forwardAddr
	// its bound address.
	forward     *forwardHandler
	forwardAddr string

	console console   // the operator's console (console.go)
	hooks   *webhooks // the webhooks' notices (webhooks.go)
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

// New builds a node from a validated config: it loads keys, starts gossip
// and prepares the rooms. Call Close when done.
func New(cfg *config.Config, opts RunOptions) (*Server, error) {
	s, gsec, err := prepare(cfg, opts, false)
	if err != nil {
		return nil, err
	}
	gcfg := gossip.Config{
		Name:        cfg.Node,
		Incarnation: opts.Incarnation,
		Bind:        gsec.bind,
		Advertise:   cfg.Advertise,
		Seeds:       cfg.Seeds,
		Keys:        gsec.keys,
		Insecure:    gsec.insecure,
		Label:       cfg.GossipLabel,
		Profile:     gossip.Profile(cfg.GossipProfile),
		Clock:       s.clock,
		Log:         s.log,
		OnChange:    s.kickAllocations,
		// The gossip layer recovers its own panics; the node counts and
		// logs them with its own (see failsafe.go).
		OnPanic: func(where string, p any, stack []byte) { s.panicked(where, "", p, stack, true) },
	}
	// Room settings from peers are validated like the admin API's before
	// they merge; without a key, secrets stay out of gossip.
	gcfg.CheckRegister = s.checkRoomRegister
	if gsec.insecure {
		gcfg.Redact = stripRoomSecret
	}
	if opts.GossipTune != nil {
		opts.GossipTune(&gcfg)
	}
	node, err := gossip.Start(gcfg)
	if err != nil {
		return nil, err
	}
	s.node = node
	s.ring = node.RingNow
	// The config file seeds the rooms' registers; a newer runtime change
	// learned from peers wins over it (see SeedRegister).
	seedAt := cfg.Modified
	if seedAt.IsZero() {
		seedAt = s.clock()
	}
	for i := range cfg.Rooms {
		raw, err := json.Marshal(&cfg.Rooms[i])
		if err != nil {
			return nil, err
		}
		s.node.SeedRegister(roomRegister(cfg.Rooms[i].Name), raw, seedAt.UnixMilli())
	}
	s.syncRooms(s.ringNow())
	s.wg.Add(1)
	go s.allocationLoop()
	return s, nil
}

// Check makes every check New makes before a node starts, offline: the
// rooms (routes, bypass rules, pages and their templates, challenges, origin
// URLs), the key files, the gossip security, the admin token, the TLS
// certificate files and the forward-auth and webhook settings, without
// binding a port, joining a ring or writing a file. It is what `waitroom
// validate` runs, so that a config that would not start fails before it is
// deployed; cfg must have passed config.Validate.
func Check(cfg *config.Config) error {
	_, _, err := prepare(cfg, RunOptions{Log: zerolog.Nop()}, true)
	return err
}

// prepare builds a node from cfg up to the start of its gossip: every
// check that can refuse the config is made here. dry (Check) writes
// nothing: no cookie key kept for a node alone, no ACME cache directory.
func prepare(cfg *config.Config, opts RunOptions, dry bool) (*Server, gossipSecurity, error) {
	s := &Server{
		cfg:   cfg,
		log:   opts.Log,
		clock: opts.Clock,
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
	s.table.Store(&roomTable{rooms: map[string]*room{}})
	if s.clock == nil {
		s.clock = time.Now
	}
	s.ready.started = s.clock()
	s.metrics = newMetrics()
	s.metrics.reg.MustRegister(&stateCollector{s: s}, &lagCollector{s: s})
	if err := s.initWebhooks(); err != nil {
		return nil, gossipSecurity{}, err
	}
	keys, err := loadCookieKeys(cfg, s.log, dry)
	if err != nil {
		return nil, gossipSecurity{}, err
	}
	s.keys = keys
	warnOpenKeyFiles(cfg, s.log)
	gsec, err := gossipSecurityOf(cfg, opts, s.log)
	if err != nil {
		return nil, gossipSecurity{}, err
	}
	s.shuffleKey = keys.Derive("waitroom shuffle")
	if s.adminTok, err = loadAdminToken(cfg.AdminTokenFile); err != nil {
		return nil, gossipSecurity{}, err
	}
	// Build every configured room once before gossip starts, so a bad
	// room stops start-up with a clear error instead of a log line.
	for i := range cfg.Rooms {
		if _, err := newRoom(s, &cfg.Rooms[i]); err != nil {
			return nil, gossipSecurity{}, fmt.Errorf("room %q: %w", cfg.Rooms[i].Name, err)
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
				return nil, gossipSecurity{}, fmt.Errorf("origin: %w", err)
			}
			u.pass = p
		}
		s.fallback = u
	}
	if s.tls, err = newPublicTLS(s, dry); err != nil {
		return nil, gossipSecurity{}, err
	}
	if cfg.ForwardAuth.On() {
		if s.forward, err = newForwardHandler(s); err != nil {
			return nil, gossipSecurity{}, err
		}
	}
	return s, gsec, nil
}

// loadCookieKeys finds the cookie keys: the key file, then the environment,
// then (single node only) a key generated once and kept in the user's config
// directory, so that a restart does not send every visitor to the back of the
// queue.
//
// dry (a config check) keeps no generated key: it only says whether the
// node would start.
func loadCookieKeys(cfg *config.Config, log zerolog.Logger, dry bool) (*cookie.Keyring, error) {
	if cfg.CookieKeyFile != "" || os.Getenv(CookieKeysEnv) != "" {
		return CookieKeysOf(cfg)
	}
	if len(cfg.Rooms) == 0 {
		// No room, no token to seal; any key will do.
		k, err := cookie.GenerateKey(nil, 1)
		if err != nil {
			return nil, err
		}
		return cookie.NewKeyring(k)
	}
	if len(cfg.Seeds) > 0 {
		return nil, errors.New("cookie_key_file: a cluster needs the same cookie key file on every node; create one with 'waitroom keygen > cookie.key' and pass --cookie-key-file")
	}
	if dry {
		k, err := cookie.GenerateKey(nil, 1)
		if err != nil {
			return nil, err
		}
		return cookie.NewKeyring(k)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("cookie_key_file: none given and no config directory to keep a generated one: %w", err)
	}
	path := filepath.Join(dir, "waitroom", "cookie.key")
	if kr, err := LoadCookieKeys(path); err == nil {
		log.Warn().Str("path", path).Msg("no cookie key file given; using the key generated earlier on this machine")
		return kr, nil
	}
	data, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cookie_key_file: keep generated key: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("cookie_key_file: keep generated key: %w", err)
	}
	log.Warn().Str("path", path).Msg("no cookie key file given; generated one and kept it for restarts (a cluster needs the same file on every node)")
	return LoadCookieKeys(path)
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

// lagDoc reports the lag in use at now.
func (s *Server) lagDoc(now time.Time) *api.LagDoc {
	ring := s.node.Lag(now)
	inUse, measured := s.lagFrom(ring.Delay, ring.Measured)
	return &api.LagDoc{
		InUseMs:      durMs(inUse),
		Measured:     measured,
		ConfiguredMs: durMs(s.configuredLag()),
		MeasuringOn:  s.cfg.GossipLagMeasured == nil || *s.cfg.GossipLagMeasured,
		Ring:         ring,
	}
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// staleClosed reports whether the node is cut off from its peers and
// configured to fail closed. Entering and leaving that state is logged.
func (s *Server) staleClosed(now time.Time) bool {
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

// PublicAddr and AdminAddr are the bound listener addresses once Run has
// started them.
func (s *Server) PublicAddr() string { return s.publicAddr }

// RedirectAddr is the address the plain-HTTP listener that redirects to
// HTTPS is bound to ("" without one), once Serve has started.
func (s *Server) RedirectAddr() string { return s.redirectAddr }

// AdminAddr is the bound admin address.
func (s *Server) AdminAddr() string { return s.adminAddr }

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
	s.safely(panicConsole, func() { s.sampleConsole(now) })
	s.safely(panicWebhooks, func() { s.stepWebhooks(now) })
}

// Close stops the node: allocation loop, then gossip (leaving the cluster).
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		err = s.node.Close()
	})
	return err
}

// Run starts a node and serves until ctx is done, then shuts down
// gracefully (see Serve): it stops accepting, lets requests in flight finish
// within shutdown_timeout, hands its last counts to its peers and leaves the
// ring, so peers need not wait for a failure timeout.
func Run(ctx context.Context, cfg *config.Config, opts RunOptions) error {
	s, err := New(cfg, opts)
	if err != nil {
		return err
	}
	err = s.Serve(ctx, opts.Ready)
	if cerr := s.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("leave the ring: %w", cerr)
	}
	s.log.Info().Msg("waitroom node stopped")
	return err
}

// Serve runs the listeners until ctx is done.
func (s *Server) Serve(ctx context.Context, ready func(*Server)) error {
	var servers []*http.Server
	var names []string
	errc := make(chan error, 2)
	start := func(addr string, srv *http.Server, what string, wrap func(net.Listener) net.Listener) (string, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return "", fmt.Errorf("%s listener %q: %w", what, addr, err)
		}
		if wrap != nil {
			ln = wrap(ln)
		}
		servers, names = append(servers, srv), append(names, what)
		go func() {
			serve := srv.Serve
			if srv.TLSConfig != nil {
				// The certificate comes from TLSConfig; ServeTLS also
				// turns on HTTP/2.
				serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
			}
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s listener: %w", what, err)
			}
		}()
		return ln.Addr().String(), nil
	}
	var err error
	if s.servesPublic() {
		// The public listener faces everyone: every stage of a request
		// has a deadline and open connections are capped (see listen.go
		// for why not ReadTimeout and WriteTimeout).
		cfg := s.cfg
		orDefault := func(d config.Duration, def time.Duration) time.Duration {
			if d > 0 {
				return time.Duration(d)
			}
			return def
		}
		maxConns := cfg.MaxConnections
		if maxConns <= 0 {
			maxConns = config.DefaultMaxConnections
		}
		public := &http.Server{
			Handler:           clientDeadlines(s, orDefault(cfg.ClientTimeout, config.DefaultClientTimeout)),
			ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, config.DefaultReadHeaderTimeout),
			IdleTimeout:       orDefault(cfg.IdleTimeout, config.DefaultIdleTimeout),
			MaxHeaderBytes:    64 << 10,
			// net/http's own log goes to the node's log: failed TLS
			// handshakes (mostly scanners) at debug level, the rest as
			// warnings (see httpErrorLog).
			ErrorLog: httpErrorLog(s.log),
		}
		if s.tls != nil {
			// The TLS handshake is bounded by read_header_timeout, and
			// max_connections counts TCP connections, each of which may
			// carry up to 250 HTTP/2 streams at once.
			public.TLSConfig = s.tls.config
		}
		limit := func(ln net.Listener) net.Listener { return newConnLimiter(ln, maxConns, s.log, s.metrics.reg) }
		if s.publicAddr, err = start(cfg.Listen, public, "public", limit); err != nil {
			return err
		}
		if s.tls != nil && cfg.TLS.RedirectListen != "" {
			redirect := &http.Server{
				Handler:           s.redirectHandler(),
				ReadHeaderTimeout: public.ReadHeaderTimeout,
				ReadTimeout:       public.ReadHeaderTimeout,
				WriteTimeout:      orDefault(cfg.ClientTimeout, config.DefaultClientTimeout),
				IdleTimeout:       public.IdleTimeout,
				MaxHeaderBytes:    64 << 10,
				ErrorLog:          public.ErrorLog,
			}
			if s.redirectAddr, err = start(cfg.TLS.RedirectListen, redirect, "redirect", nil); err != nil {
				return err
			}
		}
	}
	if s.forward != nil {
		// The forward-auth endpoint answers proxies, with small answers:
		// whole-request deadlines fit it, as the admin listener's.
		fa := &http.Server{
			Handler:           s.forward,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    64 << 10,
		}
		if s.forwardAddr, err = start(s.cfg.ForwardAuth.Listen, fa, "forward-auth", nil); err != nil {
			return err
		}
	}
	// The admin listener answers small documents only: whole-request
	// deadlines fit it.
	admin := &http.Server{
		Handler:           s.AdminHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	admin.RegisterOnShutdown(s.consoleDash().Shutdown)
	if s.adminAddr, err = start(s.cfg.Admin, admin, "admin", nil); err != nil {
		return err
	}
	s.log.Info().Str("node", s.cfg.Node).Str("public", s.publicAddr).Str("forward_auth", s.forwardAddr).Str("admin", s.adminAddr).Str("gossip", s.node.Addr()).Int("rooms", len(s.rooms())).Msg("waitroom node serving")
	if ready != nil {
		ready(s)
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.shutdown(servers, names)
	return err
}

// servesPublic reports whether the node opens its public listener: it does
// when it has rooms or a default origin, or the listener was moved from its
// default address, except in forward-auth mode with no origin anywhere,
// where every room is served through the endpoint alone.
func (s *Server) servesPublic() bool {
	if s.cfg.ForwardAuth.On() && s.cfg.Origin == "" && !slices.ContainsFunc(s.cfg.Rooms, func(r config.Room) bool { return r.Origin != "" }) {
		return false
	}
	return len(s.cfg.Rooms) > 0 || s.fallback != nil || s.cfg.Listen != config.DefaultListen
}

// shutdown stops the listeners of a node that is stopping: it turns the node
// not ready at once, then the public listener stops accepting and its
// requests in flight get up to shutdown_timeout to finish; those still
// running then are cut. The admin listener closes last, so that /readyz
// answers "not ready" while the public one drains. Close then hands over
// the counts and leaves the ring.
func (s *Server) shutdown(servers []*http.Server, names []string) {
	s.beginShutdown()
	timeout := time.Duration(s.cfg.ShutdownTimeout)
	if timeout <= 0 {
		timeout = config.DefaultShutdownTimeout
	}
	s.log.Info().Dur("shutdown_timeout", timeout).Msg("shutting down: not ready, no new connections, finishing requests in flight")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i, srv := range servers { // public first, admin last
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
			s.log.Warn().Str("listener", names[i]).Dur("shutdown_timeout", timeout).Msg("requests still in flight at shutdown_timeout were cut")
		}
	}
	s.log.Info().Dur("took", time.Since(start)).Msg("listeners closed")
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
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostNoPort = h
		if strings.HasPrefix(host, "[") {
			hostNoPort = "[" + h + "]"
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
