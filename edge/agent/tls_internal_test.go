package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestCA is a certificate authority made for one test: it issues
// certificates for loopback names, and its pool is what the test's clients
// trust. Exported for the package's external tests.
type TestCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte         // the CA certificate
	Pool *x509.CertPool // trusting only this CA
}

// NewTestCA makes a CA valid for a day.
func NewTestCA(tb testing.TB) *TestCA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "waitroom test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &TestCA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	return ca
}

// Issue returns a PEM certificate and key for names (host names or IP
// addresses), with serial as its serial number so that a test can tell two
// apart.
func (ca *TestCA) Issue(tb testing.TB, serial int64, names ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// WritePair writes a certificate and key issued for names into dir as
// cert.pem and key.pem (replacing them by rename, as certificate managers
// do) and returns their paths.
func (ca *TestCA) WritePair(tb testing.TB, dir string, serial int64, names ...string) (certPath, keyPath string) {
	tb.Helper()
	c, k := ca.Issue(tb, serial, names...)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	WriteFileByRename(tb, certPath, c)
	WriteFileByRename(tb, keyPath, k)
	return certPath, keyPath
}

// WriteFileByRename writes data to path through a temporary file renamed
// over it.
func WriteFileByRename(tb testing.TB, path string, data []byte) {
	tb.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

func serialOf(c *tls.Certificate) int64 {
	if c == nil || c.Leaf == nil {
		return -1
	}
	return c.Leaf.SerialNumber.Int64()
}

func TestCertificateFilesReload(t *testing.T) {
	ca := NewTestCA(t)
	dir := t.TempDir()
	certPath, keyPath := ca.WritePair(t, dir, 1, "shop.waitroom.test")
	var logs testkit.Buffer
	cf, err := loadCertFiles(certPath, keyPath, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	check := func() {
		cf.nextCheck.Store(0)
		cf.reloadIfChanged(time.Now())
	}
	steps := []struct {
		name   string
		change func()
		serial int64
		log    string
	}{
		{"unchanged files are not read again", func() {}, 1, ""},
		{"a renewed pair is served", func() { ca.WritePair(t, dir, 2, "shop.waitroom.test") }, 2, "serving the new certificate"},
		{"a certificate whose key is not yet written keeps the previous pair, with an error logged",
			func() { c, _ := ca.Issue(t, 3, "shop.waitroom.test"); WriteFileByRename(t, certPath, c) }, 2, "do not load; still serving the previous certificate"},
		{"a broken pair is not logged again while it stays as it is", func() {}, 2, ""},
		{"its key written, the new pair is served", func() {
			// The key of serial 3 was never written: issue a fresh pair
			// and write the key last, as a renewal does.
			c, k := ca.Issue(t, 4, "shop.waitroom.test")
			WriteFileByRename(t, certPath, c)
			check()
			WriteFileByRename(t, keyPath, k)
		}, 4, "serving the new certificate"},
		{"files that vanish keep the previous pair, with an error logged", func() { _ = os.Remove(certPath) }, 4, "cannot be read"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := len(logs.String())
			st.change()
			check()
			got, _ := cf.getCertificate(&tls.ClientHelloInfo{ServerName: "shop.waitroom.test"})
			if s := serialOf(got); s != st.serial {
				t.Errorf("serving serial %d; want %d", s, st.serial)
			}
			logged := logs.String()[before:]
			if st.log == "" && logged != "" {
				t.Errorf("logged %q; want nothing", logged)
			}
			if st.log != "" && !strings.Contains(logged, st.log) {
				t.Errorf("logged %q; want a line with %q", logged, st.log)
			}
		})
	}
}

func TestRedirectToHTTPS(t *testing.T) {
	for _, tc := range []struct {
		name, port, host, uri string
		status                int
		location              string
	}{
		{"a host and path go to the same over HTTPS on 443", "", "shop.example.com", "/cart?item=7", 308, "https://shop.example.com/cart?item=7"},
		{"the plain port is dropped", "", "shop.example.com:80", "/", 308, "https://shop.example.com/"},
		{"another HTTPS port is named", "8443", "shop.example.com:8080", "/a", 308, "https://shop.example.com:8443/a"},
		{"an IPv4 address is kept", "8443", "127.0.0.1:8080", "/", 308, "https://127.0.0.1:8443/"},
		{"an IPv6 address keeps its brackets", "", "[::1]:80", "/x", 308, "https://[::1]/x"},
		{"an IPv6 address with a port", "8443", "[::1]", "/x", 308, "https://[::1]:8443/x"},
		{"a trailing dot is dropped", "", "shop.example.com.", "/", 308, "https://shop.example.com/"},
		{"a Host that is no host name is refused", "", "evil.com/@x", "/", 400, ""},
		{"an empty Host is refused", "", "", "/", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://placeholder"+tc.uri, nil)
			r.Host = tc.host
			w := httptest.NewRecorder()
			redirectToHTTPS(tc.port).ServeHTTP(w, r)
			if w.Code != tc.status || w.Header().Get("Location") != tc.location {
				t.Errorf("%d %q; want %d %q", w.Code, w.Header().Get("Location"), tc.status, tc.location)
			}
		})
	}
}
