package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShippedNginxConf keeps the forward-auth configuration the bench runs
// the same as the one the deploy docs ship.
func TestShippedNginxConf(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "deploy", "forward-auth", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != NginxForwardAuthConf {
		t.Error("docs/deploy/forward-auth/nginx.conf changed: copy it into NginxForwardAuthConf (nginxconf.go)")
	}
}

// TestBenchDrivesProxies checks that the bench drives the proxies
// operators run when they are installed: each answers the origin's page,
// the queue page's exact bytes and (nginx) forward-auth, and a very short
// round fills each of their rows. Missing proxies skip the test, or fail
// it under WAITROOM_REQUIRE_PROXIES (set by CI, which installs them).
func TestBenchDrivesProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and the proxies")
	}
	var missing []string
	for _, p := range ExternalProxies {
		if p.Find() == "" {
			missing = append(missing, p.Name)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("WAITROOM_REQUIRE_PROXIES") != "" {
			t.Fatalf("%v not installed, but WAITROOM_REQUIRE_PROXIES is set (.ci/install-proxies.sh installs them)", missing)
		}
		t.Skipf("%v not installed (Debian packages nginx and haproxy)", missing)
	}
	ctx := context.Background()
	env, err := StartEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	xs, _, err := startExternals(env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, x := range xs {
			x.Close()
		}
	}()
	o := Options{Duration: 100 * time.Millisecond, Slice: 100 * time.Millisecond, Rounds: 1, Warmup: 20 * time.Millisecond}
	o.defaults()
	b := newBenchRun(ctx, o, env)
	defer b.closeIdle()
	for _, x := range xs {
		t.Run(x.Name+" answers the origin's page, the queue page and forward-auth", func(t *testing.T) {
			if err := checkExternal(x); err != nil {
				t.Fatal(err)
			}
			page, err := capture(ctx, x.PageURL+"full/", "")
			if err != nil {
				t.Fatal(err)
			}
			if page.Status != env.QueuePage.Status || !bytes.Equal(page.Body, env.QueuePage.Body) {
				t.Errorf("queue page: status %d, %d bytes; want %d, %d bytes", page.Status, len(page.Body), env.QueuePage.Status, len(env.QueuePage.Body))
			}
			for _, h := range []string{"Refresh", "Set-Cookie", "Cache-Control", "Content-Type"} {
				if got, want := page.Header.Get(h), env.QueuePage.Header.Get(h); got != want {
					t.Errorf("queue page header %s: %q, want %q", h, got, want)
				}
			}
		})
		b.addExternal(x)
	}
	for _, e := range b.externals {
		if err := b.roundExternal(0, e); err != nil {
			t.Fatal(err)
		}
	}
	b.rep.finish()
	if b.errors != 0 {
		t.Errorf("%d errors", b.errors)
	}
	if want := 6 + 6 + 3; len(b.rep.External) != want {
		t.Errorf("%d rows, want %d", len(b.rep.External), want)
	}
	if len(b.rep.Split) != 2 || len(b.rep.Split[0].Admitted) != 1 || len(b.rep.Split[1].Queued) != 1 {
		t.Errorf("the proxies' own CPU: %+v, want a figure per round for each", b.rep.Split)
	}
	var out bytes.Buffer
	if err := b.rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "against the proxies operators run: nginx") {
		t.Errorf("the report has no rows of the proxies:\n%s", out.String())
	}
	for _, c := range b.rep.External {
		if len(c.Base) != 1 || len(c.Room) != 1 || c.Base[0] <= 0 || c.Room[0] <= 0 {
			t.Errorf("%s vs %s: base %v waitroom %v", c.Name, c.Baseline, c.Base, c.Room)
		}
	}
}
