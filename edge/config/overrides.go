package config

import (
	"fmt"
	"time"
)

// Overrides are the command line's settings. Those whose flag was given
// replace the config file's; the single-room flags describe the room that
// `waitroom serve --origin URL` protects when the file has no rooms.
type Overrides struct {
	Node, Listen, Admin, Gossip, Advertise string
	Seeds                                  []string
	// Datacenter, WANGossip, WANAdvertise and WANSeeds are datacenter,
	// wan_gossip, wan_advertise and wan_seeds.
	Datacenter, WANGossip, WANAdvertise string
	WANSeeds                            []string
	GossipProfile, GossipKeyFile        string
	CookieKeyFile                       string
	// DataDir is --data-dir; serve's default when neither it nor data_dir
	// is given is DefaultDataDir's.
	DataDir                             string
	Origin, Host, Path                  string
	Unrouted                            string
	TotalActiveUsers, NewUsersPerMinute int
	SessionDuration                     int
	QueueingMethod                      string
	LogLevel, LogFormat                 string
	AccessLog, AccessLogFormat          string
	InsecureGossip                      bool
	ShutdownTimeout, ReadyAloneAfter    time.Duration
	// ForwardAuth and TrustedProxies are forward_auth's listen and
	// trusted_proxies.
	ForwardAuth    string
	TrustedProxies []string
	// TLSFlags are the public listener's HTTPS flags (tls.go).
	TLSFlags

	// Set reports whether the flag of that name was given.
	Set func(flag string) bool
}

// Apply writes the overrides into c, adds the single room when the flags
// describe one, then applies defaults and validates.
func (o *Overrides) Apply(c *Config) error {
	set := o.Set
	if set == nil {
		set = func(string) bool { return false }
	}
	str := func(flag string, dst *string, v string) {
		if set(flag) {
			*dst = v
		}
	}
	str("node", &c.Node, o.Node)
	str("listen", &c.Listen, o.Listen)
	str("admin", &c.Admin, o.Admin)
	str("gossip", &c.Gossip, o.Gossip)
	str("advertise", &c.Advertise, o.Advertise)
	str("gossip-profile", &c.GossipProfile, o.GossipProfile)
	str("gossip-key-file", &c.GossipKeyFile, o.GossipKeyFile)
	str("cookie-key-file", &c.CookieKeyFile, o.CookieKeyFile)
	str("data-dir", &c.DataDir, o.DataDir)
	str("log-level", &c.LogLevel, o.LogLevel)
	str("access-log", &c.AccessLog, o.AccessLog)
	str("access-log-format", &c.AccessLogFormat, o.AccessLogFormat)
	str("unrouted", &c.Unrouted, o.Unrouted)
	if set("seed") {
		c.Seeds = o.Seeds
	}
	str("datacenter", &c.Datacenter, o.Datacenter)
	str("wan-gossip", &c.WANGossip, o.WANGossip)
	str("wan-advertise", &c.WANAdvertise, o.WANAdvertise)
	if set("wan-seed") {
		c.WANSeeds = o.WANSeeds
	}
	if set("insecure-gossip") {
		c.InsecureGossip = o.InsecureGossip
	}
	if set("shutdown-timeout") {
		c.ShutdownTimeout = Duration(o.ShutdownTimeout)
	}
	if set("ready-alone-after") {
		c.ReadyAloneAfter = Duration(o.ReadyAloneAfter)
	}
	str("forward-auth", &c.ForwardAuth.Listen, o.ForwardAuth)
	if set("trusted-proxy") {
		c.ForwardAuth.TrustedProxies = o.TrustedProxies
	}
	o.TLSFlags.apply(c, set)
	roomFlags := set("total-active-users") || set("new-users-per-minute") || set("session-duration") || set("queueing-method") || set("host") || set("path")
	switch {
	case len(c.Rooms) == 0 && (set("origin") || set("forward-auth")):
		// One site: behind the node (--origin), or behind the proxy that
		// asks the node (--forward-auth).
		c.Origin = o.Origin
		if !set("total-active-users") {
			return fmt.Errorf("--origin or --forward-auth without a config file needs --total-active-users (≥ 1)")
		}
		r := Room{
			Name:              "default",
			Host:              o.Host,
			Path:              o.Path,
			TotalActiveUsers:  o.TotalActiveUsers,
			NewUsersPerMinute: o.NewUsersPerMinute,
			SessionDuration:   o.SessionDuration,
			QueueingMethod:    o.QueueingMethod,
		}
		if r.NewUsersPerMinute == 0 {
			r.NewUsersPerMinute = r.TotalActiveUsers
		}
		c.Rooms = []Room{r}
	case roomFlags && len(c.Rooms) > 0:
		return fmt.Errorf("the single-room flags (--total-active-users, --new-users-per-minute, ...) apply only without rooms in the config file; edit the file instead")
	case roomFlags:
		return fmt.Errorf("the single-room flags need --origin or --forward-auth")
	case set("origin"):
		c.Origin = o.Origin
	}
	c.ApplyDefaults()
	return c.Validate()
}
