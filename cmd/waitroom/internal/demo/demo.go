// Package demo is `waitroom demo`: in one process, a ring of nodes on
// loopback in front of a small origin, a crowd of synthetic visitors who
// keep their cookies and follow the queue page's refresh (the visitor's side
// in edge/crowd), and the merged state printed every second.
package demo

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
)

// Options configure `waitroom demo`.
type Options struct {
	Listen            string // the first node's public address
	Nodes             int
	TotalActiveUsers  int
	NewUsersPerMinute int
	Visitors          int
	Duration          time.Duration // 0: until ctx is done
	QueueingMethod    string
	LogLevel          string
}

// Run runs, in this process, a ring of nodes on loopback in front of a
// small demo origin, with a crowd of synthetic visitors, and prints the
// merged state every second until ctx is done (or Duration has passed).
func Run(ctx context.Context, o Options, out io.Writer, log zerolog.Logger) error {
	if o.Nodes < 1 {
		o.Nodes = 3
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	origin, err := startDemoOrigin()
	if err != nil {
		return err
	}
	defer origin.close()
	dir, err := os.MkdirTemp("", "waitroom-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keyFile, err := writeCookieKey(dir)
	if err != nil {
		return err
	}
	r := &ring{}
	defer r.close()
	if err := r.start(o, origin.url, keyFile, log); err != nil {
		return err
	}
	urls := r.urls()
	writeIntro(out, o, r.nodes, origin.url)

	c := newCrowd(urls, o.Visitors)
	crowdCtx, stopCrowd := context.WithCancel(ctx)
	defer stopCrowd()
	go c.run(crowdCtx)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			stopCrowd()
			fmt.Fprintln(out, "\ndemo stopped")
			return nil
		case <-tick.C:
			writeDemoLine(out, time.Since(start), r.nodes, c, origin)
		}
	}
}

// writeCookieKey writes a cookie key made up for this demo into dir and
// returns the file's path.
func writeCookieKey(dir string) (string, error) {
	keyFile := filepath.Join(dir, "cookie.key")
	kf, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		return "", err
	}
	return keyFile, os.WriteFile(keyFile, kf, 0o600)
}

// ring is the demo's nodes, serving until close.
type ring struct {
	nodes   []*edge.Server
	stop    context.CancelFunc
	serving sync.WaitGroup
}

// start starts o.Nodes nodes one after the other, each joining the first,
// and returns once every one serves.
func (r *ring) start(o Options, originURL, keyFile string, log zerolog.Logger) error {
	runCtx, stop := context.WithCancel(context.Background())
	r.stop = stop
	// The demo's nodes share a gossip key made up for this process: its
	// ring is authenticated like any other, and nothing outside it can
	// join.
	gossipKey := make([]byte, 32)
	if _, err := crand.Read(gossipKey); err != nil {
		return fmt.Errorf("demo gossip key: %w", err)
	}
	for i := 0; i < o.Nodes; i++ {
		listen := "127.0.0.1:0"
		if i == 0 {
			listen = o.Listen
		}
		cfg := demoConfig(o, i, listen, originURL, keyFile)
		if len(r.nodes) > 0 {
			cfg.Seeds = []string{r.nodes[0].Node().Addr()}
		}
		cfg.ApplyDefaults()
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("demo config: %w", err)
		}
		s, err := edge.New(cfg, edge.RunOptions{Log: log, GossipKeys: [][]byte{gossipKey}})
		if err != nil {
			return err
		}
		r.nodes = append(r.nodes, s)
		if err := r.serve(runCtx, s, log); err != nil {
			return fmt.Errorf("demo node %d did not start (is %s free?)", i+1, listen)
		}
	}
	return nil
}

// serve serves s until ctx ends, and returns once it serves.
func (r *ring) serve(ctx context.Context, s *edge.Server, log zerolog.Logger) error {
	ready := make(chan struct{})
	r.serving.Add(1)
	go func() {
		defer r.serving.Done()
		if err := s.Serve(ctx, func(*edge.Server) { close(ready) }); err != nil {
			log.Error().Err(err).Msg("demo node stopped")
		}
	}()
	select {
	case <-ready:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("not serving after 10s")
	}
}

// close stops every node and waits until none serves.
func (r *ring) close() {
	if r.stop != nil {
		r.stop()
	}
	r.serving.Wait()
	for _, s := range r.nodes {
		_ = s.Close()
	}
}

// urls are the nodes' public addresses.
func (r *ring) urls() []string {
	var urls []string
	for _, s := range r.nodes {
		urls = append(urls, "http://"+s.PublicAddr()+"/")
	}
	return urls
}

// demoConfig is node i's configuration: the one demo room, the shared
// cookie key, everything on loopback.
func demoConfig(o Options, i int, listen, originURL, keyFile string) *config.Config {
	return &config.Config{
		Node:          fmt.Sprintf("pop-%d", i+1),
		Listen:        listen,
		Admin:         "127.0.0.1:0",
		Gossip:        "127.0.0.1:0",
		GossipProfile: "local",
		CookieKeyFile: keyFile,
		Rooms: []config.Room{{
			Name:                "demo",
			Origin:              originURL,
			TotalActiveUsers:    o.TotalActiveUsers,
			NewUsersPerMinute:   o.NewUsersPerMinute,
			SessionDuration:     1,
			QueueingMethod:      o.QueueingMethod,
			JSONResponseEnabled: true,
		}},
	}
}

// writeIntro tells the person running the demo what runs and where to look.
func writeIntro(out io.Writer, o Options, nodes []*edge.Server, originURL string) {
	fmt.Fprintf(out, "waitroom demo: %d nodes in front of %s\n", len(nodes), originURL)
	fmt.Fprintf(out, "room \"demo\": total_active_users %d, new_users_per_minute %d, session_duration 1 min, %s\n", o.TotalActiveUsers, o.NewUsersPerMinute, o.QueueingMethod)
	fmt.Fprintf(out, "join the queue yourself: open %s in a browser\n", "http://"+nodes[0].PublicAddr()+"/")
	fmt.Fprintf(out, "admin of the first node: http://%s/state  (or: waitroom state --admin http://%s)\n\n", nodes[0].AdminAddr(), nodes[0].AdminAddr())
}

func writeDemoLine(out io.Writer, elapsed time.Duration, nodes []*edge.Server, c *demoCrowd, o *demoOrigin) {
	doc := nodes[0].StateDoc()
	if len(doc.Rooms) == 0 {
		return
	}
	r := doc.Rooms[0]
	var shares []string
	for _, n := range r.Nodes {
		shares = append(shares, fmt.Sprintf("%s %.0f%%", n.Node, n.TrafficShare*100))
	}
	alive := 0
	for _, m := range doc.Members {
		if m.Alive {
			alive++
		}
	}
	fmt.Fprintf(out, "%5s  %-12s active %3d/%-3d  queued %3d  new this min %3d/%-3d  wait ~%2d min  | crowd: %3d waiting, %3d browsing, %3d done, origin sees %3d | nodes %d alive, shares: %s\n",
		elapsed.Truncate(time.Second), r.Status, r.EstimatedTotalActiveUsers, r.TotalActiveUsers, r.EstimatedQueuedUsers,
		r.NewUsersThisMinute, r.NewUsersPerMinute, r.MaxEstimatedTimeMinutes,
		c.waiting.Load(), c.browsing.Load(), c.done.Load(), o.activeSessions(time.Minute), alive, strings.Join(shares, ", "))
}

// demoOrigin is the site behind the demo: it welcomes visitors and counts
// how many distinct sessions it saw recently.
type demoOrigin struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	// seen maps a visitor id to the last time the origin saw it.
	seen map[string]time.Time
}

func startDemoOrigin() (*demoOrigin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo origin: %w", err)
	}
	o := &demoOrigin{url: "http://" + ln.Addr().String(), seen: map[string]time.Time{}}
	o.srv = &http.Server{Handler: http.HandlerFunc(o.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

func (o *demoOrigin) serve(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Demo-Visitor")
	if id == "" {
		id = "browser:" + r.RemoteAddr
	}
	o.mu.Lock()
	o.seen[id] = time.Now()
	o.mu.Unlock()
	w.Header().Set("X-Demo-Origin", "1")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>You are in</title>
<style>body{font-family:system-ui,sans-serif;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#effaf3;margin:0}
main{background:#fff;border-radius:16px;padding:44px 48px;box-shadow:0 8px 40px rgba(20,60,30,.1);max-width:520px;text-align:center}</style></head>
<body><main><h1>You are in!</h1><p>This is the demo origin behind the waiting room. Your session lasts one minute after your last request.</p>
<p><a href="/">Reload</a></p></main></body></html>`)
}

// activeSessions counts the visitors the origin saw within d.
func (o *demoOrigin) activeSessions(d time.Duration) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	cut := time.Now().Add(-d)
	for id, t := range o.seen {
		if t.After(cut) {
			n++
		} else {
			delete(o.seen, id)
		}
	}
	return n
}

func (o *demoOrigin) close() { _ = o.srv.Close() }

// demoCrowd is the demo's synthetic visitors: each keeps its cookies,
// follows the queue page's Refresh header, browses the origin for a while
// once let in, then leaves and comes back later as a new visitor.
type demoCrowd struct {
	urls                    []string
	visitors                int
	waiting, browsing, done atomic.Int64
	next                    atomic.Int64
}

func newCrowd(urls []string, visitors int) *demoCrowd {
	return &demoCrowd{urls: urls, visitors: visitors}
}

func (c *demoCrowd) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	// Arrivals spread over the first ninety seconds: a rush well above the
	// room's limits.
	for i := 0; i < c.visitors; i++ {
		delay := time.Duration(rand.Int64N(int64(90 * time.Second)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !crowd.Sleep(ctx, delay) {
				return
			}
			for ctx.Err() == nil {
				c.visit(ctx)
				// Come back later as somebody new.
				if !crowd.Sleep(ctx, 30*time.Second+time.Duration(rand.Int64N(int64(90*time.Second)))) {
					return
				}
			}
		}()
	}
}

// visit is one visitor's whole stay: queue (following the queue page's
// Refresh as a browser does, and pressing reload five seconds after an
// error), browse, leave.
func (c *demoCrowd) visit(ctx context.Context) {
	url := c.urls[rand.IntN(len(c.urls))]
	id := strconv.FormatInt(c.next.Add(1), 10)
	v := crowd.NewVisitor(nil, http.Header{"X-Demo-Visitor": {id}}, 10*time.Second)
	c.waiting.Add(1)
	_, err := v.Follow(ctx, url, 5*time.Second, nil)
	c.waiting.Add(-1)
	if err != nil {
		// Rejected (nothing to wait for), or the demo is over.
		return
	}
	c.browsing.Add(1)
	defer c.browsing.Add(-1)
	// Browse for 20–60 s, a page every 5–10 s.
	end := time.Now().Add(20*time.Second + time.Duration(rand.Int64N(int64(40*time.Second))))
	for time.Now().Before(end) {
		if !crowd.Sleep(ctx, 5*time.Second+time.Duration(rand.Int64N(int64(5*time.Second)))) {
			return
		}
		if a := v.Get(ctx, url); a.Err != nil && ctx.Err() != nil {
			return
		}
	}
	c.done.Add(1)
}
