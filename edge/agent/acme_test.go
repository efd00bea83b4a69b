package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// pebbleBinaries finds Debian's pebble, a small ACME CA for tests, and its
// pebble-challtestsrv, whose DNS server the CA asks for the test's host
// names. Without them the test is skipped, unless $WAITROOM_REQUIRE_PEBBLE
// is set (CI, after .ci/install-debian.sh installs pebble), which makes it fail.
func pebbleBinaries(t *testing.T) (pebble, challtestsrv string) {
	t.Helper()
	pebble, err1 := exec.LookPath("pebble")
	challtestsrv, err2 := exec.LookPath("pebble-challtestsrv")
	if err1 != nil || err2 != nil {
		msg := "no pebble and pebble-challtestsrv on $PATH (install Debian's pebble package, as .ci/run does): skipping the ACME test"
		if os.Getenv("WAITROOM_REQUIRE_PEBBLE") != "" {
			t.Fatal(msg + "; but WAITROOM_REQUIRE_PEBBLE is set")
		}
		t.Skip(msg)
	}
	return pebble, challtestsrv
}

// pebbleCA is a running pebble: its directory, the CA file that trusts the
// directory's own HTTPS, and the root its certificates chain to.
type pebbleCA struct {
	directory string
	caFile    string
	roots     *x509.CertPool
}

// startProcess runs a program the test needs until the test ends, its
// output kept for the failure message.
func startProcess(t *testing.T, out *testkit.Buffer, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", filepath.Base(name), out.Tail(4000))
		}
	})
}

// startPebble starts pebble on loopback, validating challenges for real:
// its DNS queries go to a pebble-challtestsrv that answers 127.0.0.1 for
// every name, and it checks tls-alpn-01 on tlsPort and http-01 on httpPort.
// (PEBBLE_VA_ALWAYS_VALID would skip the validation, and with it the part
// of the node that answers the CA.) Its own HTTPS uses a certificate from a
// test CA, which the node is told to trust with directory_ca_file.
func startPebble(t *testing.T, tlsPort, httpPort int) *pebbleCA {
	t.Helper()
	pebble, challtestsrv := pebbleBinaries(t)
	dir := t.TempDir()
	ca := agent.NewTestCA(t)
	cert, key := ca.Issue(t, 1, "localhost", "127.0.0.1")
	p := &pebbleCA{caFile: filepath.Join(dir, "directory-ca.pem")}
	for name, data := range map[string][]byte{"pebble.crt": cert, "pebble.key": key, "directory-ca.pem": ca.PEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dnsPort, listenPort, mgmtPort, chMgmtPort := testkit.FreePort(t), testkit.FreePort(t), testkit.FreePort(t), testkit.FreePort(t)
	var chOut, pebbleOut testkit.Buffer
	startProcess(t, &chOut, nil, challtestsrv,
		"-dns01", "127.0.0.1:"+strconv.Itoa(dnsPort), "-management", "127.0.0.1:"+strconv.Itoa(chMgmtPort),
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "")
	config, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress":                  "127.0.0.1:" + strconv.Itoa(listenPort),
		"managementListenAddress":        "127.0.0.1:" + strconv.Itoa(mgmtPort),
		"certificate":                    filepath.Join(dir, "pebble.crt"),
		"privateKey":                     filepath.Join(dir, "pebble.key"),
		"httpPort":                       httpPort,
		"tlsPort":                        tlsPort,
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
	}})
	configPath := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	// No artificial validation delays, and no nonces refused at random:
	// the test measures the node, not pebble's fault injection.
	startProcess(t, &pebbleOut, []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0"}, pebble,
		"-config", configPath, "-dnsserver", "127.0.0.1:"+strconv.Itoa(dnsPort))
	p.directory = fmt.Sprintf("https://127.0.0.1:%d/dir", listenPort)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	get := func(url string) ([]byte, error) {
		resp, err := client.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		return b, err
	}
	var lastErr error
	testkit.Eventually(t, testkit.Wait{What: "pebble's directory answering", Timeout: 20 * time.Second, Seen: func() string { return fmt.Sprintf("%v; pebble: %s", lastErr, pebbleOut.Tail(10)) }}, func() bool {
		_, lastErr = get(p.directory)
		return lastErr == nil
	})
	// The root pebble signs with is made at its start, and served on its
	// management endpoint.
	root, err := get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmtPort))
	if err != nil {
		t.Fatalf("pebble's root: %v", err)
	}
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's root is no PEM certificate: %q", root)
	}
	return p
}

// TestACMECertificates has a node obtain a certificate for a room's host
// from a local ACME CA (pebble) at a visitor's first TLS handshake, and the
// edgetest.Visitor, trusting only that CA's root, reach the origin over HTTP/2. The
// CA validates the node for real, in each of the ways the node answers it.
func TestACMECertificates(t *testing.T) {
	const host = "shop.waitroom.test"
	for _, tc := range []struct {
		name     string
		redirect bool
	}{
		{"with tls-alpn-01 answered on the TLS listener", false},
		// The CA cannot reach a TLS listener (tlsPort is closed), so the
		// node falls back to http-01, which only a redirect listener
		// can answer.
		{"with http-01 answered on the redirect listener", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listenPort, redirectPort := testkit.FreePort(t), testkit.FreePort(t)
			caTLSPort := listenPort
			if tc.redirect {
				caTLSPort = testkit.FreePort(t) // nothing listens there
			}
			ca := startPebble(t, caTLSPort, redirectPort)

			org := edgetest.NewOrigin(t)
			shop := edgetest.Room("shop", 100, 100)
			shop.Host = host
			cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, t.TempDir()), org.URL, shop)
			cfg.Listen = "127.0.0.1:" + strconv.Itoa(listenPort)
			cache := t.TempDir()
			cfg.TLS.ACME = config.ACMEConfig{Enabled: true, DirectoryURL: ca.directory, DirectoryCAFile: ca.caFile,
				Email: "ops@waitroom.test", CacheDir: cache}
			if tc.redirect {
				cfg.TLS.RedirectListen = "127.0.0.1:" + strconv.Itoa(redirectPort)
			}
			srv := edgetest.ServeNode(t, cfg, nil)

			client := httpsClient(ca.roots, srv.PublicAddr())
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/products", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("the first edgetest.Visitor over HTTPS: %v", err)
			}
			got := edgetest.Body(t, resp)
			if resp.StatusCode != http.StatusOK || got != "origin: /products" || resp.ProtoMajor != 2 {
				t.Errorf("%s %d %q; want HTTP/2 200 from the origin", resp.Proto, resp.StatusCode, got)
			}
			if leaf := resp.TLS.PeerCertificates[0]; len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != host {
				t.Errorf("certificate for %v; want %s", leaf.DNSNames, host)
			}
			if _, err := os.Stat(filepath.Join(cache, host)); err != nil {
				t.Errorf("the certificate is not kept in cache_dir for restarts: %v", err)
			}
			t.Run("a host no room serves gets no certificate", func(t *testing.T) {
				conn, err := tls.Dial("tcp", srv.PublicAddr(), &tls.Config{RootCAs: ca.roots, ServerName: "other.waitroom.test"})
				if err == nil {
					_ = conn.Close()
					t.Error("the node completed a handshake for a host that neither a room nor tls.acme.hosts names")
				}
			})
		})
	}
}
