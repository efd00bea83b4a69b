package config

// Checking a configuration: every field against its allowed range, every
// problem reported at once with the field's path.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/canon"
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

// problems collects validation errors, each prefixed with a field path.
type problems struct {
	prefix string
	errs   []error
}

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, errors.New(p.prefix+field+": "+fmt.Sprintf(format, args...)))
}

// Validate checks the config and every room (see [Config] and [Room]
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
	cc.TLS.ACME.Hosts = slices.Clone(c.TLS.ACME.Hosts)
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
	c.validateListeners(p)
	c.validateLimits(p)
	c.validateModes(p)
	c.validateGossip(p)
	c.validateForwardAuth(p)
	c.validateTLS(p)
	c.validateWebhooks(p)
	c.validateAccessLog(p)
	if !slices.Contains(logLevels, c.LogLevel) {
		p.add("log_level", "%q must be one of %s", c.LogLevel, strings.Join(logLevels, ", "))
	}
	if c.Origin != "" {
		if err := checkOrigin(c.Origin); err != nil {
			p.add("origin", "%q %v", RedactURL(c.Origin), err)
		}
	}
	if c.OriginTimeout < 0 {
		p.add("origin_timeout", "%v must be positive (the default is %v)", c.OriginTimeout, DefaultOriginTimeout)
	}

	// Each room on its own, then the rules across rooms.
	labels := c.validateRooms(p)
	c.validateCookieNames(p, labels)
	return p.errs
}

// validateListeners checks the listen, admin, gossip, forward-auth and
// HTTPS-redirect addresses, that they do not overlap, that an admin listener off loopback has a token,
// and the admin_hosts.
func (c *Config) validateListeners(p *problems) {
	type listener struct {
		field, host string
		port        int
	}
	var listeners []listener
	addrs := []struct{ field, value, example string }{
		{"listen", c.Listen, DefaultListen},
		{"admin", c.Admin, DefaultAdmin},
		{"gossip", c.Gossip, DefaultGossip},
	}
	if c.ForwardAuth.On() {
		addrs = append(addrs, struct{ field, value, example string }{"forward_auth.listen", c.ForwardAuth.Listen, "127.0.0.1:9091"})
	}
	if c.NamesDatacenter() {
		addrs = append(addrs, struct{ field, value, example string }{"wan_gossip", c.WANGossip, "0.0.0.0:7947"})
	}
	if c.TLS.RedirectListen != "" {
		addrs = append(addrs, struct{ field, value, example string }{"tls.redirect_listen", c.TLS.RedirectListen, ":80"})
	}
	for _, l := range addrs {
		host, port, err := splitListen(l.value, l.field == "gossip" || l.field == "wan_gossip")
		if err != nil {
			p.add(l.field, "%q %v, such as %q", l.value, err, l.example)
			continue
		}
		listeners = append(listeners, listener{l.field, host, port})
	}
	for i, a := range listeners {
		for _, b := range listeners[:i] {
			if a.port != 0 && a.port == b.port && (a.host == b.host || IsWildcardHost(a.host) || IsWildcardHost(b.host)) {
				p.add(a.field, "%s overlaps %s (%s); give them different ports",
					net.JoinHostPort(a.host, strconv.Itoa(a.port)), b.field, net.JoinHostPort(b.host, strconv.Itoa(b.port)))
			}
		}
	}
	for _, l := range listeners {
		if l.field == "admin" && !IsLoopbackHost(l.host) && c.AdminTokenFile == "" {
			p.add("admin", "%q is not a loopback address: set admin_token_file so that only holders of the token can change rooms (or listen on 127.0.0.1)", c.Admin)
		}
	}
	for i, h := range c.AdminHosts {
		if !IsHostname(strings.TrimSuffix(h, ".")) && !isIPHost(h) {
			p.add(fmt.Sprintf("admin_hosts[%d]", i), "%q must be a host name or IP address without a port, as clients write it in the Host header (such as \"waitroom-admin.internal\")", h)
		}
	}
}

// validateLimits checks the public listener's limits and timeouts and the
// gossip lag.
func (c *Config) validateLimits(p *problems) {
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
}

// validateModes checks what a node does when cut off from its peers and
// with requests no room routes.
func (c *Config) validateModes(p *problems) {
	if c.StaleState != "" && c.StaleState != "open" && c.StaleState != "closed" {
		p.add("stale_state", "%q must be open (keep deciding alone) or closed (queue new visitors)", c.StaleState)
	}
	switch c.Unrouted {
	case "", UnroutedRefuse:
	case UnroutedPass:
		if c.Origin == "" && !c.ForwardAuth.On() {
			p.add("unrouted", "pass needs origin: the default origin that requests matching no room go to")
		}
	default:
		p.add("unrouted", "%q must be refuse (the default: 404 for a request no room routes) or pass (send it to the default origin, unqueued)", c.Unrouted)
	}
	if c.StaleAfter < 0 || (c.StaleAfter > 0 && time.Duration(c.StaleAfter) < time.Second) {
		p.add("stale_after", "%v must be at least 1s (default %v)", c.StaleAfter, DefaultStaleAfter)
	}
}

// validateGossip checks the gossip settings: advertise, seeds, profile and
// label.
func (c *Config) validateGossip(p *problems) {
	validatePool(p, "", c.Advertise, c.Seeds, c.GossipProfile)
	if len(c.GossipLabel) > 255 {
		p.add("gossip_label", "is %d bytes; the limit is 255", len(c.GossipLabel))
	}
	c.validateWAN(p)
}

// validatePool checks a gossip pool's advertised address, seeds and
// profile, their fields named with prefix (none for the data center's
// pool, "wan_" for the pool between data centers).
func validatePool(p *problems, prefix, advertise string, seeds []string, profile string) {
	if advertise != "" {
		if err := checkAdvertise(advertise); err != nil {
			p.add(prefix+"advertise", "%q %v", advertise, err)
		}
	}
	for i, s := range seeds {
		if err := checkHostPort(s); err != nil {
			p.add(fmt.Sprintf("%sseeds[%d]", prefix, i), "%q %v", s, err)
		}
	}
	if !slices.Contains(gossipProfiles, profile) {
		p.add(prefix+"gossip_profile", "%q must be one of %s", profile, strings.Join(gossipProfiles, ", "))
	}
}

// validateWAN checks the pool between data centers: its settings need a
// data center, and are addresses, a profile and a count of carriers. Its
// bind address is a listener's (validateListeners); the data center's name
// is the gossip's to judge (edge.Check).
func (c *Config) validateWAN(p *problems) {
	if !c.NamesDatacenter() {
		for _, f := range []struct {
			field string
			set   bool
		}{{"wan_gossip", c.WANGossip != ""}, {"wan_advertise", c.WANAdvertise != ""}, {"wan_seeds", len(c.WANSeeds) > 0}, {"wan_gossip_profile", c.WANGossipProfile != ""}, {"carriers", c.Carriers != 0}} {
			if f.set {
				p.add(f.field, "applies only with datacenter set to a data center of several nodes (not the node's own name)")
			}
		}
		return
	}
	validatePool(p, "wan_", c.WANAdvertise, c.WANSeeds, c.WANGossipProfile)
	if c.Carriers < 1 || c.Carriers > MaxCarriers {
		p.add("carriers", "%d must be from 1 to %d (default %d)", c.Carriers, MaxCarriers, DefaultCarriers)
	}
}

// validateRooms checks each room on its own, then that no two rooms share a
// name or a route. It returns the rooms' labels for later messages.
func (c *Config) validateRooms(p *problems) []string {
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
		if r.Origin == "" && !c.ForwardAuth.On() {
			rp.add("origin", "is required: set origin on the room or at the top level (an absolute http:// or https:// URL), or serve the room through forward_auth")
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
					rp.add(field, "route %s is already used by %s (%s)", rt.String(), labels[prev.room], prev.field)
				}
				continue
			}
			routes[rt] = routeUse{i, field}
		}
		p.errs = append(p.errs, rp.errs...)
	}
	return labels
}

// validateCookieNames checks that rooms sharing a host (an empty host
// shares every host; ports do not separate cookies) have different cookie
// names. Each room is checked against the earlier ones in one pass over the
// routes, so many rooms with many routes stay cheap.
func (c *Config) validateCookieNames(p *problems, labels []string) {
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
}

// roomLabel names room i in error messages: rooms[0] ("shop").
func roomLabel(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("rooms[%d]", i)
	}
	return fmt.Sprintf("rooms[%d] (%q)", i, name)
}

// String names the route in messages: "example.com/shop", or "/shop" on
// any host.
func (rt Route) String() string {
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

// Validate checks the room on its own (see [Room] for the rules),
// judging it as [Room.ApplyDefaults] would leave it, without changing
// it. Rules that need the other rooms (unique names and routes, cookie
// collisions) and the config's origin are checked by [Config.Validate]. It
// returns nil or every problem joined with errors.Join, each naming the
// field, such as
//
//	room "shop": new_users_per_minute: 900 must be ≤ total_active_users (500)
func (r *Room) Validate() error {
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
func (r *Room) validate(p *problems) {
	switch {
	case r.Name == "":
		p.add("name", "is required: 1–64 characters of a–z, 0–9, '_' and '-', starting with a letter or digit")
	case !roomNameRE.MatchString(r.Name):
		p.add("name", "%q must be 1–64 characters of a–z, 0–9, '_' and '-', starting with a letter or digit", r.Name)
	}

	r.validateRoutes(p)
	if r.Origin != "" {
		if err := checkOrigin(r.Origin); err != nil {
			p.add("origin", "%q %v", RedactURL(r.Origin), err)
		}
	}

	r.validateLimits(p)
	if !slices.Contains(queueingMethods, r.QueueingMethod) {
		p.add("queueing_method", "%q must be one of %s", r.QueueingMethod, strings.Join(queueingMethods, ", "))
	}
	if !slices.Contains(statusCodes, r.QueueingStatusCode) {
		p.add("queueing_status_code", "%d must be one of 200, 202, 429", r.QueueingStatusCode)
	}
	r.validateCookie(p)
	if r.CustomPageHTML != "" {
		if err := CheckPage(r.CustomPageHTML); err != nil {
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
		if err := CheckPage(r.StopPageHTML); err != nil {
			p.add("stop_page_html", "%v", err)
		}
	}
	r.validateEvents(p)
	r.validateBypass(p)
	r.validateChallenge(p)
	r.validatePriority(p)
	r.validatePage(p)
}

// validateRoutes checks the room's host and path and its additional routes,
// and that none repeats another.
func (r *Room) validateRoutes(p *problems) {
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
			p.add(self, "route %s repeats %s", rt.String(), prev)
		} else {
			seen[rt] = self
		}
	}
}

// validateLimits checks total_active_users, new_users_per_minute and
// session_duration.
func (r *Room) validateLimits(p *problems) {
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
}

// validateCookie checks the cookie's suffix and attributes.
func (r *Room) validateCookie(p *problems) {
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
}

// CheckPage is the check a custom page (custom_page_html, an event's, and
// stop_page_html) passes: it parses as a Mustache template and uses no
// partials.
func CheckPage(html string) (err error) {
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
	c, err := canon.Escapes(p)
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
			if !IsHostname(host) {
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
		} else if !IsHostname(host) {
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

// IsHostname reports whether s is a DNS host name: dot-separated labels of
// 1–63 letters, digits and '-', not starting or ending with '-', at most 253
// characters, the last label not all digits.
func IsHostname(s string) bool {
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

// IsLoopbackHost reports whether a listener host only accepts local
// connections.
func IsLoopbackHost(host string) bool {
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

// IsWildcardHost reports whether a listener host accepts connections on
// every address: empty, 0.0.0.0 or ::.
func IsWildcardHost(host string) bool {
	if host == "" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}
