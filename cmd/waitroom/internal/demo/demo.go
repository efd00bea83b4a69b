// Package demo is `waitroom demo`: in one process, a ring of nodes on
// loopback (the harness's cluster, edge/edgetest, on the wall clock) in
// front of the test origin serving a small site, a crowd of synthetic
// visitors who keep their cookies and follow the queue page's refresh (the
// visitor's side in edge/crowd), and the merged state printed every second.
// Each node writes its access log to a file of its own, where one visitor
// can be followed from its first page to the origin, from node to node.
package demo

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
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
	// AccessLogDir is where each node writes its access log
	// (NODE.access.log); a new temporary directory when empty.
	AccessLogDir string
	// Rush is the time over which the crowd's visitors first arrive
	// (default 90 s: a rush well above the room's limits).
	Rush time.Duration
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
	if o.AccessLogDir == "" {
		dir, err := os.MkdirTemp("", "waitroom-demo-")
		if err != nil {
			return fmt.Errorf("demo access logs: %w", err)
		}
		o.AccessLogDir = dir
	}
	site := &demoSite{seen: map[string]time.Time{}}
	origin, err := edgetest.StartOrigin(edgetest.Unrecorded(), edgetest.Serving(site))
	if err != nil {
		return fmt.Errorf("demo origin: %w", err)
	}
	defer origin.Close()
	ring, err := startRing(o, origin, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := ring.Close(); err != nil {
			log.Error().Err(err).Msg("demo node stopped")
		}
	}()
	nodes := ring.Servers()
	writeIntro(out, o, nodes, origin.URL)

	c := newCrowd(urls(ring), o.Visitors, o.Rush)
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
			writeDemoLine(out, time.Since(start), nodes, c, site)
		}
	}
}

// startRing starts o.Nodes nodes on the wall clock, each serving, the
// first on o.Listen, and returns once they form one ring.
func startRing(o Options, origin *edgetest.Origin, log zerolog.Logger) (*edgetest.Cluster, error) {
	// The demo's nodes share a gossip key made up for this process: its
	// ring is authenticated like any other, and nothing outside it can
	// join.
	gossipKey := make([]byte, 32)
	if _, err := crand.Read(gossipKey); err != nil {
		return nil, fmt.Errorf("demo gossip key: %w", err)
	}
	ring, err := edgetest.OpenCluster(edgetest.ClusterOptions{
		Rooms:      []config.Room{demoRoom(o)},
		WallClock:  true,
		Serve:      true,
		Origin:     origin,
		Name:       func(i int) string { return fmt.Sprintf("pop-%d", i+1) },
		Log:        &log,
		GossipKeys: [][]byte{gossipKey},
	})
	if err != nil {
		return nil, fmt.Errorf("demo ring: %w", err)
	}
	ring.Edit = func(n *edgetest.Node, cfg *config.Config) {
		if n == ring.Nodes[0] {
			cfg.Listen = o.Listen
		}
		cfg.AccessLog = AccessLogPath(o.AccessLogDir, n.Name)
		// Each node keeps its data directory beside its access log, as a
		// node that serves should.
		cfg.DataDir = filepath.Join(o.AccessLogDir, n.Name+".data")
	}
	if err := ring.Grow(o.Nodes); err != nil {
		_ = ring.Close()
		return nil, fmt.Errorf("demo ring (is %s free?): %w", o.Listen, err)
	}
	return ring, nil
}

// AccessLogPath is where node name writes its access log in dir.
func AccessLogPath(dir, name string) string {
	return filepath.Join(dir, name+".access.log")
}

// urls are the nodes' public addresses, where the crowd goes.
func urls(ring *edgetest.Cluster) []string {
	var urls []string
	for _, n := range ring.Nodes {
		urls = append(urls, n.URL()+"/")
	}
	return urls
}

// demoRoom is the one demo room, in front of the demo origin.
func demoRoom(o Options) config.Room {
	return config.Room{
		Name:                "demo",
		TotalActiveUsers:    o.TotalActiveUsers,
		NewUsersPerMinute:   o.NewUsersPerMinute,
		SessionDuration:     1,
		QueueingMethod:      o.QueueingMethod,
		JSONResponseEnabled: true,
	}
}

// writeIntro tells the person running the demo what runs and where to look.
func writeIntro(out io.Writer, o Options, nodes []*agent.Agent, originURL string) {
	fmt.Fprintf(out, "waitroom demo: %d nodes in front of %s\n", len(nodes), originURL)
	fmt.Fprintf(out, "room \"demo\": total_active_users %d, new_users_per_minute %d, session_duration 1 min, %s\n", o.TotalActiveUsers, o.NewUsersPerMinute, o.QueueingMethod)
	fmt.Fprintf(out, "join the queue yourself: open %s in a browser\n", "http://"+nodes[0].PublicAddr()+"/")
	fmt.Fprintf(out, "admin of the first node: http://%s/state  (or: waitroom state --addr %s)\n", nodes[0].AdminAddr(), nodes[0].AdminAddr())
	fmt.Fprintf(out, "access logs, one per node: %s\n", AccessLogPath(o.AccessLogDir, "*"))
	fmt.Fprintf(out, "follow one visitor through the ring: take the \"visitor\" of any line, then\n")
	fmt.Fprintf(out, "  grep -h '\"visitor\":\"ID\"' %s | sort\n", AccessLogPath(o.AccessLogDir, "*"))
	fmt.Fprintf(out, "  (its first page and check-ins on the node it came to, then its pages on whichever node served them)\n\n")
}

func writeDemoLine(out io.Writer, elapsed time.Duration, nodes []*agent.Agent, c *demoCrowd, site *demoSite) {
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
		c.waiting.Load(), c.browsing.Load(), c.done.Load(), site.activeSessions(time.Minute), alive, strings.Join(shares, ", "))
}

// demoSite is the site behind the demo: it welcomes visitors and counts
// how many distinct sessions it saw recently.
type demoSite struct {
	mu sync.Mutex
	// seen maps a visitor id to the last time the site saw it.
	seen map[string]time.Time
}

func (s *demoSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Demo-Visitor")
	if id == "" {
		id = "browser:" + r.RemoteAddr
	}
	s.mu.Lock()
	s.seen[id] = time.Now()
	s.mu.Unlock()
	w.Header().Set("X-Demo-Origin", "1")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>You are in</title>
<style>body{font-family:system-ui,sans-serif;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#effaf3;margin:0}
main{background:#fff;border-radius:16px;padding:44px 48px;box-shadow:0 8px 40px rgba(20,60,30,.1);max-width:520px;text-align:center}</style></head>
<body><main><h1>You are in!</h1><p>This is the demo origin behind the waiting room. Your session lasts one minute after your last request.</p>
<p><a href="/">Reload</a></p></main></body></html>`)
}

// activeSessions counts the visitors the site saw within d.
func (s *demoSite) activeSessions(d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	cut := time.Now().Add(-d)
	for id, t := range s.seen {
		if t.After(cut) {
			n++
		} else {
			delete(s.seen, id)
		}
	}
	return n
}

// demoCrowd is the demo's synthetic visitors: each keeps its cookies,
// follows the queue page's Refresh header, browses the origin for a while
// once let in, then leaves and comes back later as a new visitor.
type demoCrowd struct {
	urls                    []string
	visitors                int
	rush                    time.Duration
	waiting, browsing, done atomic.Int64
	next                    atomic.Int64
}

func newCrowd(urls []string, visitors int, rush time.Duration) *demoCrowd {
	if rush <= 0 {
		rush = 90 * time.Second
	}
	return &demoCrowd{urls: urls, visitors: visitors, rush: rush}
}

func (c *demoCrowd) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	// Arrivals spread over the rush: well above the room's limits.
	for i := 0; i < c.visitors; i++ {
		delay := time.Duration(rand.Int64N(int64(c.rush)))
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

// visit is one visitor's whole stay: queue at one node (following the
// queue page's Refresh as a browser does, and pressing reload five seconds
// after an error), browse, each page from any node as DNS round robin would
// send it, leave.
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
		if a := v.Get(ctx, c.urls[rand.IntN(len(c.urls))]); a.Err != nil && ctx.Err() != nil {
			return
		}
	}
	c.done.Add(1)
}
