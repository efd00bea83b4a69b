// Package config is a node's configuration: the schema of the YAML file and
// of the room API (schema.go, with each setting's rules in its doc comment;
// a room's events, bypass rules and bot challenge in event.go, bypass.go and
// challenge.go), the defaults (defaults.go), strict loading with errors that
// name the key by its path and line (load.go), the command line's overrides
// (overrides.go), and validation that names the field and the allowed range
// and reports every problem at once (validate.go).
//
// It holds data and pure checks only: the edge compiles a loaded
// configuration into the rooms that serve requests. Routes and bypass paths
// are checked in the canonical spelling of package canon, the one the
// router matches requests in.
package config

// The configuration's schema: what a node's YAML file and the room API
// hold, each setting with its rules in its doc comment.

import (
	"time"

	"github.com/waitroom/waitroom/policy/duration"
)

// DefaultStaleAfter is how long a node may hear nothing from its peers
// before it counts as cut off: longer than memberlist's LAN push-pull
// interval (30 s), so a quiet but healthy cluster is not mistaken for a
// partition.
const DefaultStaleAfter = Duration(90 * time.Second)

// Config is a node's whole configuration: the YAML file given by --config.
//
// Read one with [Load] or [Parse], which apply the defaults and
// validate. A Config built in code should go through [Config.ApplyDefaults]
// and [Config.Validate] before use.
//
// Rules checked by Validate (besides each room's, see [Room]):
//
//   - node: 1–128 characters of letters, digits, '.', '_' and '-', starting
//     with a letter or digit. Default: the host name.
//   - listen, admin: host:port; host empty, an IP address or a host name;
//     port a number from 0 to 65535. Defaults ":8080" and "127.0.0.1:9090".
//   - gossip: ip:port (memberlist binds to an IP address, not a name); the
//     IP may be left out (":7946"). Default "0.0.0.0:7946"; a node without
//     seeds and without a gossip key gossips on loopback only (a wildcard
//     host becomes 127.0.0.1), since no other node could join it.
//   - listen, admin and gossip must not overlap: the same non-zero port on
//     the same host, or on a wildcard host ("", 0.0.0.0, ::).
//   - advertise: empty, an IP address, or ip:port (memberlist advertises an
//     IP address); without a port the gossip port is meant.
//   - seeds: each a host name or IP address, with an optional :port.
//   - gossip_profile: lan (default), local or wan.
//   - gossip_label: at most 255 bytes (memberlist's limit).
//   - gossip_lag: 0 (by profile: local 1s, lan 2s, wan 10s) or 100ms to 5m;
//     gossip_lag_measured: true (default) or false.
//   - gossip_key_file or $WAITROOM_GOSSIP_KEY: required on a node with seeds
//     or a non-loopback gossip address unless insecure_gossip is true
//     (checked when the node starts, as the key may come from elsewhere).
//   - log_level: debug, info (default), warn or error.
//   - access_log: empty (the default: no access log), stdout, or a file's
//     path, created or appended to and opened again on SIGHUP (for
//     logrotate); Load resolves a relative path against the config file's
//     directory. access_log_format: json (the default) or common; only
//     with access_log.
//   - origin: empty or an absolute http:// or https:// URL with a host and no
//     fragment. Rooms without their own origin inherit it; every room must end
//     up with one.
//   - origin_timeout: positive; 0 means the default 30s.
//   - unrouted: refuse (default) or pass; pass needs origin.
//   - admin_hosts: each a host name or IP address, without a port.
//   - max_connections: 0 (the default 10000) or 1 to 1000000.
//   - read_header_timeout: 0 (the default 10s) or 100ms to 5m.
//   - client_timeout, idle_timeout: 0 (the defaults 60s and 120s) or 100ms
//     to 1h.
//   - shutdown_timeout: 0 (the default 20s) or 100ms to 10m;
//     ready_alone_after: 0 (the default 5s) or 100ms to 10m.
//   - tls: see [TLSConfig].
//   - rooms: at least one; names unique; no route (host + path) used twice
//     across all rooms; two rooms that can be served on the same host (the
//     port does not count: browsers share cookies across ports; an empty host
//     is every host) must have different cookie names, that is different
//     cookie_suffix values.
//
// Enumerated values are case-sensitive and lower-case, as in Cloudflare's API.
type Config struct {
	Node      string   `yaml:"node" json:"node"`           // node name; default: hostname
	Listen    string   `yaml:"listen" json:"listen"`       // public HTTP listener, default ":8080"
	Admin     string   `yaml:"admin" json:"admin"`         // admin listener, default "127.0.0.1:9090"
	Gossip    string   `yaml:"gossip" json:"gossip"`       // gossip bind, default "0.0.0.0:7946"
	Advertise string   `yaml:"advertise" json:"advertise"` // gossip address told to peers: ip or ip:port
	Seeds     []string `yaml:"seeds" json:"seeds"`         // peers to join: host or host:port
	// GossipProfile picks memberlist's timing defaults: lan (default), local, wan.
	GossipProfile string `yaml:"gossip_profile" json:"gossip_profile"`
	// GossipKeyFile holds the gossip encryption keys (see edge.LoadGossipKeys).
	// Load resolves a relative path against the config file's directory.
	GossipKeyFile string `yaml:"gossip_key_file" json:"gossip_key_file"`
	GossipLabel   string `yaml:"gossip_label" json:"gossip_label"` // memberlist label: keeps clusters apart
	// Datacenter names the data center (the point of presence) the node
	// belongs to; default: the node's name, a data center of its own, as
	// a ring that names none has always run. The nodes of one data center
	// share its slots over their own gossip pool (seeds: its members),
	// and a few of them carry its figures to the other data centers over
	// a second pool (wan_gossip, wan_seeds). Every node of a ring names
	// one, or none does.
	Datacenter string `yaml:"datacenter" json:"datacenter,omitempty"`
	// WANGossip is the address the pool between data centers binds while
	// the node carries its data center's figures: default the gossip
	// address's host with the next port (0.0.0.0:7947), "ip:0" a free
	// port each time. WANAdvertise is the address the other data centers
	// should use, if not the bound one (default: advertise's IP with that
	// port).
	WANGossip    string `yaml:"wan_gossip" json:"wan_gossip,omitempty"`
	WANAdvertise string `yaml:"wan_advertise" json:"wan_advertise,omitempty"`
	// WANSeeds are addresses in the pool between data centers (host or
	// host:port, the port wan_gossip's when none): members of other data
	// centers that may carry. One reachable seed is enough.
	WANSeeds []string `yaml:"wan_seeds" json:"wan_seeds,omitempty"`
	// WANGossipProfile picks the timings of the pool between data
	// centers: wan (default), lan or local.
	WANGossipProfile string `yaml:"wan_gossip_profile" json:"wan_gossip_profile,omitempty"`
	// Carriers is how many members of the data center carry its figures
	// (1 to 5, default 2): the first in rank sends, the others stand by.
	Carriers int `yaml:"carriers" json:"carriers,omitempty"`
	// InsecureGossip runs gossip without a key: anyone who reaches the
	// gossip address can rewrite rooms and counts. Without a key and
	// without it, a node with seeds refuses to start, and a node without
	// seeds runs alone on loopback (decided by the edge when it starts).
	InsecureGossip bool `yaml:"insecure_gossip" json:"insecure_gossip,omitempty"`
	// CookieKeyFile holds the visitor cookie keys (see edge.LoadCookieKeys).
	// Load resolves a relative path against the config file's directory.
	CookieKeyFile string   `yaml:"cookie_key_file" json:"cookie_key_file"`
	Origin        string   `yaml:"origin" json:"origin"`                 // default origin URL for rooms without their own
	LogLevel      string   `yaml:"log_level" json:"log_level"`           // debug, info (default), warn, error
	OriginTimeout Duration `yaml:"origin_timeout" json:"origin_timeout"` // default 30s; written "30s"
	Rooms         []Room   `yaml:"rooms" json:"rooms"`

	// AccessLog is where the access log goes: one line per request with
	// what became of it (edge/accesslog); a file's path or "stdout", off
	// when empty. AccessLogFormat is json (default) or common.
	AccessLog       string `yaml:"access_log" json:"access_log,omitempty"`
	AccessLogFormat string `yaml:"access_log_format" json:"access_log_format,omitempty"`

	// AdminTokenFile holds the bearer token the admin endpoint asks for. It
	// is required when the admin listener is not on loopback; with it, every
	// request that changes something needs the token, and read-only ones do
	// too unless AdminReadOpen.
	AdminTokenFile string `yaml:"admin_token_file" json:"admin_token_file,omitempty"`
	AdminReadOpen  bool   `yaml:"admin_read_open" json:"admin_read_open,omitempty"`
	// DataDir is the node's data directory (see datadir.go): what the ring
	// was told (rooms and changes made at run time, stops, messages,
	// webhooks, used codes, counts) and the members it knew, kept so that a
	// node, or a whole ring, that stops at once comes back as it was. ""
	// keeps nothing, except under `waitroom serve`, which defaults it to
	// one directory per node in the user's config directory; DataDirOff
	// ("off") keeps nothing. Load resolves a relative path against the
	// config file's directory.
	DataDir string `yaml:"data_dir" json:"data_dir,omitempty"`
	// AdminHosts are the names, besides "localhost", loopback addresses and
	// the address a client reached the admin listener on, that admin
	// requests may carry in their Host header: the names a reverse proxy or
	// a metrics scraper uses to reach it. Requests naming any other host are
	// refused, so that a web page whose domain resolves to this machine (DNS
	// rebinding) cannot talk to the admin API.
	AdminHosts []string `yaml:"admin_hosts" json:"admin_hosts,omitempty"`
	// Webhooks are sent signed notices of the ring's state changes (see
	// webhooks.go).
	Webhooks []Webhook `yaml:"webhooks" json:"webhooks,omitempty"`
	// WebhookNetwork says which addresses webhooks may reach besides the
	// public internet (see webhooks.go).
	WebhookNetwork WebhookNetwork `yaml:"webhook_network" json:"webhook_network,omitempty"`

	// MaxConnections caps the public listener's open connections; further
	// clients wait in the kernel's accept queue until one closes. Default
	// 10000.
	MaxConnections int `yaml:"max_connections" json:"max_connections,omitempty"`
	// ReadHeaderTimeout is how long a client has to send a request's line
	// and headers on the public listener. Default 10s.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout" json:"read_header_timeout,omitempty"`
	// ClientTimeout is the longest a client of the public listener may
	// stall: between two reads of a request body, and between two writes
	// of a response it does not take in. Time spent waiting for the origin
	// does not count, so slow origins and long downloads are not cut.
	// Default 60s.
	ClientTimeout Duration `yaml:"client_timeout" json:"client_timeout,omitempty"`
	// IdleTimeout is how long a kept-alive connection may wait for its next
	// request. Default 120s: longer than the idle timeouts of common load
	// balancers, which must close first.
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// ShutdownTimeout is how long a stopping node (SIGTERM) lets requests
	// in flight finish before it cuts them; then it hands over its counts
	// and leaves the ring. Default 20s.
	ShutdownTimeout Duration `yaml:"shutdown_timeout" json:"shutdown_timeout,omitempty"`
	// ReadyAloneAfter is how long a node without seeds waits for a peer
	// before /readyz reports it ready alone. Default 5s.
	ReadyAloneAfter Duration `yaml:"ready_alone_after" json:"ready_alone_after,omitempty"`

	// GossipLag bounds how late other nodes' admissions reach this one
	// through gossip; the policy divides a minute's slots so that the nodes
	// together cannot overshoot by more than what is admitted within it. It
	// must cover the real delay. Default by profile: local 1s, lan 2s,
	// wan 10s.
	GossipLag Duration `yaml:"gossip_lag" json:"gossip_lag,omitempty"`
	// GossipLagMeasured (default true) lets the policy assume the gossip
	// delay this node measures instead of GossipLag, once every live peer
	// has given enough samples: twice the measured delay plus the time an
	// allocation takes to follow a merge, at least 150ms and never more
	// than GossipLag. The configured bound is far above what a ring
	// usually sees, and each second of it leaves (nodes − 1) × the
	// admission rate × that second of the limits unused at the start of
	// a flood. false always assumes GossipLag.
	GossipLagMeasured *bool `yaml:"gossip_lag_measured" json:"gossip_lag_measured,omitempty"`

	// StaleState is what a node does when it has lost touch with its peers
	// (no other member, or no gossip for StaleAfter): "open" (default)
	// keeps deciding from the state it has, so the site stays reachable at
	// the risk of overshooting the limits by the other nodes' admissions;
	// "closed" queues every new visitor (admitted sessions go on) until it
	// hears from the cluster again, holding the limits at the cost of
	// queueing.
	StaleState string   `yaml:"stale_state" json:"stale_state,omitempty"`
	StaleAfter Duration `yaml:"stale_after" json:"stale_after,omitempty"` // default 90s: longer than a push-pull round

	// Unrouted is what a node does with a request that matches no room's
	// route (after its path and host are put in canonical form): "refuse"
	// (the default) answers 404, counted; "pass" sends it to the default
	// origin, uncounted and unqueued. Pass is only safe when nothing behind
	// that origin needs protecting outside the rooms' routes: every
	// address the routes miss (another host name, another spelling of a
	// path on a case-insensitive origin) reaches the origin as it is.
	Unrouted string `yaml:"unrouted" json:"unrouted,omitempty"`

	// ForwardAuth is forward-auth mode: the decision endpoint a proxy in
	// front asks (see [ForwardAuthConfig], forward.go).
	ForwardAuth ForwardAuthConfig `yaml:"forward_auth" json:"forward_auth,omitempty"`

	// TLS makes the public listener speak HTTPS, with certificate files or
	// ACME (tls.go holds its schema, rules and flags).
	TLS TLSConfig `yaml:"tls" json:"tls"`

	// Modified is when the config file was last written (Load sets
	// it). The rooms it lists are stamped with it when they seed the
	// replicated room settings, so a file edited after a runtime change
	// wins, and a runtime change made after the file was written wins.
	Modified time.Time `yaml:"-" json:"-"`
	// Path is the config file Load read ("" for a config made otherwise).
	Path string `yaml:"-" json:"-"`
}

// Route is one host and path a room protects. An empty host is any host. A
// path covers itself and everything below it; how a request is matched to a
// route is the router's business, not the configuration's.
type Route struct {
	Host string `yaml:"host" json:"host"`
	Path string `yaml:"path" json:"path"`
}

// CookieAttributes are the visitor cookie's SameSite and Secure attributes, as
// in Cloudflare's API.
type CookieAttributes struct {
	SameSite string `yaml:"samesite" json:"samesite"` // auto (default), lax, strict, none
	Secure   string `yaml:"secure" json:"secure"`     // auto (default), always, never
}

// Room is one waiting room. The field names are those of Cloudflare's
// waiting room API, so a room exported from Cloudflare (as JSON, which is YAML
// too) loads as it is; the API's read-only and not-yet-supported fields (id,
// created_on, modified_on,
// next_event_prequeue_start_time, next_event_start_time, errors) are accepted
// and ignored. Origin, MaxQueue, Message and Closed are waitroom's own.
//
// Rules checked by Validate:
//
//   - name: required, 1–64 characters of a–z, 0–9, '_' and '-', starting with
//     a letter or digit; unique within the config. It is the room's identity
//     (tokens are bound to it), so renaming a room requeues its visitors.
//   - host: empty (any host) or a host name or IP address (IPv6 in brackets),
//     with an optional :port from 1 to 65535. It is lower-cased and a trailing
//     dot is dropped. No wildcards.
//   - path: starts with "/"; default "/". Runs of "/" are collapsed; "." and
//     ".." segments (also encoded), "?", "#", spaces, control characters,
//     backslashes, encoded slashes and backslashes ("%2F", "%5C") and double
//     encoding ("%252e") are refused. The case is kept: paths are
//     case-sensitive. Requests are matched in canonical form (see
//     package canon): "/sh%6Fp" is "/shop", ";parameters" are ignored, and a
//     path ending in "/" also covers itself without the "/".
//   - additional_routes: each a host and path as above; an empty host means
//     the room's own host, an empty path "/". No route may repeat another of
//     the room's routes.
//   - origin: empty (the config's origin is used) or an absolute http:// or
//     https:// URL with a host and no fragment.
//   - total_active_users: 1 to 2147483647.
//   - new_users_per_minute: 1 to total_active_users.
//   - session_duration: minutes, 1 to 30; 0 means the default 5.
//   - queueing_method: fifo (default), random, passthrough or reject.
//   - queueing_status_code: 200 (default), 202 or 429; 0 means 200.
//   - cookie_suffix: up to 32 characters of A–Z, a–z, 0–9 and '_'.
//   - cookie_attributes: samesite auto (default), lax, strict or none; secure
//     auto (default), always or never; samesite none with secure never is
//     refused, since browsers drop such a cookie.
//   - custom_page_html: empty (the built-in page) or a Mustache template that
//     parses. Partials ({{> name}}) are refused: rendering one would read a
//     file from the node's disk. Besides the reference's variables it may use
//     cookiesRequired and refreshURL (the edge's cookie check); a meta refresh
//     must name refreshURL, or the browser follows it rather than the
//     Refresh header's cookie check:
//     content="{{refreshIntervalSeconds}}{{#refreshURL}}; url={{refreshURL}}{{/refreshURL}}".
//     A page that does not use cookiesRequired gets the built-in
//     cookies-required page.
//   - enabled_origin_commands: each "revoke".
//   - max_queue: 0 (unlimited) or more.
//   - turnstile_*: see challenge.go; description is not checked.
//   - default_template_language, message, closed: see page.go.
type Room struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	Host        string `yaml:"host" json:"host"`
	Path        string `yaml:"path" json:"path"`
	// Origin is waitroom's own: this room's origin URL (else Config.Origin).
	Origin           string  `yaml:"origin" json:"origin"`
	AdditionalRoutes []Route `yaml:"additional_routes" json:"additional_routes"`

	TotalActiveUsers  int `yaml:"total_active_users" json:"total_active_users"`
	NewUsersPerMinute int `yaml:"new_users_per_minute" json:"new_users_per_minute"`
	SessionDuration   int `yaml:"session_duration" json:"session_duration"` // minutes 1–30, default 5

	QueueingMethod        string `yaml:"queueing_method" json:"queueing_method"` // fifo (default), random, passthrough, reject
	QueueAll              bool   `yaml:"queue_all" json:"queue_all"`
	Suspended             bool   `yaml:"suspended" json:"suspended"`
	DisableSessionRenewal bool   `yaml:"disable_session_renewal" json:"disable_session_renewal"`
	JSONResponseEnabled   bool   `yaml:"json_response_enabled" json:"json_response_enabled"`

	CookieSuffix     string           `yaml:"cookie_suffix" json:"cookie_suffix"`
	CookieAttributes CookieAttributes `yaml:"cookie_attributes" json:"cookie_attributes"`

	CustomPageHTML        string   `yaml:"custom_page_html" json:"custom_page_html"`         // Mustache template
	QueueingStatusCode    int      `yaml:"queueing_status_code" json:"queueing_status_code"` // 200 (default), 202, 429
	EnabledOriginCommands []string `yaml:"enabled_origin_commands" json:"enabled_origin_commands"`

	// The bot challenge on the queue page (Cloudflare's turnstile_mode and
	// turnstile_action, plus what a self-hosted verifier needs). Their
	// rules are in challenge.go.
	TurnstileMode      string   `yaml:"turnstile_mode" json:"turnstile_mode,omitempty"`         // off (default), invisible, visible_non_interactive, visible_managed
	TurnstileAction    string   `yaml:"turnstile_action" json:"turnstile_action,omitempty"`     // log (default), infinite_queue
	TurnstileProvider  string   `yaml:"turnstile_provider" json:"turnstile_provider,omitempty"` // turnstile (default), hcaptcha, recaptcha
	TurnstileSiteKey   string   `yaml:"turnstile_site_key" json:"turnstile_site_key,omitempty"`
	TurnstileSecret    string   `yaml:"turnstile_secret" json:"turnstile_secret,omitempty"`
	TurnstileVerifyURL string   `yaml:"turnstile_siteverify_url" json:"turnstile_siteverify_url,omitempty"` // default: the provider's siteverify
	TurnstileScriptURL string   `yaml:"turnstile_script_url" json:"turnstile_script_url,omitempty"`         // default: the provider's widget script
	TurnstileTimeout   Duration `yaml:"turnstile_timeout" json:"turnstile_timeout,omitempty"`               // default 3s
	TurnstileOnError   string   `yaml:"turnstile_on_error" json:"turnstile_on_error,omitempty"`             // allow (fail open, default) or deny (fail closed) when the verifier cannot answer

	// MaxQueue is waitroom's own: the most visitors allowed to wait; 0 is
	// unlimited.
	MaxQueue int `yaml:"max_queue" json:"max_queue"`

	// Events are the room's scheduled events (see Event).
	Events []Event `yaml:"events" json:"events,omitempty"`
	// Bypass rules send matching requests straight to the origin, uncounted.
	Bypass []BypassRule `yaml:"bypass" json:"bypass,omitempty"`
	// Stopped is the emergency stop: everyone, admitted visitors included,
	// waits behind StopPageHTML (or the built-in paused page) until it is
	// cleared. Sessions keep their tokens, so a resume lets them back in.
	Stopped      bool   `yaml:"stopped" json:"stopped,omitempty"`
	StopPageHTML string `yaml:"stop_page_html" json:"stop_page_html,omitempty"`
	// PriorityGroups and InviteOnly are priority access by code (see
	// PriorityGroup).
	PriorityGroups []PriorityGroup `yaml:"priority_groups" json:"priority_groups,omitempty"`
	InviteOnly     bool            `yaml:"invite_only" json:"invite_only,omitempty"`

	// The visitor's page beyond the limits (page.go holds their rules):
	// the language of the built-in page, the operator's message and the
	// closed (sold-out) state.
	DefaultTemplateLanguage string `yaml:"default_template_language" json:"default_template_language,omitempty"`
	Message                 string `yaml:"message" json:"message,omitempty"`
	Closed                  bool   `yaml:"closed" json:"closed,omitempty"`

	cloudflareOnly `yaml:",inline"`
}

// cloudflareOnly holds the fields of Cloudflare's waiting room API that
// waitroom accepts, so that an exported room loads under strict decoding, and
// then ignores. They may hold anything.
type cloudflareOnly struct {
	ID                         any `yaml:"id" json:"id,omitempty"`
	CreatedOn                  any `yaml:"created_on" json:"created_on,omitempty"`
	ModifiedOn                 any `yaml:"modified_on" json:"modified_on,omitempty"`
	NextEventPrequeueStartTime any `yaml:"next_event_prequeue_start_time" json:"next_event_prequeue_start_time,omitempty"`
	NextEventStartTime         any `yaml:"next_event_start_time" json:"next_event_start_time,omitempty"`
	Errors                     any `yaml:"errors" json:"errors,omitempty"`
}

// Duration is a time.Duration written as a string with a unit ("30s",
// "1m30s") in YAML and JSON, in the one grammar of package policy/duration,
// which the simulator's scenarios share.
type Duration = duration.Duration
