package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
)

func newServe() *cobra.Command {
	var (
		configPath  string
		o           config.Overrides
		clockOffset time.Duration
		writePause  time.Duration
		wanDelay    time.Duration
		wanJitter   time.Duration
		wanLoss     float64
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a node in front of an origin",
		Long: `Run a waitroom node: the public listener that queues or proxies visitors,
the admin endpoint (loopback by default), and gossip with the other nodes.

With a config file, rooms come from the file and flags override its node
settings. Without one, --origin protects a single site at once:

  waitroom serve --origin http://127.0.0.1:3000 --total-active-users 500 --new-users-per-minute 200

Behind a proxy you already run, which asks the node about each request
(see docs/deploy/forward-auth):

  waitroom serve --forward-auth 127.0.0.1:9091 --total-active-users 500 --new-users-per-minute 200

Over HTTPS, with a certificate from Let's Encrypt for the room's host:

  waitroom serve --origin http://127.0.0.1:3000 --host shop.example.com --total-active-users 500 \
    --listen :443 --acme --acme-email ops@example.com --redirect-listen :80

The node keeps what the ring was told at run time (rooms and their changes,
stops and messages, webhooks, used priority codes, counts) and the members it
knew in its data directory (--data-dir), saved at most once a second and at a
graceful stop, and takes it back when it starts: a node, or a whole ring,
that is stopped or killed comes back as it was, visitors in their places.

Every node of a cluster needs the same cookie key file (waitroom keygen),
the same gossip key file (waitroom keygen --gossip) and the address of at
least one other node (--seed). Gossip carries the rooms and every count, so a
node with seeds refuses to start without a gossip key unless told
--insecure-gossip; a node without seeds and without a key runs alone, its
gossip on loopback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg *config.Config
			if configPath != "" {
				c, err := config.Load(configPath)
				if err != nil {
					return err
				}
				cfg = c
			} else {
				cfg = &config.Config{}
			}
			o.Set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := o.Apply(cfg); err != nil {
				return fmt.Errorf("flags: %w", err)
			}
			if cfg.DataDir == "" {
				cfg.DataDir = config.DefaultDataDir(cfg.Node)
			}
			log := newLogger(cfg.LogLevel, o.LogFormat)
			ro := agent.Options{Log: log}
			if clockOffset != 0 {
				// Test only: the node reads a clock this far off the
				// machine's, as a PoP whose clock is wrong would.
				ro.Clock = func() time.Time { return time.Now().Add(clockOffset) }
				log.Warn().Dur("offset", clockOffset).Msg("test only: this node's clock is faked to run off the machine's clock (--test-clock-offset)")
			}
			if writePause != 0 {
				ro.DataWritePause = writePause
				log.Warn().Dur("pause", writePause).Msg("test only: every save of the data directory pauses halfway through its file (--test-data-write-pause)")
			}
			if wanDelay != 0 || wanJitter != 0 || wanLoss != 0 {
				ro.WANDelay, ro.WANJitter, ro.WANLoss = wanDelay, wanJitter, wanLoss
				log.Warn().Dur("delay", wanDelay).Dur("jitter", wanJitter).Float64("loss", wanLoss).Msg("test only: what this node sends between data centers is delayed and lost on purpose (--test-wan-delay, --test-wan-jitter, --test-wan-loss)")
			}
			return agent.Run(cmd.Context(), cfg, ro)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&configPath, "config", "c", "", "YAML config file (rooms use Cloudflare's waiting room field names)")
	f.StringVar(&o.Node, "node", "", "node name, unique in the cluster (default: hostname)")
	f.StringVar(&o.Listen, "listen", "", "public HTTP listener (default :8080)")
	f.StringVar(&o.Admin, "admin", "", "admin listener for /state, /metrics, /healthz, /readyz (default 127.0.0.1:9090)")
	f.StringVar(&o.Gossip, "gossip", "", "gossip bind address (default 0.0.0.0:7946; 127.0.0.1:7946 for a node alone, without seeds or key)")
	f.StringVar(&o.Advertise, "advertise", "", "gossip address other nodes should use, if not the bound one")
	f.StringArrayVar(&o.Seeds, "seed", nil, "gossip address of another node to join (repeatable)")
	f.StringVar(&o.Datacenter, "datacenter", "", "data center (point of presence) the node belongs to: its nodes share its slots, and only its figures travel to the other data centers (default: the node's name, a data center of its own)")
	f.StringVar(&o.WANGossip, "wan-gossip", "", "with --datacenter, the bind address of the gossip between data centers while this node carries its data center's figures (default: --gossip's host, next port: 0.0.0.0:7947)")
	f.StringVar(&o.WANAdvertise, "wan-advertise", "", "with --datacenter, the address between data centers other data centers should use, if not the bound one")
	f.StringArrayVar(&o.WANSeeds, "wan-seed", nil, "with --datacenter, the address between data centers of a node of another data center (repeatable)")
	f.StringVar(&o.GossipProfile, "gossip-profile", "", "gossip timings: lan (default), local or wan")
	f.StringVar(&o.GossipKeyFile, "gossip-key-file", "", "file of base64 gossip keys from 'waitroom keygen --gossip', the first encrypting (or WAITROOM_GOSSIP_KEY); only their holders are part of the ring")
	f.BoolVar(&o.InsecureGossip, "insecure-gossip", false, "run gossip without a key: anyone who reaches the gossip address can rewrite rooms and counts")
	f.StringVar(&o.CookieKeyFile, "cookie-key-file", "", "cookie key file from 'waitroom keygen', the same on every node (or WAITROOM_COOKIE_KEYS)")
	f.StringVar(&o.DataDir, "data-dir", "", "directory that keeps what the ring was told (rooms and changes made at run time, stops, webhooks, used codes, counts) and the members the node knew, so a restart loses nothing; \"off\" keeps nothing (default: waitroom/data/NODE in the user's config directory)")
	f.StringVar(&o.Origin, "origin", "", "origin URL; without a config file, protects this one site")
	f.StringVar(&o.ForwardAuth, "forward-auth", "", "forward-auth listener (such as 127.0.0.1:9091) that a proxy in front (nginx auth_request, Caddy forward_auth, Traefik forwardAuth, Envoy ext_authz) asks about each request; without a config file, with --total-active-users and no --origin, protects the proxy's site")
	f.StringArrayVar(&o.TrustedProxies, "trusted-proxy", nil, "address or prefix allowed to ask the forward-auth listener, and to revoke (repeatable; default loopback only)")
	f.StringVar(&o.Host, "host", "", "host of the single room (default: any host)")
	f.StringVar(&o.Path, "path", "", "path prefix of the single room (default /)")
	f.StringVar(&o.Unrouted, "unrouted", "", "requests no room routes: refuse (default, 404) or pass (to --origin, unqueued: anything behind the origin outside the rooms' routes is reachable)")
	f.IntVar(&o.TotalActiveUsers, "total-active-users", 0, "single room: users allowed on the origin at once")
	f.IntVar(&o.NewUsersPerMinute, "new-users-per-minute", 0, "single room: new users let in per minute (default: total active users)")
	f.IntVar(&o.SessionDuration, "session-duration", 0, "single room: minutes a session lasts after the last request (1–30, default 5)")
	f.StringVar(&o.QueueingMethod, "queueing-method", "", "single room: fifo (default), random, passthrough or reject")
	f.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 0, "on SIGTERM, how long requests in flight may finish before they are cut; then the node hands over its counts and leaves the ring (default 20s, within Kubernetes' 30s grace period)")
	f.DurationVar(&o.ReadyAloneAfter, "ready-alone-after", 0, "without seeds, how long the node waits for a peer before /readyz says ready (default 5s)")
	f.StringVar(&o.CertFile, "tls-cert-file", "", "serve HTTPS on --listen with this PEM certificate chain (with --tls-key-file); reloaded when the file changes")
	f.StringVar(&o.KeyFile, "tls-key-file", "", "the private key of --tls-cert-file; reloaded when the file changes")
	f.BoolVar(&o.ACME, "acme", false, "serve HTTPS on --listen with certificates obtained and renewed over ACME (Let's Encrypt unless --acme-directory) for the rooms' hosts; accepts the CA's terms")
	f.StringVar(&o.ACMEEmail, "acme-email", "", "contact address the ACME CA writes to about the certificates")
	f.StringArrayVar(&o.ACMEHosts, "acme-host", nil, "host to obtain a certificate for, besides the rooms' hosts (repeatable)")
	f.StringVar(&o.ACMECacheDir, "acme-cache-dir", "", "directory that keeps the ACME account and certificates across restarts (default: waitroom/acme in the user's config directory)")
	f.StringVar(&o.ACMEDirectory, "acme-directory", "", "ACME directory URL (default Let's Encrypt's production directory)")
	f.StringVar(&o.ACMEDirectoryCAFile, "acme-directory-ca-file", "", "PEM file of CA certificates to trust for the ACME directory's HTTPS, besides the system's (a private or test CA)")
	f.StringVar(&o.RedirectListen, "redirect-listen", "", "with HTTPS, a plain-HTTP listener (such as :80) that redirects to HTTPS and answers ACME http-01 challenges")
	f.IntVar(&o.HTTPSPort, "https-port", 0, "the port visitors reach HTTPS on, for redirects, when it is not the port of --listen (default: that port)")
	f.StringVar(&o.LogLevel, "log-level", "", "debug, info (default), warn or error")
	f.StringVar(&o.LogFormat, "log-format", "console", "console or json")
	f.StringVar(&o.AccessLog, "access-log", "", "write an access log, one line per request with what became of it: a file's path (reopened on SIGHUP, for logrotate) or stdout (default: none)")
	f.StringVar(&o.AccessLogFormat, "access-log-format", "", "the access log's lines: json (default) or common (the common log format, waitroom's fields after it)")
	// Hidden and for tests only: the real-process fidelity run starts a node
	// with a wrong clock to show the ring agreeing on its time regardless.
	f.DurationVar(&clockOffset, "test-clock-offset", 0, "TEST ONLY, hidden: run the node on a clock this far off the machine's (e.g. 30s, -30s), to test the ring's agreed time; never use it in production")
	_ = f.MarkHidden("test-clock-offset")
	// Hidden and for tests only: the real-process restart tests kill a node
	// inside a save of its data directory.
	f.DurationVar(&writePause, "test-data-write-pause", 0, "TEST ONLY, hidden: pause every save of the data directory this long halfway through its file, so a test can kill the node inside a write")
	_ = f.MarkHidden("test-data-write-pause")
	// Hidden and for tests only: the real-process fidelity run puts its
	// data centers a WAN apart on one machine's loopback.
	f.DurationVar(&wanDelay, "test-wan-delay", 0, "TEST ONLY, hidden: with --datacenter, send every packet and stream write between data centers this much late (one way), as if the data centers were far apart; never use it in production")
	f.DurationVar(&wanJitter, "test-wan-jitter", 0, "TEST ONLY, hidden: with --test-wan-delay, add a uniform draw in [0, this) to each delay")
	f.Float64Var(&wanLoss, "test-wan-loss", 0, "TEST ONLY, hidden: lose this share (0 to below 1) of the packets sent between data centers")
	for _, name := range []string{"test-wan-delay", "test-wan-jitter", "test-wan-loss"} {
		_ = f.MarkHidden(name)
	}
	return cmd
}
