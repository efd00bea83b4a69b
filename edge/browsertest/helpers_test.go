package browsertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

const (
	roomName = "shop"
	// originMarker is what the origin's page says; seeing it means the
	// browser got through.
	originMarker = "ORIGIN-MARKER: you are in the shop"
	// testBudget bounds one test, browser included: the browser is started
	// under a context with this deadline, so it dies with it.
	testBudget = 75 * time.Second
	// refreshWait is how long a test waits for one automatic refresh of the
	// queue page: the interval is at most 20 s + 3 s, plus slack for a slow machine.
	refreshWait = 35 * time.Second
)

// chromium returns the browser to drive: $WAITROOM_CHROMIUM or
// /usr/bin/chromium. Without one the test is skipped, unless
// $WAITROOM_REQUIRE_BROWSER is set (CI), which makes it fail.
func chromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv("WAITROOM_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		msg := fmt.Sprintf("no Chromium at %s (install it with .ci/install-browser.sh, or point $WAITROOM_CHROMIUM at one): skipping the real-browser test", p)
		if os.Getenv("WAITROOM_REQUIRE_BROWSER") != "" {
			t.Fatal(msg + "; but WAITROOM_REQUIRE_BROWSER is set")
		}
		t.Skip(msg)
	}
	return p
}

// toNextMinute moves the node's clock to plus past the start of the next
// minute. The clock is a running one (testkit.NewRunningClock): the node
// reads it for every decision and for its tokens, and the browser's refresh
// timing stays real.
func toNextMinute(c *testkit.Clock, plus time.Duration) {
	c.Set(c.Now().Truncate(time.Minute).Add(time.Minute + plus))
}

// startOrigin starts the one test origin serving the shop's site: "/leave"
// answers with the origin command that ends the visitor's session;
// everything else is a page with the marker.
func startOrigin(t *testing.T) *edgetest.Origin {
	return edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/leave" {
			w.Header().Set("Cf-Waiting-Room-Command", "revoke")
			fmt.Fprint(w, `<!doctype html><title>Goodbye</title><p>Thanks for shopping.</p>`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The shop</title></head>
<body style="font-family:system-ui,sans-serif;margin:40px"><h1 id="origin-marker">%s</h1><p>Path %s.</p></body></html>`, originMarker, r.URL.Path)
	})))
}

// recorder remembers the requests a browser sent to the room.
type recorder struct {
	h    http.Handler
	mu   sync.Mutex
	reqs []seenRequest
}

// seenRequest is one request as the room saw it, and the cookie the room
// set in its answer.
type seenRequest struct {
	Path, Dest, Site, Cookie, SetCookie string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.UserAgent(), "Chrome") {
		s := seenRequest{Path: r.URL.Path, Dest: r.Header.Get("Sec-Fetch-Dest"), Site: r.Header.Get("Sec-Fetch-Site")}
		if c, err := r.Cookie(config.CookieBaseName); err == nil {
			s.Cookie = c.Value
		}
		rec.h.ServeHTTP(w, r)
		s.SetCookie = strings.Join(w.Header().Values("Set-Cookie"), "\n")
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, s)
		rec.mu.Unlock()
		return
	}
	rec.h.ServeHTTP(w, r)
}

// pages returns the document requests the browser made for path.
func (rec *recorder) pages(path string) []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []seenRequest
	for _, s := range rec.reqs {
		if s.Path == path && (s.Dest == "iframe" || s.Dest == "document") {
			out = append(out, s)
		}
	}
	return out
}

// node is one waitroom node with a single room of one slot in front of an
// origin.
type node struct {
	srv   *agent.Agent
	clock *testkit.Clock
	keys  *cookie.Keyring
	cfg   *config.Config
}

// newNode builds the node: total_active_users 1, new_users_per_minute 1,
// session_duration 1, origin command revoke enabled; room may change the
// room's settings and edit the node's. The clock starts two seconds into a
// minute, so that the first steps of a test all happen within one minute.
func newNode(t *testing.T, originURL string, room func(*config.Room), edit ...func(*config.Config)) *node {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "cookie.key")
	kf, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, kf, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Node:          "browser-test",
		Listen:        "127.0.0.1:0",
		Admin:         "127.0.0.1:0",
		Gossip:        "127.0.0.1:0",
		GossipProfile: "local",
		CookieKeyFile: keyFile,
		Rooms: []config.Room{{
			Name:                  roomName,
			Origin:                originURL,
			TotalActiveUsers:      1,
			NewUsersPerMinute:     1,
			SessionDuration:       1,
			EnabledOriginCommands: []string{"revoke"},
		}},
	}
	if room != nil {
		room(&cfg.Rooms[0])
	}
	for _, e := range edit {
		e(cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	clock := testkit.NewRunningClock()
	toNextMinute(clock, 2*time.Second)
	srv, err := agent.New(cfg, agent.Options{Log: zerolog.Nop(), Clock: clock.Now})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	keys, err := agent.LoadCookieKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &node{srv: srv, clock: clock, keys: keys, cfg: cfg}
}

// serve runs the node's listeners (agent.Agent.Serve) and returns the public
// base URL.
func (n *node) serve(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- n.srv.Serve(ctx, func(*agent.Agent) { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not start serving within 10s")
	}
	return "http://" + n.srv.PublicAddr()
}

// token opens a cookie value the room set.
func (n *node) token(t *testing.T, value string) cookie.Token {
	t.Helper()
	tok, err := n.keys.Open(value, roomName, n.clock.Now())
	if err != nil {
		t.Fatalf("the room's cookie does not open: %v", err)
	}
	return tok
}

// goVisitor is a visitor without a browser: an HTTP client with a cookie jar.
type goVisitor struct{ c *http.Client }

func newGoVisitor(t *testing.T, c *http.Client) *goVisitor {
	t.Helper()
	if c == nil {
		c = &http.Client{}
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Jar = jar
	c.Timeout = 10 * time.Second
	return &goVisitor{c: c}
}

func (v *goVisitor) get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := v.c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp, string(body)
}

// allowThirdPartyCookies gives the browser a profile whose cookie setting is
// "Allow third-party cookies". A fresh Chromium profile blocks them (as
// Safari and Chrome's Incognito do): it refuses an unpartitioned cookie
// set in a cross-site iframe, whatever its SameSite attribute.
func allowThirdPartyCookies(t *testing.T) chromedp.ExecAllocatorOption {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	prefs := `{"profile":{"cookie_controls_mode":0,"block_third_party_cookies":false}}`
	if err := os.WriteFile(filepath.Join(dir, "Default", "Preferences"), []byte(prefs), 0o600); err != nil {
		t.Fatal(err)
	}
	return chromedp.UserDataDir(dir)
}

// startBrowser starts a fresh headless Chromium (its own profile in a
// temporary directory) whose life is bounded by testBudget, and returns the
// context of its first tab.
func startBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromium(t)
	out := &testkit.Buffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		// The machine's network is closed: without these Chromium's own
		// background connections are refused and it misbehaves.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
		chromedp.CombinedOutput(out),
	)
	opts = append(opts, extra...)
	base, cancelBase := context.WithTimeout(context.Background(), testBudget)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// Registered after t.TempDir, so it runs first: the browser is gone
	// before its profile directory is removed.
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		cancelBase()
		if t.Failed() {
			t.Logf("chromium output (last 4 KiB):\n%s", out.Tail(4096))
		}
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// pageState is what a test reads from a page: the queue page's parts, or the
// origin's marker.
type pageState struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	H1     string `json:"h1"`
	Label  string `json:"label"`
	Wait   string `json:"wait"`
	Meta   string `json:"meta"`
	Fine   string `json:"fine"`
	Marker string `json:"marker"`
}

const readPageJS = `(() => {
  const q = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ""; };
  const m = document.querySelector('meta[http-equiv="refresh" i]');
  return {url: location.href, title: document.title, h1: q("h1"), label: q(".label"), wait: q(".wait"),
          meta: m ? m.content : "", fine: q(".fine"), marker: q("#origin-marker")};
})()`

func readPage(ctx context.Context) (pageState, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[pageState](readPageJS))
}

// poll calls f every 250 ms (testkit.Poll) until it reports done, ctx ends
// or limit passes. Errors from f (a page between two documents, say) are
// kept for the message and otherwise ignored.
func poll(ctx context.Context, limit time.Duration, f func() (bool, error)) error {
	var last error
	_, done := testkit.Poll(limit, 250*time.Millisecond, func() bool {
		if ctx.Err() != nil {
			return true
		}
		done, err := f()
		if err != nil {
			last = err
		}
		return done
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case done:
		return nil
	case last != nil:
		return fmt.Errorf("gave up after %s; last error: %w", limit, last)
	default:
		return fmt.Errorf("gave up after %s", limit)
	}
}

// browserCookie returns the room's cookie as the browser keeps it, read
// through the DevTools network API, or nil.
func browserCookie(ctx context.Context, url string) (*network.Cookie, error) {
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		return nil, err
	}
	for _, c := range res.Cookies {
		if c.Name == config.CookieBaseName {
			return c, nil
		}
	}
	return nil, nil
}

// frames attaches to cross-site iframes, which Chromium runs as targets of
// their own, and keeps one context per target.
type frames struct {
	parent context.Context
	mu     sync.Mutex
	ctxs   map[target.ID]context.Context
	cancel []context.CancelFunc
}

func newFrames(t *testing.T, parent context.Context) *frames {
	f := &frames{parent: parent, ctxs: map[target.ID]context.Context{}}
	t.Cleanup(func() {
		for _, c := range f.cancel {
			c()
		}
	})
	return f
}

var errNoFrame = errors.New("no iframe target yet")

// find returns a context for the iframe whose URL starts with prefix.
func (f *frames) find(prefix string) (context.Context, error) {
	infos, err := chromedp.Targets(f.parent)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		if info.Type != "iframe" || !strings.HasPrefix(info.URL, prefix) {
			continue
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if c, ok := f.ctxs[info.TargetID]; ok {
			return c, nil
		}
		// Detach, do not close, when the test ends: the frame belongs to
		// the page.
		c, cancel := chromedp.NewContext(f.parent, chromedp.WithTargetID(info.TargetID), chromedp.WithDetachOnCancel())
		f.ctxs[info.TargetID] = c
		f.cancel = append(f.cancel, cancel)
		return c, nil
	}
	return nil, errNoFrame
}

// read reads the page state inside the iframe whose URL starts with prefix.
func (f *frames) read(prefix string) (pageState, error) {
	c, err := f.find(prefix)
	if err != nil {
		return pageState{}, err
	}
	return readPage(c)
}

// saveScreenshot writes png into the test's temporary directory and, when
// $WAITROOM_SCREENSHOT_DIR is set, there too.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(t.TempDir(), name), png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
	}
	dir := os.Getenv("WAITROOM_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("screenshot dir: %v", err)
		return
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", p)
}

// header reads a response header from the DevTools response, whatever its
// case.
func header(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// blockAllCookies gives the browser a profile whose cookie setting is
// "Don't allow sites to save data": it refuses every cookie, first-party
// ones included.
func blockAllCookies(t *testing.T) chromedp.ExecAllocatorOption {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	prefs := `{"profile":{"default_content_setting_values":{"cookies":2}}}`
	if err := os.WriteFile(filepath.Join(dir, "Default", "Preferences"), []byte(prefs), 0o600); err != nil {
		t.Fatal(err)
	}
	return chromedp.UserDataDir(dir)
}
