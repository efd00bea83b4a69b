package agent

// HTTPS on the public listener: certificates from files that are reloaded
// when they change, or from an ACME CA; and the plain-HTTP listener that
// sends visitors to HTTPS. The settings are in edge/config/tls.go.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/waitroom/waitroom/edge/config"
)

// panicACME is where a recovered panic of the ACME manager is counted
// (waitroom_panics_total{where}).
const panicACME = "acme"

// certCheckEvery is how often, at most, the certificate files are looked
// at for a change: on a new TLS connection, so an idle node reads nothing,
// and a renewed pair is served within a second of being written.
const certCheckEvery = time.Second

// publicTLS is the public listener's TLS: its config, and the ACME manager
// when certificates come from a CA.
type publicTLS struct {
	config *tls.Config
	files  *certFiles        // nil with ACME
	acme   *autocert.Manager // nil with certificate files
}

// newPublicTLS builds the public listener's TLS from the config's tls
// block, or returns nil when TLS is off. Certificate files that do not
// load, and a directory CA file that does not, stop the node here.
// dry (a config check) creates no ACME cache directory.
func newPublicTLS(a *Agent, dry bool) (*publicTLS, error) {
	t := &a.cfg.TLS
	if !t.On() {
		return nil, nil
	}
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// HTTP/2 first; ServeTLS adds these too, but the ACME manager's
		// tls-alpn-01 protocol must stay in the list.
		NextProtos: []string{"h2", "http/1.1"},
	}
	if !t.ACME.Enabled {
		cf, err := loadCertFiles(t.CertFile, t.KeyFile, a.log)
		if err != nil {
			return nil, err
		}
		base.GetCertificate = cf.getCertificate
		return &publicTLS{config: base, files: cf}, nil
	}
	m, err := newACMEManager(a, dry)
	if err != nil {
		return nil, err
	}
	base.GetCertificate = (&acmeLog{m: m, log: a.log, panicked: func(p any, stack []byte) { a.Panicked(panicACME, p, stack) }}).getCertificate
	base.NextProtos = append(base.NextProtos, acme.ALPNProto)
	return &publicTLS{config: base, acme: m}, nil
}

// certFiles serves the certificate pair in two files and loads it again
// when either file changes: a certificate renewed by certbot, cert-manager
// or a Kubernetes Secret update is served without a restart.
type certFiles struct {
	certPath, keyPath string
	log               zerolog.Logger
	cur               atomic.Pointer[tls.Certificate]
	nextCheck         atomic.Int64 // unix nanoseconds

	mu sync.Mutex // one reload at a time; guards seen
	// seen are the files as last looked at, loaded or not: a pair that
	// failed to load is tried again only once a file changes again, so a
	// broken pair is logged once, not on every connection.
	seen [2]os.FileInfo
}

// loadCertFiles reads the pair once; a pair that does not load is an error.
func loadCertFiles(certPath, keyPath string, log zerolog.Logger) (*certFiles, error) {
	c := &certFiles{certPath: certPath, keyPath: keyPath, log: log}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file %s, tls.key_file %s: %w", certPath, keyPath, err)
	}
	c.seen = st
	c.cur.Store(&cert)
	c.nextCheck.Store(time.Now().Add(certCheckEvery).UnixNano())
	c.logLoaded(&cert, "serving the certificate from tls.cert_file")
	return c, nil
}

func (c *certFiles) stat() ([2]os.FileInfo, error) {
	var st [2]os.FileInfo
	for i, p := range []string{c.certPath, c.keyPath} {
		fi, err := os.Stat(p)
		if err != nil {
			return st, fmt.Errorf("tls: %w", err)
		}
		st[i] = fi
	}
	return st, nil
}

func (c *certFiles) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.reloadIfChanged(time.Now())
	return c.cur.Load(), nil
}

// reloadIfChanged loads the pair again if either file's identity, size or
// modification time differs from what was last seen, at most once per
// certCheckEvery. A rename over the file (as Kubernetes updates a mounted
// Secret) is a change of identity.
func (c *certFiles) reloadIfChanged(now time.Time) {
	next := c.nextCheck.Load()
	if now.UnixNano() < next || !c.nextCheck.CompareAndSwap(next, now.Add(certCheckEvery).UnixNano()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stat()
	if err != nil {
		if c.seen[0] != nil {
			c.log.Error().Err(err).Msg("certificate files cannot be read; still serving the previous certificate")
			c.seen = [2]os.FileInfo{}
		}
		return
	}
	if sameFile(c.seen[0], st[0]) && sameFile(c.seen[1], st[1]) {
		return
	}
	c.seen = st
	cert, err := tls.LoadX509KeyPair(c.certPath, c.keyPath)
	if err != nil {
		// Often the certificate was written and the key not yet: the
		// key's write is a change again, and is tried then.
		c.log.Error().Err(err).Str("cert_file", c.certPath).Str("key_file", c.keyPath).
			Msg("the changed certificate files do not load; still serving the previous certificate")
		return
	}
	c.cur.Store(&cert)
	c.logLoaded(&cert, "certificate files changed; serving the new certificate")
}

func (c *certFiles) logLoaded(cert *tls.Certificate, msg string) {
	ev := c.log.Info().Str("cert_file", c.certPath)
	if leaf := cert.Leaf; leaf != nil {
		ev = ev.Strs("names", leaf.DNSNames).Time("not_after", leaf.NotAfter)
	}
	ev.Msg(msg)
}

// sameFile reports whether a and b describe the same file unchanged.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// newACMEManager sets up automatic certificates for the hosts acmeHosts
// allows, kept in cache_dir.
func newACMEManager(ag *Agent, dry bool) (*autocert.Manager, error) {
	a := &ag.cfg.TLS.ACME
	if !dry {
		if err := os.MkdirAll(a.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("tls.acme.cache_dir: %w", err)
		}
	}
	client := &acme.Client{DirectoryURL: a.DirectoryURL, UserAgent: "waitroom"}
	if a.DirectoryCAFile != "" {
		pem, err := os.ReadFile(a.DirectoryCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.acme.directory_ca_file: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.acme.directory_ca_file %s: no PEM certificate in it", a.DirectoryCAFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		client.HTTPClient = &http.Client{Transport: tr, Timeout: time.Minute}
	}
	return &autocert.Manager{
		// Setting tls.acme.enabled is the operator's acceptance of the
		// CA's terms; the README says so.
		Prompt:     autocert.AcceptTOS,
		Cache:      autocert.DirCache(a.CacheDir),
		HostPolicy: ag.acmeHostPolicy,
		Email:      a.Email,
		Client:     client,
	}, nil
}

// errHostNotServed is the host policy's answer for a name that neither a
// room nor tls.acme.hosts names.
var errHostNotServed = errors.New("no room or tls.acme.hosts names this host")

// acmeHostPolicy lets the ACME manager ask certificates only for
// tls.acme.hosts and the hosts of the rooms in force, which follow rooms
// created or changed at runtime, so that a client naming any other host
// cannot make the node ask a CA for it (and spend its rate limits).
//
// The http-01 handler asks with the request's Host, which may carry a port.
func (a *Agent) acmeHostPolicy(_ context.Context, host string) error {
	host = strings.ToLower(strings.TrimSuffix(config.HostWithoutPort(host), "."))
	for _, h := range a.cfg.TLS.ACME.Hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), host) {
			return nil
		}
	}
	if a.ServesHost(host) {
		return nil
	}
	return errHostNotServed
}

// acmeLog logs the ACME manager's failures to get a certificate for a host
// it serves, at most once a minute per host: a visitor only sees a failed
// handshake, so the operator must hear of it. Handshakes naming hosts that
// are not served are a scanner's noise and are not logged.
type acmeLog struct {
	m        *autocert.Manager
	log      zerolog.Logger
	panicked func(p any, stack []byte)

	mu     sync.Mutex
	logged map[string]time.Time
}

func (a *acmeLog) getCertificate(hello *tls.ClientHelloInfo) (cert *tls.Certificate, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The handshake fails; the node and its other visitors go on.
			a.panicked(p, debug.Stack())
			cert, err = nil, fmt.Errorf("certificate for %q: internal error", hello.ServerName)
		}
	}()
	cert, err = a.m.GetCertificate(hello)
	if err == nil || errors.Is(err, errHostNotServed) || hello.ServerName == "" {
		return cert, err
	}
	now := time.Now()
	a.mu.Lock()
	if a.logged == nil {
		a.logged = map[string]time.Time{}
	}
	last, seen := a.logged[hello.ServerName]
	if !seen || now.Sub(last) >= time.Minute {
		a.logged[hello.ServerName] = now
		a.log.Error().Err(err).Str("host", hello.ServerName).Msg("no certificate from the ACME CA for this host; its visitors' TLS handshakes fail")
	}
	a.mu.Unlock()
	return cert, err
}

// redirectToHTTPS answers every request on the plain-HTTP listener with a
// permanent redirect (308, which keeps the method and body) to the same
// host, path and query over HTTPS, on port (none for 443). A Host that is
// not a host name or IP address gets 400 rather than a redirect built
// from it.
func redirectToHTTPS(port string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bare := strings.TrimSuffix(strings.Trim(config.HostWithoutPort(r.Host), "[]"), ".")
		ip := net.ParseIP(bare)
		if !config.IsHostname(bare) && ip == nil {
			http.Error(w, "Bad Request: a Host header naming the site is needed to redirect to HTTPS", http.StatusBadRequest)
			return
		}
		host := bare
		switch {
		case port != "":
			host = net.JoinHostPort(bare, port)
		case ip != nil && ip.To4() == nil:
			host = "[" + bare + "]"
		}
		target := "https://" + host + r.URL.RequestURI()
		w.Header().Set("Location", target)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusPermanentRedirect)
		if r.Method != http.MethodHead {
			_, _ = fmt.Fprintf(w, "This site is served over HTTPS: %s\n", target)
		}
	})
}

// redirectHandler is the plain-HTTP listener's handler: the CA's http-01
// challenges when ACME is on, else the redirect.
func (a *Agent) redirectHandler() http.Handler {
	h := redirectToHTTPS(config.HTTPSPortOf(a.cfg, a.publicAddr))
	if a.tls != nil && a.tls.acme != nil {
		return a.tls.acme.HTTPHandler(h)
	}
	return h
}

// httpErrorLog carries net/http's own log lines into the node's log: a TLS
// handshake that fails (mostly scanners and clients that give up) at debug
// level, anything else (a handler's panic, accept errors) as a warning.
func httpErrorLog(log zerolog.Logger) *stdlog.Logger {
	return stdlog.New(httpLogWriter{log}, "", 0)
}

type httpLogWriter struct{ log zerolog.Logger }

func (w httpLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	ev := w.log.Warn()
	if strings.Contains(msg, "TLS handshake error") {
		ev = w.log.Debug()
	}
	ev.Str("from", "net/http").Msg(msg)
	return len(p), nil
}
