package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cbroglie/mustache"
	"gopkg.in/yaml.v3"
)

// Defaults filled in by [Config.ApplyDefaults] and [RoomConfig.ApplyDefaults].
const (
	DefaultListen             = ":8080"
	DefaultAdmin              = "127.0.0.1:9090"
	DefaultGossip             = "0.0.0.0:7946"
	DefaultGossipProfile      = "lan"
	DefaultLogLevel           = "info"
	DefaultOriginTimeout      = 30 * time.Second
	DefaultPath               = "/"
	DefaultSessionDuration    = 5 // minutes
	DefaultQueueingMethod     = "fifo"
	DefaultQueueingStatusCode = 200
	DefaultSameSite           = "auto"
	DefaultSecure             = "auto"

	// UnroutedRefuse and UnroutedPass are the values of unrouted.
	UnroutedRefuse = "refuse"
	UnroutedPass   = "pass"

	// The public listener's limits; see [Config] and the README.
	DefaultMaxConnections    = 10000
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultClientTimeout     = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second

	// DefaultShutdownTimeout bounds how long a stopping node lets requests
	// in flight finish: with the hand-over of its counts and its leave
	// after it, a stop fits Kubernetes' default grace period of 30s.
	DefaultShutdownTimeout = 20 * time.Second
	// DefaultReadyAloneAfter is how long a node without seeds waits for a
	// peer to reach it before it reports ready alone.
	DefaultReadyAloneAfter = 5 * time.Second

	// CookieBaseName is the visitor cookie's name for a room without a
	// cookie_suffix; with one it is CookieBaseName + "_" + suffix.
	CookieBaseName = "__waitroom"

	// MaxTotalActiveUsers is the largest total_active_users (and so the
	// largest new_users_per_minute): the largest int32, as Cloudflare's API.
	MaxTotalActiveUsers = 2147483647

	// MaxConfigSize is the largest configuration ParseConfig reads.
	MaxConfigSize = 8 << 20
)

// The allowed values of the enumerated settings, in the order error messages
// list them.
var (
	gossipProfiles  = []string{"lan", "local", "wan"}
	logLevels       = []string{"debug", "info", "warn", "error"}
	queueingMethods = []string{"fifo", "random", "passthrough", "reject"}
	statusCodes     = []int{200, 202, 429}
	sameSites       = []string{"auto", "lax", "strict", "none"}
	secures         = []string{"auto", "always", "never"}
	originCommands  = []string{"revoke"}
)

var (
	roomNameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	cookieSuffixRE = regexp.MustCompile(`^[A-Za-z0-9_]{0,32}$`)
	nodeNameRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// DefaultStaleAfter is how long a node may hear nothing from its peers
// before it counts as cut off: longer than memberlist's LAN push-pull
// interval (30 s), so a quiet but healthy cluster is not mistaken for a
// partition.
const DefaultStaleAfter = Duration(90 * time.Second)

// Config is a node's whole configuration: the YAML file given by --config.
//
// Read one with [LoadConfig] or [ParseConfig], which apply the defaults and
// validate. A Config built in code should go through [Config.ApplyDefaults]
// and [Config.Validate] before use.
//
// Rules checked by Validate (besides each room's, see [RoomConfig]):
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
	// GossipKeyFile holds the gossip encryption keys (see [LoadGossipKeys]).
	// LoadConfig resolves a relative path against the config file's directory.
	GossipKeyFile string `yaml:"gossip_key_file" json:"gossip_key_file"`
	GossipLabel   string `yaml:"gossip_label" json:"gossip_label"` // memberlist label: keeps clusters apart
	// InsecureGossip runs gossip without a key: anyone who reaches the
	// gossip address can rewrite rooms and counts. Without a key and
	// without it, a node with seeds refuses to start, and a node without
	// seeds runs alone on loopback (see gossipSecurityOf).
	InsecureGossip bool `yaml:"insecure_gossip" json:"insecure_gossip,omitempty"`
	// CookieKeyFile holds the visitor cookie keys (see [LoadCookieKeys]).
	// LoadConfig resolves a relative path against the config file's directory.
	CookieKeyFile string       `yaml:"cookie_key_file" json:"cookie_key_file"`
	Origin        string       `yaml:"origin" json:"origin"`                 // default origin URL for rooms without their own
	LogLevel      string       `yaml:"log_level" json:"log_level"`           // debug, info (default), warn, error
	OriginTimeout Duration     `yaml:"origin_timeout" json:"origin_timeout"` // default 30s; written "30s"
	Rooms         []RoomConfig `yaml:"rooms" json:"rooms"`

	// AdminTokenFile holds the bearer token the admin endpoint asks for. It
	// is required when the admin listener is not on loopback; with it, every
	// request that changes something needs the token, and read-only ones do
	// too unless AdminReadOpen.
	AdminTokenFile string `yaml:"admin_token_file" json:"admin_token_file,omitempty"`
	AdminReadOpen  bool   `yaml:"admin_read_open" json:"admin_read_open,omitempty"`
	// AdminHosts are the names, besides "localhost", loopback addresses and
	// the address a client reached the admin listener on, that admin
	// requests may carry in their Host header: the names a reverse proxy or
	// a metrics scraper uses to reach it. Requests naming any other host are
	// refused, so that a web page whose domain resolves to this machine (DNS
	// rebinding) cannot talk to the admin API.
	AdminHosts []string `yaml:"admin_hosts" json:"admin_hosts,omitempty"`

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

	// Modified is when the config file was last written (LoadConfig sets
	// it). The rooms it lists are stamped with it when they seed the
	// replicated room settings, so a file edited after a runtime change
	// wins, and a runtime change made after the file was written wins.
	Modified time.Time `yaml:"-" json:"-"`
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

// RoomConfig is one waiting room. The field names are those of Cloudflare's
// waiting room API, so a room exported from Cloudflare (as JSON, which is YAML
// too) loads as it is; the API's read-only and not-yet-supported fields (id,
// created_on, modified_on, default_template_language,
// next_event_prequeue_start_time, next_event_start_time, errors) are accepted
// and ignored. Origin and MaxQueue are waitroom's own.
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
//     canonicalise): "/sh%6Fp" is "/shop", ";parameters" are ignored, and a
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
//     cookiesRequired and refreshURL (see cookieCheckParam); a meta refresh
//     must name refreshURL, or the browser follows it rather than the
//     Refresh header's cookie check:
//     content="{{refreshIntervalSeconds}}{{#refreshURL}}; url={{refreshURL}}{{/refreshURL}}".
//     A page that does not use cookiesRequired gets the built-in
//     cookies-required page.
//   - enabled_origin_commands: each "revoke".
//   - max_queue: 0 (unlimited) or more.
//   - turnstile_*: see validateChallenge; description is not checked.
type RoomConfig struct {
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
	// turnstile_action, plus what a self-hosted verifier needs). See
	// challenge.go.
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

	// Events are the room's scheduled events (see EventConfig).
	Events []EventConfig `yaml:"events" json:"events,omitempty"`
	// Bypass rules send matching requests straight to the origin, uncounted.
	Bypass []BypassRule `yaml:"bypass" json:"bypass,omitempty"`
	// Stopped is the emergency stop: everyone, admitted visitors included,
	// waits behind StopPageHTML (or the built-in paused page) until it is
	// cleared. Sessions keep their tokens, so a resume lets them back in.
	Stopped      bool   `yaml:"stopped" json:"stopped,omitempty"`
	StopPageHTML string `yaml:"stop_page_html" json:"stop_page_html,omitempty"`

	cloudflareOnly `yaml:",inline"`
}

// cloudflareOnly holds the fields of Cloudflare's waiting room API that
// waitroom accepts, so that an exported room loads under strict decoding, and
// then ignores. They may hold anything.
type cloudflareOnly struct {
	ID                         any `yaml:"id" json:"id,omitempty"`
	CreatedOn                  any `yaml:"created_on" json:"created_on,omitempty"`
	ModifiedOn                 any `yaml:"modified_on" json:"modified_on,omitempty"`
	DefaultTemplateLanguage    any `yaml:"default_template_language" json:"default_template_language,omitempty"`
	NextEventPrequeueStartTime any `yaml:"next_event_prequeue_start_time" json:"next_event_prequeue_start_time,omitempty"`
	NextEventStartTime         any `yaml:"next_event_start_time" json:"next_event_start_time,omitempty"`
	Errors                     any `yaml:"errors" json:"errors,omitempty"`
}

// Duration is a time.Duration written as a string with a unit ("30s", "1m30s")
// in YAML and JSON. A bare number other than 0 is refused: "30" could mean
// seconds or nanoseconds.
type Duration time.Duration

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes d as a string such as "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string such as "30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration such as \"30s\", not a list or mapping", n.Line)}}
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// MarshalJSON writes d as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "30s"; null leaves d alone.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func parseDuration(s string) (Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number with a unit, such as \"30s\" or \"1m\"", s)
	}
	return Duration(v), nil
}

// LoadConfig reads the configuration file at path and returns it with defaults
// applied and validated (see [ParseConfig]). Relative gossip_key_file and
// cookie_key_file paths are resolved against the file's directory. Every error
// names the path.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the path
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	if st, err := f.Stat(); err == nil {
		c.Modified = st.ModTime()
	}
	dir := filepath.Dir(path)
	for _, p := range []*string{&c.GossipKeyFile, &c.CookieKeyFile, &c.AdminTokenFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return c, nil
}

// fileError puts a file name in front of an error; a multi-line error (joined
// problems) gets one indented problem per line.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	msg := e.err.Error()
	if !strings.Contains(msg, "\n") {
		return e.path + ": " + msg
	}
	return e.path + ":\n\t" + strings.ReplaceAll(msg, "\n", "\n\t")
}

func (e *fileError) Unwrap() error { return e.err }

// ParseConfig reads a configuration from YAML (or JSON, which is read as YAML)
// strictly: an unknown key, a key given twice, a value of the wrong type or a
// second YAML document is an error naming the key and its line. It then
// applies the defaults and validates; on any error it returns a nil Config and
// every problem found, joined.
func ParseConfig(data []byte) (*Config, error) {
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("config is over %d bytes", MaxConfigSize)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	data = jsonForYAML(data)
	c, err := decodeConfig(data)
	if err != nil {
		return nil, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeConfig decodes one YAML document strictly.
func decodeConfig(data []byte) (c *Config, err error) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a config error must
		// stay an error.
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("config: YAML decoder failed: %v", p)
		}
	}()
	c = new(Config)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("config is empty: it needs at least a node name or one room")
		}
		return nil, explainYAML(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, fmt.Errorf("line %d: config holds a second YAML document; put everything in one", extra.Line)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	return c, nil
}

// jsonForYAML rewrites the string literals of a JSON document into the
// subset of escapes YAML reads the same way: YAML knows neither "\/" nor
// surrogate pairs ("\ud83d\ude00"). Line breaks are kept, so line numbers in
// errors still match the file. Anything that is not valid JSON is returned as
// it is.
func jsonForYAML(data []byte) []byte {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') || !json.Valid(data) {
		return data
	}
	if bytes.IndexByte(data, '\\') < 0 {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		if data[i] != '"' {
			out = append(out, data[i])
			i++
			continue
		}
		j := i + 1
		for data[j] != '"' { // valid JSON: every string is closed
			if data[j] == '\\' {
				j++
			}
			j++
		}
		lit := data[i : j+1]
		i = j + 1
		if bytes.IndexByte(lit, '\\') < 0 {
			out = append(out, lit...)
			continue
		}
		var s string
		if err := json.Unmarshal(lit, &s); err != nil {
			out = append(out, lit...)
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			out = append(out, lit...)
			continue
		}
		out = append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	}
	return out
}

// ApplyDefaults fills in every unset setting, of the config and of each room
// (see [RoomConfig.ApplyDefaults]), and normalises hosts and paths. A room
// without an origin gets the config's. It is idempotent.
func (c *Config) ApplyDefaults() {
	if c.Node == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			c.Node = h
		} else {
			c.Node = "waitroom"
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Admin == "" {
		c.Admin = DefaultAdmin
	}
	if c.Gossip == "" {
		c.Gossip = DefaultGossip
	}
	if c.GossipProfile == "" {
		c.GossipProfile = DefaultGossipProfile
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.OriginTimeout == 0 {
		c.OriginTimeout = Duration(DefaultOriginTimeout)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = Duration(DefaultReadHeaderTimeout)
	}
	if c.ClientTimeout == 0 {
		c.ClientTimeout = Duration(DefaultClientTimeout)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = Duration(DefaultIdleTimeout)
	}
	for i := range c.Rooms {
		r := &c.Rooms[i]
		if r.Origin == "" {
			r.Origin = c.Origin
		}
		r.ApplyDefaults()
	}
}

// ApplyDefaults fills in the room's unset settings (path "/",
// session_duration 5, queueing_method fifo, queueing_status_code 200,
// samesite and secure auto) and normalises its routes as [RoomConfig.Routes]
// does. It is idempotent.
func (r *RoomConfig) ApplyDefaults() {
	r.Host = normHost(r.Host)
	r.Path = normPath(r.Path)
	for i := range r.AdditionalRoutes {
		r.AdditionalRoutes[i] = r.normRoute(r.AdditionalRoutes[i])
	}
	if r.SessionDuration == 0 {
		r.SessionDuration = DefaultSessionDuration
	}
	for i := range r.Events {
		if r.Events[i].ID == "" {
			r.Events[i].ID = strconv.Itoa(i)
		}
	}
	if r.QueueingMethod == "" {
		r.QueueingMethod = DefaultQueueingMethod
	}
	if r.QueueingStatusCode == 0 {
		r.QueueingStatusCode = DefaultQueueingStatusCode
	}
	if r.CookieAttributes.SameSite == "" {
		r.CookieAttributes.SameSite = DefaultSameSite
	}
	if r.CookieAttributes.Secure == "" {
		r.CookieAttributes.Secure = DefaultSecure
	}
}

// CookieName is the name of the room's visitor cookie: "__waitroom", or
// "__waitroom_<cookie_suffix>".
func (r *RoomConfig) CookieName() string {
	if r.CookieSuffix == "" {
		return CookieBaseName
	}
	return CookieBaseName + "_" + r.CookieSuffix
}

// Routes returns the room's host and path followed by its additional_routes,
// normalised: hosts lower-cased without a trailing dot, an empty path "/",
// runs of "/" collapsed, and an additional route without a host on the
// room's host. It returns a new slice.
func (r *RoomConfig) Routes() []Route {
	routes := make([]Route, 0, 1+len(r.AdditionalRoutes))
	routes = append(routes, Route{Host: normHost(r.Host), Path: normPath(r.Path)})
	for _, rt := range r.AdditionalRoutes {
		routes = append(routes, r.normRoute(rt))
	}
	return routes
}

func (r *RoomConfig) normRoute(rt Route) Route {
	rt.Host = normHost(rt.Host)
	if rt.Host == "" {
		rt.Host = normHost(r.Host)
	}
	rt.Path = normPath(rt.Path)
	return rt
}

// normHost lower-cases a host and drops a trailing dot from its name.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	name, port := h, ""
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") && strings.Count(h, ":") == 1 {
		name, port = h[:i], h[i:]
	}
	name = strings.TrimSuffix(name, ".")
	return name + port
}

// normPath defaults an empty path to "/" and collapses runs of "/".
func normPath(p string) string {
	if p == "" {
		return DefaultPath
	}
	if !strings.Contains(p, "//") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// problems collects validation errors, each prefixed with a field path.
type problems struct {
	prefix string
	errs   []error
}

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, errors.New(p.prefix+field+": "+fmt.Sprintf(format, args...)))
}

// Validate checks the config and every room (see [Config] and [RoomConfig]
// for the rules). It judges the config as [Config.ApplyDefaults] would leave
// it, without changing it. It returns nil or every problem joined with
// errors.Join, each naming the field path and what is allowed, such as
//
//	rooms[0] ("shop").new_users_per_minute: 900 must be ≤ total_active_users (500)
func (c *Config) Validate() error {
	cc := c.clone()
	cc.ApplyDefaults()
	return errors.Join(cc.validate()...)
}

// clone copies the config deeply enough for ApplyDefaults not to touch c.
func (c *Config) clone() *Config {
	cc := *c
	cc.Rooms = slices.Clone(c.Rooms)
	for i := range cc.Rooms {
		cc.Rooms[i].AdditionalRoutes = slices.Clone(cc.Rooms[i].AdditionalRoutes)
		cc.Rooms[i].Events = slices.Clone(cc.Rooms[i].Events)
		cc.Rooms[i].Bypass = slices.Clone(cc.Rooms[i].Bypass)
	}
	return &cc
}

func (c *Config) validate() []error {
	p := &problems{}
	if !nodeNameRE.MatchString(c.Node) {
		p.add("node", "%q must be 1–128 characters of letters, digits, '.', '_' and '-', starting with a letter or digit (the default is the host name)", c.Node)
	}
	type listener struct {
		field, host string
		port        int
	}
	var listeners []listener
	for _, l := range []struct{ field, value, example string }{
		{"listen", c.Listen, DefaultListen},
		{"admin", c.Admin, DefaultAdmin},
		{"gossip", c.Gossip, DefaultGossip},
	} {
		host, port, err := splitListen(l.value, l.field == "gossip")
		if err != nil {
			p.add(l.field, "%q %v, such as %q", l.value, err, l.example)
			continue
		}
		listeners = append(listeners, listener{l.field, host, port})
	}
	for i, a := range listeners {
		for _, b := range listeners[:i] {
			if a.port != 0 && a.port == b.port && (a.host == b.host || isWildcard(a.host) || isWildcard(b.host)) {
				p.add(a.field, "%s overlaps %s (%s); give them different ports",
					net.JoinHostPort(a.host, strconv.Itoa(a.port)), b.field, net.JoinHostPort(b.host, strconv.Itoa(b.port)))
			}
		}
	}
	for _, l := range listeners {
		if l.field == "admin" && !isLoopbackHost(l.host) && c.AdminTokenFile == "" {
			p.add("admin", "%q is not a loopback address: set admin_token_file so that only holders of the token can change rooms (or listen on 127.0.0.1)", c.Admin)
		}
	}
	for i, h := range c.AdminHosts {
		if !isHostname(strings.TrimSuffix(h, ".")) && !isIPHost(h) {
			p.add(fmt.Sprintf("admin_hosts[%d]", i), "%q must be a host name or IP address without a port, as clients write it in the Host header (such as \"waitroom-admin.internal\")", h)
		}
	}
	if c.MaxConnections < 0 || c.MaxConnections > 1000000 {
		p.add("max_connections", "%d must be from 1 to 1000000 (default %d)", c.MaxConnections, DefaultMaxConnections)
	}
	for _, d := range []struct {
		field    string
		v        Duration
		max, def time.Duration
	}{
		{"read_header_timeout", c.ReadHeaderTimeout, 5 * time.Minute, DefaultReadHeaderTimeout},
		{"client_timeout", c.ClientTimeout, time.Hour, DefaultClientTimeout},
		{"idle_timeout", c.IdleTimeout, time.Hour, DefaultIdleTimeout},
		{"shutdown_timeout", c.ShutdownTimeout, 10 * time.Minute, DefaultShutdownTimeout},
		{"ready_alone_after", c.ReadyAloneAfter, 10 * time.Minute, DefaultReadyAloneAfter},
	} {
		if v := time.Duration(d.v); v < 0 || (v > 0 && v < 100*time.Millisecond) || v > d.max {
			p.add(d.field, "%v must be from 100ms to %v (default %v)", d.v, Duration(d.max), Duration(d.def))
		}
	}
	if c.GossipLag < 0 || (c.GossipLag > 0 && time.Duration(c.GossipLag) < 100*time.Millisecond) || time.Duration(c.GossipLag) > 5*time.Minute {
		p.add("gossip_lag", "%v must be from 100ms to 5m (default by gossip_profile: local 1s, lan 2s, wan 10s)", c.GossipLag)
	}
	if c.StaleState != "" && c.StaleState != "open" && c.StaleState != "closed" {
		p.add("stale_state", "%q must be open (keep deciding alone) or closed (queue new visitors)", c.StaleState)
	}
	switch c.Unrouted {
	case "", UnroutedRefuse:
	case UnroutedPass:
		if c.Origin == "" {
			p.add("unrouted", "pass needs origin: the default origin that requests matching no room go to")
		}
	default:
		p.add("unrouted", "%q must be refuse (the default: 404 for a request no room routes) or pass (send it to the default origin, unqueued)", c.Unrouted)
	}
	if c.StaleAfter < 0 || (c.StaleAfter > 0 && time.Duration(c.StaleAfter) < time.Second) {
		p.add("stale_after", "%v must be at least 1s (default %v)", c.StaleAfter, DefaultStaleAfter)
	}
	if c.Advertise != "" {
		if err := checkAdvertise(c.Advertise); err != nil {
			p.add("advertise", "%q %v", c.Advertise, err)
		}
	}
	for i, s := range c.Seeds {
		if err := checkHostPort(s); err != nil {
			p.add(fmt.Sprintf("seeds[%d]", i), "%q %v", s, err)
		}
	}
	if !slices.Contains(gossipProfiles, c.GossipProfile) {
		p.add("gossip_profile", "%q must be one of %s", c.GossipProfile, strings.Join(gossipProfiles, ", "))
	}
	if len(c.GossipLabel) > 255 {
		p.add("gossip_label", "is %d bytes; the limit is 255", len(c.GossipLabel))
	}
	if !slices.Contains(logLevels, c.LogLevel) {
		p.add("log_level", "%q must be one of %s", c.LogLevel, strings.Join(logLevels, ", "))
	}
	if c.Origin != "" {
		if err := checkOrigin(c.Origin); err != nil {
			p.add("origin", "%q %v", c.Origin, err)
		}
	}
	if c.OriginTimeout < 0 {
		p.add("origin_timeout", "%v must be positive (the default is %v)", c.OriginTimeout, DefaultOriginTimeout)
	}

	// Each room on its own, then the rules across rooms.
	labels := make([]string, len(c.Rooms))
	for i := range c.Rooms {
		labels[i] = roomLabel(i, c.Rooms[i].Name)
	}
	type routeUse struct {
		room  int
		field string
	}
	names := map[string]int{}
	routes := map[Route]routeUse{}
	for i := range c.Rooms {
		r := &c.Rooms[i]
		rp := &problems{prefix: labels[i] + "."}
		if r.Origin == c.Origin { // inherited: judged once, at the top level
			rc := *r
			rc.Origin = ""
			rc.validate(rp)
		} else {
			r.validate(rp)
		}
		if r.Origin == "" {
			rp.add("origin", "is required: set origin on the room or at the top level (an absolute http:// or https:// URL)")
		}
		if j, dup := names[r.Name]; dup && r.Name != "" {
			rp.add("name", "%q is already the name of %s", r.Name, labels[j])
		} else {
			names[r.Name] = i
		}
		for k, rt := range r.Routes() {
			field := "path"
			if k > 0 {
				field = fmt.Sprintf("additional_routes[%d]", k-1)
			}
			if prev, dup := routes[rt]; dup {
				if prev.room != i { // repeats within a room are reported by r.validate
					rp.add(field, "route %s is already used by %s (%s)", routeString(rt), labels[prev.room], prev.field)
				}
				continue
			}
			routes[rt] = routeUse{i, field}
		}
		p.errs = append(p.errs, rp.errs...)
	}
	// Cookie collisions: rooms sharing a host (an empty host shares every
	// host; ports do not separate cookies) must have different cookie names.
	// Each room is checked against the earlier ones in one pass over the
	// routes, so many rooms with many routes stay cheap.
	type cookieUse struct {
		byHost    map[string]int // host → first room with this cookie there
		anyHost   int            // first room with this cookie on any host, or -1
		first     int            // first room with this cookie, or -1
		firstHost string         // a host of the first room
	}
	uses := map[string]*cookieUse{}
	for i := range c.Rooms {
		r := &c.Rooms[i]
		name := r.CookieName()
		u := uses[name]
		if u == nil {
			u = &cookieUse{byHost: map[string]int{}, anyHost: -1, first: -1}
			uses[name] = u
		}
		var hosts []string
		for _, rt := range r.Routes() {
			if h := cookieHost(rt.Host); !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		for _, h := range hosts {
			other, where := -1, ""
			switch j, ok := u.byHost[h]; {
			case h == "" && u.anyHost >= 0:
				other, where = u.anyHost, "any host"
			case h == "" && u.first >= 0:
				other, where = u.first, fmt.Sprintf("host %q", u.firstHost)
			case h != "" && ok:
				other, where = j, fmt.Sprintf("host %q", h)
			case h != "" && u.anyHost >= 0:
				other, where = u.anyHost, fmt.Sprintf("host %q", h)
			}
			if other >= 0 {
				p.add(labels[i]+".cookie_suffix", "cookie %s is also used by %s on %s; give one of them a different cookie_suffix", name, labels[other], where)
				break
			}
		}
		for _, h := range hosts {
			if _, ok := u.byHost[h]; h != "" && !ok {
				u.byHost[h] = i
			}
			if h == "" && u.anyHost < 0 {
				u.anyHost = i
			}
		}
		if u.first < 0 {
			u.first, u.firstHost = i, hosts[0]
		}
	}
	return p.errs
}

// roomLabel names room i in error messages: rooms[0] ("shop").
func roomLabel(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("rooms[%d]", i)
	}
	return fmt.Sprintf("rooms[%d] (%q)", i, name)
}

func routeString(rt Route) string {
	if rt.Host == "" {
		return fmt.Sprintf("%q on any host", rt.Path)
	}
	return fmt.Sprintf("%q", rt.Host+rt.Path)
}

// cookieHost drops the port: browsers keep one cookie jar per host name.
func cookieHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// Validate checks the room on its own (see [RoomConfig] for the rules),
// judging it as [RoomConfig.ApplyDefaults] would leave it, without changing
// it. Rules that need the other rooms (unique names and routes, cookie
// collisions) and the config's origin are checked by [Config.Validate]. It
// returns nil or every problem joined with errors.Join, each naming the
// field, such as
//
//	room "shop": new_users_per_minute: 900 must be ≤ total_active_users (500)
func (r *RoomConfig) Validate() error {
	rc := *r
	rc.AdditionalRoutes = slices.Clone(r.AdditionalRoutes)
	rc.Events = slices.Clone(r.Events)
	rc.ApplyDefaults()
	prefix := "room: "
	if rc.Name != "" {
		prefix = fmt.Sprintf("room %q: ", rc.Name)
	}
	p := &problems{prefix: prefix}
	rc.validate(p)
	return errors.Join(p.errs...)
}

// validate checks a room on which ApplyDefaults has run.
func (r *RoomConfig) validate(p *problems) {
	switch {
	case r.Name == "":
		p.add("name", "is required: 1–64 characters of a–z, 0–9, '_' and '-', starting with a letter or digit")
	case !roomNameRE.MatchString(r.Name):
		p.add("name", "%q must be 1–64 characters of a–z, 0–9, '_' and '-', starting with a letter or digit", r.Name)
	}

	seen := map[Route]string{}
	for k, rt := range r.Routes() {
		hostField, pathField, self := "host", "path", "the room's host and path"
		if k > 0 {
			self = fmt.Sprintf("additional_routes[%d]", k-1)
			hostField, pathField = self+".host", self+".path"
		}
		if rt.Host != "" {
			if err := checkHostPort(rt.Host); err != nil {
				p.add(hostField, "%q %v; or leave it empty for any host", rt.Host, err)
			}
		}
		if err := checkPath(rt.Path); err != nil {
			p.add(pathField, "%q %v", rt.Path, err)
		}
		if prev, dup := seen[rt]; dup {
			p.add(self, "route %s repeats %s", routeString(rt), prev)
		} else {
			seen[rt] = self
		}
	}

	if r.Origin != "" {
		if err := checkOrigin(r.Origin); err != nil {
			p.add("origin", "%q %v", r.Origin, err)
		}
	}

	tau := r.TotalActiveUsers
	tauOK := tau >= 1 && tau <= MaxTotalActiveUsers
	switch {
	case tau == 0:
		p.add("total_active_users", "is required: from 1 to %d", MaxTotalActiveUsers)
	case !tauOK:
		p.add("total_active_users", "%d must be from 1 to %d", tau, MaxTotalActiveUsers)
	}
	switch nupm := r.NewUsersPerMinute; {
	case nupm == 0:
		p.add("new_users_per_minute", "is required: from 1 to total_active_users")
	case nupm < 1:
		p.add("new_users_per_minute", "%d must be from 1 to total_active_users", nupm)
	case tauOK && nupm > tau:
		p.add("new_users_per_minute", "%d must be ≤ total_active_users (%d)", nupm, tau)
	case !tauOK && nupm > MaxTotalActiveUsers:
		p.add("new_users_per_minute", "%d must be from 1 to total_active_users (at most %d)", nupm, MaxTotalActiveUsers)
	}
	if r.SessionDuration < 1 || r.SessionDuration > 30 {
		p.add("session_duration", "%d must be from 1 to 30 minutes (0 means the default, %d)", r.SessionDuration, DefaultSessionDuration)
	}
	if !slices.Contains(queueingMethods, r.QueueingMethod) {
		p.add("queueing_method", "%q must be one of %s", r.QueueingMethod, strings.Join(queueingMethods, ", "))
	}
	if !slices.Contains(statusCodes, r.QueueingStatusCode) {
		p.add("queueing_status_code", "%d must be one of 200, 202, 429", r.QueueingStatusCode)
	}
	if !cookieSuffixRE.MatchString(r.CookieSuffix) {
		p.add("cookie_suffix", "%q must be at most 32 characters of A–Z, a–z, 0–9 and '_'", r.CookieSuffix)
	}
	ss, sec := r.CookieAttributes.SameSite, r.CookieAttributes.Secure
	ssOK, secOK := slices.Contains(sameSites, ss), slices.Contains(secures, sec)
	if !ssOK {
		p.add("cookie_attributes.samesite", "%q must be one of %s", ss, strings.Join(sameSites, ", "))
	}
	if !secOK {
		p.add("cookie_attributes.secure", "%q must be one of %s", sec, strings.Join(secures, ", "))
	}
	if ss == "none" && sec == "never" {
		p.add("cookie_attributes.samesite", "none needs secure auto or always, not never (browsers drop a SameSite=None cookie that is not Secure)")
	}
	if r.CustomPageHTML != "" {
		if err := checkTemplate(r.CustomPageHTML); err != nil {
			p.add("custom_page_html", "%v", err)
		}
	}
	for i, cmd := range r.EnabledOriginCommands {
		if !slices.Contains(originCommands, cmd) {
			p.add(fmt.Sprintf("enabled_origin_commands[%d]", i), "%q must be one of %s", cmd, strings.Join(originCommands, ", "))
		}
	}
	if r.MaxQueue < 0 {
		p.add("max_queue", "%d must be 0 (unlimited) or more", r.MaxQueue)
	}
	if r.StopPageHTML != "" {
		if err := checkTemplate(r.StopPageHTML); err != nil {
			p.add("stop_page_html", "%v", err)
		}
	}
	r.validateEvents(p)
	r.validateBypass(p)
	r.validateChallenge(p)
}

// checkTemplate parses a custom page as a Mustache template and refuses
// partials.
func checkTemplate(html string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("is not a valid Mustache template: parser failed: %v", p)
		}
	}()
	// No partial provider that reads files: the check must not touch the disk.
	tmpl, err := mustache.ParseStringPartials(html, &mustache.StaticProvider{})
	if err != nil {
		return fmt.Errorf("is not a valid Mustache template: %w", err)
	}
	stack := tmpl.Tags()
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch t.Type() {
		case mustache.Partial:
			return fmt.Errorf("uses the partial {{> %s}}; partials are not supported, put the markup in the page", t.Name())
		case mustache.Section, mustache.InvertedSection:
			stack = append(stack, t.Tags()...)
		}
	}
	return nil
}

// checkOrigin accepts an absolute http or https URL with a host and no
// fragment.
func checkOrigin(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http:// or https:// URL, such as \"http://127.0.0.1:3000\"")
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("must not have a fragment (#...)")
	}
	if err := checkHostPort(u.Host); err != nil {
		return fmt.Errorf("has a bad host: %v", err)
	}
	return nil
}

// checkPath accepts an absolute URL path without query, fragment, spaces,
// control characters or dot segments.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must start with \"/\"")
	}
	if !utf8.ValidString(p) {
		return errors.New("must be valid UTF-8")
	}
	for _, r := range p {
		switch {
		case r == '?' || r == '#':
			return fmt.Errorf("must not contain %q: a route is a path, without query or fragment", r)
		case r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return errors.New("must not contain spaces or control characters")
		}
	}
	c, err := canonEscapes(p)
	if err != nil {
		return fmt.Errorf("has no single meaning: %v", err)
	}
	for seg := range strings.SplitSeq(c, "/") {
		if name, _, _ := strings.Cut(seg, ";"); name == "." || name == ".." {
			return errors.New("must not contain \".\" or \"..\" segments (also encoded, or with ;parameters)")
		}
	}
	return nil
}

// splitListen splits a listen address host:port. With ipOnly the host must be
// an IP address or empty.
func splitListen(s string, ipOnly bool) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, errors.New("must be host:port")
	}
	port, ok := parsePort(portStr, 0)
	if !ok {
		return "", 0, errors.New("must be host:port with a port from 0 to 65535")
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			if ipOnly {
				return "", 0, errors.New("must be ip:port with an IP address (or none) before the port")
			}
			if !isHostname(host) {
				return "", 0, errors.New("must be host:port with a host name or IP address (or none) before the port")
			}
		}
	}
	return host, port, nil
}

// checkAdvertise accepts an IP address with an optional port.
func checkAdvertise(s string) error {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return nil
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("must be an IP address, or ip:port")
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return errors.New("must be an IP address, or ip:port (memberlist advertises an address, not a name)")
	}
	if _, ok := parsePort(portStr, 1); !ok {
		return errors.New("must be ip:port with a port from 1 to 65535")
	}
	return nil
}

// checkHostPort accepts a host name or IP address (IPv6 in brackets) with an
// optional port from 1 to 65535.
func checkHostPort(s string) error {
	host, port := s, ""
	switch {
	case strings.Contains(s, "/"):
		return errors.New("must be a host name or IP address, without a scheme or path")
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return errors.New("must be a host name or IP address: \"[\" without \"]\"")
		}
		host, port = s[1:end], s[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return errors.New("must have an IPv6 address between \"[\" and \"]\"")
		}
		if port != "" && !strings.HasPrefix(port, ":") {
			return errors.New("must have only a port after \"]\"")
		}
		port = strings.TrimPrefix(port, ":")
		if port == "" && strings.HasSuffix(s, ":") {
			return errors.New("must have a port after \":\"")
		}
	case strings.Count(s, ":") > 1:
		return errors.New("must put an IPv6 address in brackets, such as \"[::1]:8080\"")
	case strings.Contains(s, ":"):
		i := strings.IndexByte(s, ':')
		host, port = s[:i], s[i+1:]
		if port == "" {
			return errors.New("must have a port after \":\"")
		}
		fallthrough
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			if !a.Is4() {
				return errors.New("must put an IPv6 address in brackets")
			}
		} else if !isHostname(host) {
			return errors.New("must be a host name (letters, digits, '-' and '.') or an IP address")
		}
	}
	if port != "" {
		if _, ok := parsePort(port, 1); !ok {
			return errors.New("must have a port from 1 to 65535")
		}
	}
	return nil
}

func parsePort(s string, lowest int) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= lowest && n <= 65535
}

// isHostname reports whether s is a DNS host name: dot-separated labels of
// 1–63 letters, digits and '-', not starting or ending with '-', at most 253
// characters, the last label not all digits.
func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != ""
}

// isLoopbackHost reports whether a listener host only accepts local
// connections.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// isIPHost reports whether host is an IP address, IPv6 in brackets or not.
func isIPHost(host string) bool {
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}

// explainYAML rewrites the YAML decoder's type errors so that each names the
// key by its path in the config, such as
//
//	rooms[0] ("shop").totl_active_users: unknown key (line 7)
//
// Syntax errors are returned as they are.
func explainYAML(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	idx := indexKeys(data)
	errs := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		errs = append(errs, errors.New(idx.explain(msg)))
	}
	return errors.Join(errs...)
}

// keyEntry is one mapping key of the YAML document, for error messages.
type keyEntry struct {
	path      string // rooms[0] ("shop").total_active_users
	key       string
	line      int // of the key
	valueLine int
	scalar    bool // the value is a scalar
}

type keyIndex []keyEntry

func indexKeys(data []byte) (idx keyIndex) {
	defer func() { _ = recover() }() // an index is only a nicety for messages
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > 64 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				idx = append(idx, keyEntry{path: p, key: k.Value, line: k.Line, valueLine: v.Line, scalar: v.Kind == yaml.ScalarNode})
				walk(v, p, depth+1)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if path == "rooms" {
					p = roomLabel(i, mappingString(item, "name"))
				}
				walk(item, p, depth+1)
			}
		}
	}
	walk(doc.Content[0], "", 0)
	return idx
}

// mappingString returns the scalar value of key in mapping n, or "".
func mappingString(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}

var (
	yamlLineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlUnknownRE = regexp.MustCompile(`^field (.*) not found in type (\S+)$`)
	yamlTwiceRE   = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	yamlTypeRE    = regexp.MustCompile(`^cannot unmarshal (.*) into (\S+)$`)
)

// Where an unknown key was found, by the Go type it was decoded into.
var yamlContexts = map[string]string{
	"edge.Config":           "at the top level",
	"edge.RoomConfig":       "in a room",
	"edge.Route":            "in an additional route",
	"edge.CookieAttributes": "in cookie_attributes",
}

// What a value should have been, by the Go type it was decoded into.
var yamlWants = map[string]string{
	"int":                   "a whole number",
	"bool":                  "true or false",
	"string":                "a string",
	"[]string":              "a list of strings",
	"edge.Config":           "a mapping of settings",
	"[]edge.RoomConfig":     "a list of rooms",
	"edge.RoomConfig":       "a room (a mapping of settings)",
	"[]edge.Route":          "a list of routes (host and path)",
	"edge.Route":            "a route (a mapping with host and path)",
	"edge.CookieAttributes": "a mapping with samesite and secure",
}

func (idx keyIndex) explain(msg string) string {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	line, _ := strconv.Atoi(m[1])
	rest := m[2]
	if u := yamlUnknownRE.FindStringSubmatch(rest); u != nil {
		if e, ok := idx.find(func(e keyEntry) bool { return e.line == line && e.key == u[1] }); ok {
			return fmt.Sprintf("%s: unknown key (line %d)", e.path, line)
		}
		where := yamlContexts[u[2]]
		if where == "" {
			where = "in " + u[2]
		}
		return fmt.Sprintf("line %d: unknown key %q %s", line, u[1], where)
	}
	if t := yamlTwiceRE.FindStringSubmatch(rest); t != nil {
		if e, ok := idx.find(func(e keyEntry) bool { return e.line == line && e.key == t[1] }); ok {
			return fmt.Sprintf("%s: given twice (lines %s and %d)", e.path, t[2], line)
		}
		return fmt.Sprintf("line %d: key %q given twice (first at line %s)", line, t[1], t[2])
	}
	// Other errors are about the value on that line: find its key. A type
	// error says whether the value is a scalar; a key on the value's own line
	// ("name: [1]") is a closer match than one above it ("rooms:").
	kind := func(keyEntry) bool { return true }
	if t := yamlTypeRE.FindStringSubmatch(rest); t != nil {
		scalar := !strings.HasPrefix(t[1], "!!seq") && !strings.HasPrefix(t[1], "!!map")
		kind = func(e keyEntry) bool { return e.scalar == scalar }
		if want := yamlWants[t[2]]; want != "" {
			rest = fmt.Sprintf("want %s, not %s", want, t[1])
		}
	}
	for _, f := range []func(keyEntry) bool{
		func(e keyEntry) bool { return e.valueLine == line && kind(e) },
		func(e keyEntry) bool { return e.valueLine == line && kind(e) && e.line == line },
	} {
		if e, ok := idx.find(f); ok {
			return fmt.Sprintf("%s: %s (line %d)", e.path, rest, line)
		}
	}
	return fmt.Sprintf("line %d: %s", line, rest)
}

// find returns the only entry matching f.
func (idx keyIndex) find(f func(keyEntry) bool) (keyEntry, bool) {
	var found keyEntry
	n := 0
	for _, e := range idx {
		if f(e) {
			found = e
			n++
		}
	}
	return found, n == 1
}
