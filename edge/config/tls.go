package config

// HTTPS on the public listener: the tls block of the configuration, its
// defaults, its checks and its command-line flags, kept together here. What
// runs from it is in tls.go.

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// DefaultACMEDirectory is Let's Encrypt's production directory, the
// default tls.acme.directory_url.
const DefaultACMEDirectory = "https://acme-v02.api.letsencrypt.org/directory"

// TLSConfig makes the public listener speak HTTPS (HTTP/2 and HTTP/1.1),
// with a certificate either from files or obtained over ACME. It is the
// tls block of the config:
//
//	listen: ":443"
//	tls:
//	  cert_file: /etc/waitroom/tls/fullchain.pem
//	  key_file: /etc/waitroom/tls/privkey.pem
//	  redirect_listen: ":80"
//
// or, with certificates from Let's Encrypt for the rooms' hosts:
//
//	listen: ":443"
//	tls:
//	  redirect_listen: ":80"
//	  acme:
//	    enabled: true
//	    email: ops@example.com
//
// Rules checked by Validate:
//
//   - cert_file and key_file: both or neither; a PEM certificate chain
//     (leaf first) and its private key. They are read at start (a pair
//     that does not load stops the node) and again whenever either file
//     changes (checked at most once a second, on a new TLS connection), so
//     a renewed certificate is served without a restart; a new pair that
//     does not load is logged as an error and the previous one is kept.
//     LoadConfig resolves relative paths against the config file's
//     directory.
//   - acme.enabled: true obtains and renews certificates over ACME instead;
//     not with cert_file. Either cert_file or acme.enabled turns TLS on;
//     the other tls settings need one of them.
//   - redirect_listen: empty (none) or host:port as listen, not
//     overlapping listen, admin or gossip. A plain-HTTP listener that
//     answers every request with 308 to the same host and path over HTTPS,
//     and, with ACME, serves the CA's http-01 challenges. Its requests get
//     read_header_timeout and idle_timeout like the public listener's.
//   - hsts: empty (DefaultHSTS: browsers that came once over HTTPS come
//     back over HTTPS only, for a year), "off" (no header: a site that
//     must stay reachable over plain HTTP), or a Strict-Transport-Security
//     value of its own starting "max-age=" and digits
//     ("max-age=63072000; includeSubDomains; preload").
//   - https_port: 0 (the port of listen) or 1 to 65535: the port visitors
//     reach the TLS listener on, for the redirect's address, when it is not
//     the one listened on (a container's port mapped to 443 outside). 443
//     is left out of the address.
//
// And in acme, which needs enabled:
//
//   - directory_url: an https:// URL; default Let's Encrypt's production
//     directory. Setting enabled means accepting that CA's terms of
//     service.
//   - email: empty or one address (local@domain): the contact the CA writes
//     to about expiring or revoked certificates.
//   - hosts: each a DNS name with at least one dot, no port, no wildcard,
//     no IP address. The node asks certificates for these and for every
//     room's host (a route with an empty host adds none), and for no other
//     name, so that a stranger cannot make it ask for names it does not
//     serve. With no room naming a host, hosts must name at least one.
//   - cache_dir: where the account key and certificates are kept across
//     restarts (created 0700). Default: waitroom/acme in the user's config
//     directory. Without a kept cache every restart asks the CA again and
//     soon meets its rate limits.
//   - directory_ca_file: empty or a PEM file of CA certificates trusted for
//     the directory's own HTTPS besides the system's, for a private or test
//     CA. LoadConfig resolves it and cache_dir against the config file's
//     directory.
//
// The CA validates with tls-alpn-01 on the TLS listener, or with http-01 on
// redirect_listen when that is set, so it must reach this node on port 443
// or 80 under each host's name. A ring of nodes behind one name therefore
// suits certificate files (from a certificate manager, reloaded as they
// change) better than ACME on each node.
type TLSConfig struct {
	CertFile       string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile        string `yaml:"key_file" json:"key_file,omitempty"`
	RedirectListen string `yaml:"redirect_listen" json:"redirect_listen,omitempty"`
	HTTPSPort      int    `yaml:"https_port" json:"https_port,omitempty"`
	// HSTS is the Strict-Transport-Security header of every answer on the
	// TLS listener: DefaultHSTS when empty, none when "off".
	HSTS string     `yaml:"hsts" json:"hsts,omitempty"`
	ACME ACMEConfig `yaml:"acme" json:"acme"`
}

// ACMEConfig is the tls.acme block: automatic certificates (see
// [TLSConfig] for the rules).
type ACMEConfig struct {
	Enabled         bool     `yaml:"enabled" json:"enabled,omitempty"`
	DirectoryURL    string   `yaml:"directory_url" json:"directory_url,omitempty"`
	Email           string   `yaml:"email" json:"email,omitempty"`
	Hosts           []string `yaml:"hosts" json:"hosts,omitempty"`
	CacheDir        string   `yaml:"cache_dir" json:"cache_dir,omitempty"`
	DirectoryCAFile string   `yaml:"directory_ca_file" json:"directory_ca_file,omitempty"`
}

// DefaultHSTS is the Strict-Transport-Security header sent over TLS unless
// tls.hsts says otherwise: a year.
const DefaultHSTS = "max-age=31536000"

// HSTSOff in tls.hsts sends no Strict-Transport-Security header.
const HSTSOff = "off"

var hstsRE = regexp.MustCompile(`^max-age=[0-9]{1,10}(; ?[A-Za-z]+)*$`)

// HSTSHeader is the Strict-Transport-Security header to send over TLS, ""
// for none.
func (t *TLSConfig) HSTSHeader() string {
	switch t.HSTS {
	case "":
		return DefaultHSTS
	case HSTSOff:
		return ""
	}
	return t.HSTS
}

// On reports whether the public listener speaks TLS.
func (t *TLSConfig) On() bool { return t.CertFile != "" || t.KeyFile != "" || t.ACME.Enabled }

// applyDefaults fills in the ACME directory and cache when ACME is on.
func (t *TLSConfig) applyDefaults() {
	if !t.ACME.Enabled {
		return
	}
	if t.ACME.DirectoryURL == "" {
		t.ACME.DirectoryURL = DefaultACMEDirectory
	}
	if t.ACME.CacheDir == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			t.ACME.CacheDir = filepath.Join(dir, "waitroom", "acme")
		}
	}
}

// resolvePaths makes the tls block's relative paths relative to dir,
// the config file's directory.
func (t *TLSConfig) resolvePaths(dir string) {
	for _, p := range []*string{&t.CertFile, &t.KeyFile, &t.ACME.CacheDir, &t.ACME.DirectoryCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// validateTLS checks the tls block of c, after defaults.
func (c *Config) validateTLS(p *problems) {
	t := &c.TLS
	a := &t.ACME
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		p.add("tls.key_file", "required with tls.cert_file: the private key of the certificate")
	case t.KeyFile != "" && t.CertFile == "":
		p.add("tls.cert_file", "required with tls.key_file: the certificate chain of the key")
	}
	if a.Enabled && t.CertFile != "" {
		p.add("tls.acme.enabled", "true cannot be used with tls.cert_file: choose certificate files or ACME")
	}
	// A setting given while what it belongs to is off is refused, naming
	// it: TLS as a whole, or ACME.
	type setting struct {
		field string
		set   bool
	}
	acme := []setting{
		{"tls.acme.directory_url", a.DirectoryURL != ""},
		{"tls.acme.email", a.Email != ""},
		{"tls.acme.hosts", len(a.Hosts) > 0},
		{"tls.acme.cache_dir", a.CacheDir != ""},
		{"tls.acme.directory_ca_file", a.DirectoryCAFile != ""},
	}
	refuseSet := func(settings []setting, why string) {
		for _, f := range settings {
			if f.set {
				p.add(f.field, "%s", why)
			}
		}
	}
	if t.HSTS != "" && t.HSTS != HSTSOff && !hstsRE.MatchString(t.HSTS) {
		p.add("tls.hsts", "%q must be empty (%q), %q, or a Strict-Transport-Security value starting max-age= and digits", t.HSTS, DefaultHSTS, HSTSOff)
	}
	if !t.On() {
		refuseSet(append([]setting{
			{"tls.redirect_listen", t.RedirectListen != ""},
			{"tls.https_port", t.HTTPSPort != 0},
			{"tls.hsts", t.HSTS != ""},
		}, acme...), "set while TLS is off: give tls.cert_file and tls.key_file, or tls.acme.enabled: true")
		return
	}
	if t.HTTPSPort < 0 || t.HTTPSPort > 65535 {
		p.add("tls.https_port", "%d must be from 1 to 65535 (0: the port of listen)", t.HTTPSPort)
	}
	// redirect_listen itself, and that it overlaps no other listener, is
	// checked with the other listeners (validateListeners).
	if !a.Enabled {
		refuseSet(acme, "set while tls.acme.enabled is false")
		return
	}
	if u, err := url.Parse(a.DirectoryURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" {
		p.add("tls.acme.directory_url", "%q must be an absolute https:// URL (default %s)", a.DirectoryURL, DefaultACMEDirectory)
	}
	if a.Email != "" && !looksLikeEmail(a.Email) {
		p.add("tls.acme.email", "%q must be one e-mail address, local@domain", a.Email)
	}
	for i, h := range a.Hosts {
		if !isACMEHost(h) {
			p.add(fmt.Sprintf("tls.acme.hosts[%d]", i), "%q must be a DNS name with at least one dot, without port or wildcard (a CA does not certify IP addresses or single-label names here)", h)
		}
	}
	if len(acmeHostsOf(c)) == 0 {
		p.add("tls.acme.hosts", "must name at least one host when no room names one: the node asks certificates only for the rooms' hosts and these")
	}
	if a.CacheDir == "" {
		p.add("tls.acme.cache_dir", "required: there is no user config directory to keep certificates in by default")
	}
}

// acmeHostsOf are the names a node asks certificates for, from the
// config: the explicit hosts and the rooms' hosts that a CA can certify.
// The running node also follows rooms changed at runtime (see acmeHosts).
func acmeHostsOf(c *Config) []string {
	var out []string
	add := func(h string) {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if isACMEHost(h) {
			out = append(out, h)
		}
	}
	for _, h := range c.TLS.ACME.Hosts {
		add(h)
	}
	for i := range c.Rooms {
		for _, rt := range c.Rooms[i].Routes() {
			add(HostWithoutPort(rt.Host))
		}
	}
	return out
}

// HostWithoutPort drops a :port from a route's host.
func HostWithoutPort(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// isACMEHost reports whether a CA can certify h here: a DNS name with a
// dot (autocert refuses single labels), not an IP address.
func isACMEHost(h string) bool {
	h = strings.TrimSuffix(h, ".")
	return strings.Contains(h, ".") && IsHostname(h) && !isIPHost(h)
}

// looksLikeEmail accepts one address: a local part, "@", and a host name,
// without spaces or angle brackets.
func looksLikeEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && len(s) <= 254 && !strings.ContainsAny(s, " \t<>,;\"") && IsHostname(domain) && strings.Contains(domain, ".")
}

// TLSFlags are the command line's tls settings (see [Overrides]).
type TLSFlags struct {
	CertFile, KeyFile, RedirectListen string
	HTTPSPort                         int
	ACME                              bool
	ACMEEmail, ACMEDirectory          string
	ACMEHosts                         []string
	ACMECacheDir, ACMEDirectoryCAFile string
}

// apply writes the flags that were given into c's tls block.
func (f *TLSFlags) apply(c *Config, set func(string) bool) {
	for _, s := range []struct {
		flag string
		dst  *string
		v    string
	}{
		{"tls-cert-file", &c.TLS.CertFile, f.CertFile},
		{"tls-key-file", &c.TLS.KeyFile, f.KeyFile},
		{"redirect-listen", &c.TLS.RedirectListen, f.RedirectListen},
		{"acme-email", &c.TLS.ACME.Email, f.ACMEEmail},
		{"acme-directory", &c.TLS.ACME.DirectoryURL, f.ACMEDirectory},
		{"acme-cache-dir", &c.TLS.ACME.CacheDir, f.ACMECacheDir},
		{"acme-directory-ca-file", &c.TLS.ACME.DirectoryCAFile, f.ACMEDirectoryCAFile},
	} {
		if set(s.flag) {
			*s.dst = s.v
		}
	}
	if set("https-port") {
		c.TLS.HTTPSPort = f.HTTPSPort
	}
	if set("acme") {
		c.TLS.ACME.Enabled = f.ACME
	}
	if set("acme-host") {
		c.TLS.ACME.Hosts = f.ACMEHosts
	}
}

// HTTPSPortOf is the port the redirect sends visitors to: https_port, or
// the port the public listener is bound to (bound, its address once
// listening); "" for 443, which the address leaves out.
func HTTPSPortOf(c *Config, bound string) string {
	port := strconv.Itoa(c.TLS.HTTPSPort)
	if c.TLS.HTTPSPort == 0 {
		_, port, _ = net.SplitHostPort(bound)
	}
	if port == "443" {
		return ""
	}
	return port
}
