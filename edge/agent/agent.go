package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/admin"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/webhook/deliver"
	"github.com/waitroom/waitroom/gossip"
)

// Options are what the caller of New or Run provides besides the config.
type Options struct {
	Log   zerolog.Logger
	Clock func() time.Time // time.Now when nil
	// Ready, when set, is called once every listener is up.
	Ready func(*Agent)
	// Incarnation overrides the gossip incarnation (tests).
	Incarnation uint64
	// GossipTune adjusts gossip (tests, the demo).
	GossipTune func(*gossip.Config)
	// DataWritePause, for tests only, pauses every save halfway through
	// writing the file (datadir.Dir.WritePause).
	DataWritePause time.Duration
	// WANDelay, WANJitter and WANLoss, for tests only, delay what the node
	// sends between data centers by WANDelay plus a uniform draw in
	// [0, WANJitter) and lose WANLoss of its packets (gossip.LinkFaults),
	// so that real processes on one machine stand as far apart as data
	// centers. Zero: nothing injected.
	WANDelay, WANJitter time.Duration
	WANLoss             float64
	// GossipKeys are gossip keys held in memory, for a process that starts
	// a ring itself (the demo, tests); used when the config names none and
	// does not ask for insecure gossip.
	GossipKeys [][]byte
}

// Agent is one node as a process runs it: the node (the embedded
// edge.Server, whose request path, rooms and gossip it is), its admin API,
// its webhooks, its listeners and its readiness.
type Agent struct {
	*edge.Server
	cfg   *config.Config
	log   zerolog.Logger
	clock func() time.Time
	admin *admin.API
	hooks *deliver.Hooks
	tls   *publicTLS // the public listener's HTTPS (tls.go); nil: plain HTTP
	ready readiness  // what /readyz answers from (ready.go)
	data  *dataDir   // the data directory (datadir.go); nil: none

	publicAddr, adminAddr, redirectAddr, forwardAddr string
}

// prepared is what the checks before a node starts read from the config
// and the files it names.
type prepared struct {
	hooks    []deliver.Def
	edge     edge.Options
	adminTok []byte
}

// prepare makes every check that can refuse cfg before a node starts, in
// the order an operator fixes them: the webhooks' secrets, the cookie
// keys, the gossip security, the admin token, the rooms and the node's own
// settings (edge.Check), and TLS. dry (Check) writes nothing: no cookie
// key kept for a node alone, no ACME cache directory.
func prepare(cfg *config.Config, opts Options, dry bool) (*Agent, prepared, error) {
	a := &Agent{cfg: cfg, log: opts.Log, clock: opts.Clock}
	if a.clock == nil {
		a.clock = time.Now
	}
	var p prepared
	var err error
	if p.hooks, err = deliver.Load(cfg); err != nil {
		return nil, p, err
	}
	keys, err := loadCookieKeys(cfg, a.log, dry)
	if err != nil {
		return nil, p, err
	}
	warnOpenKeyFiles(cfg, a.log)
	gsec, err := gossipSecurityOf(cfg, opts, a.log)
	if err != nil {
		return nil, p, err
	}
	if p.adminTok, err = loadAdminToken(cfg.AdminTokenFile); err != nil {
		return nil, p, err
	}
	tune, err := wanFaults(opts)
	if err != nil {
		return nil, p, err
	}
	p.edge = edge.Options{
		Log: opts.Log, Clock: opts.Clock, CookieKeys: keys,
		GossipKeys: gsec.keys, InsecureGossip: gsec.insecure, GossipBind: gsec.bind,
		Incarnation: opts.Incarnation, GossipTune: tune,
	}
	if err := edge.Check(cfg, keys); err != nil {
		return nil, p, err
	}
	if a.tls, err = newPublicTLS(a, dry); err != nil {
		return nil, p, err
	}
	return a, p, nil
}

// wanFaults is opts.GossipTune with the faults between data centers that
// opts asks for (tests only), checked.
func wanFaults(opts Options) (func(*gossip.Config), error) {
	f := gossip.LinkFaults{Delay: opts.WANDelay, Jitter: opts.WANJitter, Loss: opts.WANLoss}
	if f.None() {
		return opts.GossipTune, nil
	}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("faults between data centers (test only): %w", err)
	}
	return func(g *gossip.Config) {
		if opts.GossipTune != nil {
			opts.GossipTune(g)
		}
		g.WANFaults = f
	}, nil
}

// Check makes every check New makes before a node starts, offline: the
// rooms (routes, bypass rules, pages and their templates, challenges, origin
// URLs), the key files, the gossip security, the admin token, the TLS
// certificate files and the forward-auth and webhook settings, without
// binding a port, joining a ring or writing a file. It is what `waitroom
// validate` runs, so that a config that would not start fails before it is
// deployed; cfg must have passed config.Validate.
func Check(cfg *config.Config) error {
	_, _, err := prepare(cfg, Options{Log: zerolog.Nop()}, true)
	return err
}

// New builds a node from a validated config: it loads keys, starts the
// node and its gossip, its admin API and its webhooks. Serve serves it;
// call Close when done.
func New(cfg *config.Config, opts Options) (*Agent, error) {
	a, p, err := prepare(cfg, opts, false)
	if err != nil {
		return nil, err
	}
	a.ready.started = a.clock()
	// What the node saved is taken back before it serves or joins.
	if path := cfg.DataDirPath(); path != "" {
		if a.data, err = a.openDataDir(path, p.edge.CookieKeys); err != nil {
			return nil, err
		}
		a.data.dir.WritePause = opts.DataWritePause
		p.edge.Restore = a.data.restored
		p.edge.RestorePlaces = a.data.places
	} else if cfg.DataDir != config.DataDirOff {
		a.log.Warn().Msg("no data directory (--data-dir, data_dir): what the ring is told at run time is lost when every node stops at once")
	}
	if a.Server, err = edge.New(cfg, p.edge); err != nil {
		return nil, err
	}
	a.hooks = deliver.New(a.Server, p.hooks)
	a.admin = admin.New(a.Server, admin.Options{Token: p.adminTok, Ready: a.Ready, Webhooks: a.hooks})
	if a.data != nil {
		a.startSaving(a.data)
	}
	return a, nil
}

// Close saves the node's state in its data directory a last time, then
// hands over its last counts and leaves the ring (edge.Server.Close).
// After a graceful stop (Run), the requests in flight have finished by
// then, so the file holds every count they made.
func (a *Agent) Close() error {
	a.data.stopSaving()
	return a.Server.Close()
}

// Run starts a node and serves until ctx is done, then shuts down
// gracefully (see Serve): it stops accepting, lets requests in flight finish
// within shutdown_timeout, hands its last counts to its peers and leaves the
// ring, so peers need not wait for a failure timeout.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	a, err := New(cfg, opts)
	if err != nil {
		return err
	}
	err = a.Serve(ctx, opts.Ready)
	if cerr := a.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("leave the ring: %w", cerr)
	}
	a.log.Info().Msg("waitroom node stopped")
	return err
}

// AdminHandler is the node's admin endpoint's handler, which Serve serves
// on the admin listener.
func (a *Agent) AdminHandler() http.Handler { return a.admin.Handler() }

// StateDoc is the node's state document with its webhooks' deliveries, as
// GET /state answers it.
func (a *Agent) StateDoc() *api.StateDoc { return a.admin.StateDoc() }

// PublicAddr is the bound public address once Serve has started it.
func (a *Agent) PublicAddr() string { return a.publicAddr }

// RedirectAddr is the address the plain-HTTP listener that redirects to
// HTTPS is bound to ("" without one), once Serve has started.
func (a *Agent) RedirectAddr() string { return a.redirectAddr }

// AdminAddr is the bound admin address.
func (a *Agent) AdminAddr() string { return a.adminAddr }

// ForwardAuthAddr is the bound forward-auth address once Serve has started
// it.
func (a *Agent) ForwardAuthAddr() string { return a.forwardAddr }

// Serve runs the listeners until ctx is done.
func (a *Agent) Serve(ctx context.Context, ready func(*Agent)) error {
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
	if servesPublic(a.cfg) {
		// The public listener faces everyone: every stage of a request
		// has a deadline and open connections are capped (see listen.go
		// for why not ReadTimeout and WriteTimeout).
		cfg := a.cfg
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
			Handler:           clientDeadlines(a.Server, orDefault(cfg.ClientTimeout, config.DefaultClientTimeout)),
			ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, config.DefaultReadHeaderTimeout),
			IdleTimeout:       orDefault(cfg.IdleTimeout, config.DefaultIdleTimeout),
			MaxHeaderBytes:    64 << 10,
			// net/http's own log goes to the node's log: failed TLS
			// handshakes (mostly scanners) at debug level, the rest as
			// warnings (see httpErrorLog).
			ErrorLog: httpErrorLog(a.log),
		}
		if a.tls != nil {
			// The TLS handshake is bounded by read_header_timeout, and
			// max_connections counts TCP connections, each of which may
			// carry up to 250 HTTP/2 streams at once.
			public.TLSConfig = a.tls.config
			public.Handler = withHSTS(public.Handler, cfg.TLS.HSTSHeader())
		}
		limit := func(ln net.Listener) net.Listener { return newConnLimiter(ln, maxConns, a.log, a.Registry()) }
		if a.publicAddr, err = start(cfg.Listen, public, "public", limit); err != nil {
			return err
		}
		if a.tls != nil && cfg.TLS.RedirectListen != "" {
			redirect := &http.Server{
				Handler:           a.redirectHandler(),
				ReadHeaderTimeout: public.ReadHeaderTimeout,
				ReadTimeout:       public.ReadHeaderTimeout,
				WriteTimeout:      orDefault(cfg.ClientTimeout, config.DefaultClientTimeout),
				IdleTimeout:       public.IdleTimeout,
				MaxHeaderBytes:    64 << 10,
				ErrorLog:          public.ErrorLog,
			}
			if a.redirectAddr, err = start(cfg.TLS.RedirectListen, redirect, "redirect", nil); err != nil {
				return err
			}
		}
	}
	if fwd := a.ForwardAuthHandler(); fwd != nil {
		// The forward-auth endpoint answers proxies, with small answers:
		// whole-request deadlines fit it, as the admin listener's.
		fa := &http.Server{
			Handler:           fwd,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    64 << 10,
		}
		if a.forwardAddr, err = start(a.cfg.ForwardAuth.Listen, fa, "forward-auth", nil); err != nil {
			return err
		}
	}
	// The admin listener answers small documents only: whole-request
	// deadlines fit it.
	adminSrv := &http.Server{
		Handler:           a.admin.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	adminSrv.RegisterOnShutdown(a.admin.Shutdown)
	if a.adminAddr, err = start(a.cfg.Admin, adminSrv, "admin", nil); err != nil {
		return err
	}
	stopReopening := a.reopenOnHangup()
	defer stopReopening()
	a.log.Info().Str("node", a.cfg.Node).Str("public", a.publicAddr).Str("forward_auth", a.forwardAddr).Str("admin", a.adminAddr).Str("gossip", a.Node().Addr()).Int("rooms", len(a.Rooms())).Msg("waitroom node serving")
	if ready != nil {
		ready(a)
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	a.shutdown(servers, names)
	return err
}

// servesPublic reports whether a node with cfg opens its public listener:
// it does when it has rooms or a default origin, or the listener was moved
// from its default address, except in forward-auth mode with no origin
// anywhere, where every room is served through the endpoint alone.
func servesPublic(cfg *config.Config) bool {
	if cfg.ForwardAuth.On() && cfg.Origin == "" && !slices.ContainsFunc(cfg.Rooms, func(r config.Room) bool { return r.Origin != "" }) {
		return false
	}
	return len(cfg.Rooms) > 0 || cfg.Origin != "" || cfg.Listen != config.DefaultListen
}

// shutdown stops the listeners of a node that is stopping: it turns the node
// not ready at once, then the public listener stops accepting and its
// requests in flight get up to shutdown_timeout to finish; those still
// running then are cut. The admin listener closes last, so that /readyz
// answers "not ready" while the public one drains. Close then hands over
// the counts and leaves the ring.
func (a *Agent) shutdown(servers []*http.Server, names []string) {
	a.beginShutdown()
	timeout := time.Duration(a.cfg.ShutdownTimeout)
	if timeout <= 0 {
		timeout = config.DefaultShutdownTimeout
	}
	a.log.Info().Dur("shutdown_timeout", timeout).Msg("shutting down: not ready, no new connections, finishing requests in flight")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i, srv := range servers { // public first, admin last
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
			a.log.Warn().Str("listener", names[i]).Dur("shutdown_timeout", timeout).Msg("requests still in flight at shutdown_timeout were cut")
		}
	}
	a.log.Info().Dur("took", time.Since(start)).Msg("listeners closed")
}
