package config

// The configuration's defaults, and the hosts and paths put in the form
// the router compares.

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/policy"
)

// Defaults filled in by [Config.ApplyDefaults] and [Room.ApplyDefaults].
const (
	DefaultListen             = ":8080"
	DefaultAdmin              = "127.0.0.1:9090"
	DefaultGossip             = "0.0.0.0:7946"
	DefaultGossipProfile      = "lan"
	DefaultWANGossipProfile   = "wan"
	DefaultCarriers           = 2
	MaxCarriers               = 5
	DefaultLogLevel           = "info"
	DefaultOriginTimeout      = 30 * time.Second
	DefaultPath               = "/"
	DefaultSessionDuration    = policy.DefaultSessionDuration // minutes
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

	// MaxConfigSize is the largest configuration Parse reads.
	MaxConfigSize = 8 << 20
)

// ApplyDefaults fills in every unset setting, of the config and of each room
// (see [Room.ApplyDefaults]), and normalises hosts and paths. A room
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
	if c.NamesDatacenter() {
		c.applyWANDefaults()
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
	c.TLS.applyDefaults()
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
// samesite and secure auto) and normalises its routes as [Room.Routes]
// does. It is idempotent.
func (r *Room) ApplyDefaults() {
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
func (r *Room) CookieName() string {
	if r.CookieSuffix == "" {
		return CookieBaseName
	}
	return CookieBaseName + "_" + r.CookieSuffix
}

// Routes returns the room's host and path followed by its additional_routes,
// normalised: hosts lower-cased without a trailing dot, an empty path "/",
// runs of "/" collapsed, and an additional route without a host on the
// room's host. It returns a new slice.
func (r *Room) Routes() []Route {
	routes := make([]Route, 0, 1+len(r.AdditionalRoutes))
	routes = append(routes, Route{Host: normHost(r.Host), Path: normPath(r.Path)})
	for _, rt := range r.AdditionalRoutes {
		routes = append(routes, r.normRoute(rt))
	}
	return routes
}

func (r *Room) normRoute(rt Route) Route {
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

// NamesDatacenter reports whether the node belongs to a data center of
// several nodes: datacenter is set and is not the node's own name.
func (c *Config) NamesDatacenter() bool { return c.Datacenter != "" && c.Datacenter != c.Node }

// applyWANDefaults fills in the pool between data centers: its bind
// address next to gossip's, its advertised address next to advertise's,
// its profile and the carriers.
func (c *Config) applyWANDefaults() {
	if c.WANGossip == "" {
		if host, port, err := splitListen(c.Gossip, true); err == nil {
			if port != 0 {
				port++
			}
			c.WANGossip = net.JoinHostPort(host, strconv.Itoa(port))
		}
	}
	if c.WANAdvertise == "" && c.Advertise != "" {
		if _, port, err := splitListen(c.WANGossip, true); err == nil && port != 0 {
			host := c.Advertise
			if h, _, err := net.SplitHostPort(c.Advertise); err == nil {
				host = h
			}
			c.WANAdvertise = net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
		}
	}
	if c.WANGossipProfile == "" {
		c.WANGossipProfile = DefaultWANGossipProfile
	}
	if c.Carriers == 0 {
		c.Carriers = DefaultCarriers
	}
}
