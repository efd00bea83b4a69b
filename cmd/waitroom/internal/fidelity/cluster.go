package fidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// roomName is the one room every fidelity ring serves.
const roomName = "fidelity"

// startTimeout bounds how long a ring of up to startNodes nodes may take
// to come up (every node healthy and seeing all the others); each node
// more adds startPerNode: on one machine's few cores, a hundred processes
// start and form their pools one after another.
const (
	startTimeout = 45 * time.Second
	startNodes   = 10
	startPerNode = time.Second
)

// startTimeoutFor is how long a ring of n nodes may take to come up.
func startTimeoutFor(n int) time.Duration {
	return startTimeout + time.Duration(max(0, n-startNodes))*startPerNode
}

// node is one `waitroom serve` process.
type node struct {
	name                  string
	listen, admin, gossip string
	// datacenter is the node's data center and wan its address between
	// data centers ("" both when the ring names none).
	datacenter, wan string
	args            []string
	logPath         string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// waitErr is how the process ended (nil: exit code 0); read it once
	// exited is closed.
	waitErr error
	// ending is set when the run ends the process on purpose (the
	// restart's kill, the stop at the end), before it signals it: that
	// exit is nobody's fault. Any other is the node's own.
	ending bool
	// deaths are the exits of the node's own, as "pop-1 at 12:03:31.2:
	// exit status 2"; onDeath, when set, hears of each as it happens.
	deaths  []string
	onDeath func(string)
}

// cluster is a ring of nodes in front of one origin, with its files in dir.
type cluster struct {
	binary string
	dir    string
	nodes  []*node
	client *http.Client
}

// startCluster writes the key files and the room's config into dir and
// starts n nodes on free loopback ports, the first the others' seed. It
// returns once every node is healthy and sees the whole ring.
func startCluster(ctx context.Context, binary, dir string, s Scenario, originURL string) (*cluster, error) {
	c := &cluster{binary: binary, dir: dir, client: &http.Client{Timeout: 2 * time.Second}}
	cookieKey := filepath.Join(dir, "cookie.key")
	gossipKey := filepath.Join(dir, "gossip.key")
	if err := c.keygen(ctx, cookieKey); err != nil {
		return nil, err
	}
	if err := c.keygen(ctx, gossipKey, "--gossip"); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "room.yaml")
	if err := os.WriteFile(config, roomConfig(s, originURL), 0o600); err != nil {
		return nil, fmt.Errorf("writing the room config: %w", err)
	}
	ports, err := testkit.FreePorts(portsPerNode(s) * s.Nodes)
	if err != nil {
		return nil, err
	}
	c.nodes = layout(s, dir, ringFiles{config: config, cookieKey: cookieKey, gossipKey: gossipKey}, ports)
	for _, n := range c.nodes {
		if err := n.start(binary); err != nil {
			c.stop()
			return nil, err
		}
	}
	if err := c.waitReady(ctx, c.nodes); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// ringFiles are the files every node of a ring reads.
type ringFiles struct{ config, cookieKey, gossipKey string }

// portsPerNode is how many ports each node of s binds: public, admin and
// gossip, and gossip between data centers when s names data centers.
func portsPerNode(s Scenario) int {
	if s.Datacenters != nil {
		return 4
	}
	return 3
}

// layout lays out the ring of s in dir on ports (portsPerNode of them per
// node): each node's name, addresses and `waitroom serve` arguments.
// Without data centers, the first node is every other's seed. With them,
// the first node of each data center is its members' seed, and every node
// names the addresses between data centers of the other data centers'
// nodes (any of which may carry), as an operator would list them.
func layout(s Scenario, dir string, f ringFiles, ports []int) []*node {
	per := portsPerNode(s)
	addr := func(i, k int) string { return "127.0.0.1:" + strconv.Itoa(ports[per*i+k]) }
	nodes := make([]*node, s.Nodes)
	for i := range s.Nodes {
		name := fmt.Sprintf("pop-%d", i+1)
		n := &node{
			name:    name,
			listen:  addr(i, 0),
			admin:   addr(i, 1),
			gossip:  addr(i, 2),
			logPath: filepath.Join(dir, name+".log"),
		}
		if s.Datacenters != nil {
			n.datacenter, n.wan = s.Datacenters[i], addr(i, 3)
		}
		nodes[i] = n
	}
	for i, n := range nodes {
		n.args = []string{"serve", "--config", f.config, "--node", n.name,
			"--listen", n.listen, "--admin", n.admin, "--gossip", n.gossip,
			"--gossip-profile", "local",
			"--cookie-key-file", f.cookieKey, "--gossip-key-file", f.gossipKey,
			"--data-dir", filepath.Join(dir, n.name+".data"),
			"--log-format", "json"}
		if seed := nodes[firstOfDatacenter(nodes, i)]; seed != n {
			n.args = append(n.args, "--seed", seed.gossip)
		}
		if n.datacenter != "" {
			n.args = append(n.args, "--datacenter", n.datacenter, "--wan-gossip", n.wan)
			for _, o := range nodes {
				if o.datacenter != n.datacenter {
					n.args = append(n.args, "--wan-seed", o.wan)
				}
			}
		}
		if w := s.WAN; w != nil {
			n.args = append(n.args, "--test-wan-delay", w.Delay.String(), "--test-wan-jitter", w.Jitter.String(),
				"--test-wan-loss", strconv.FormatFloat(w.Loss, 'g', -1, 64))
		}
		if i < len(s.ClockOffsets) && s.ClockOffsets[i] != 0 {
			n.args = append(n.args, "--test-clock-offset", s.ClockOffsets[i].String())
		}
	}
	return nodes
}

// firstOfDatacenter is the index of the first node of node i's data center
// (of the ring, when it names none).
func firstOfDatacenter(nodes []*node, i int) int {
	for j, o := range nodes {
		if o.datacenter == nodes[i].datacenter {
			return j
		}
	}
	return i
}

// datacenterSize is how many nodes the ring has in data center dc (all of
// them when it names none, dc "").
func (c *cluster) datacenterSize(dc string) int {
	k := 0
	for _, o := range c.nodes {
		if o.datacenter == dc {
			k++
		}
	}
	return k
}

// carriersWanted is how many nodes carry figures between data centers in
// a ring of whole data centers: serve's default of two per data center,
// or all of a smaller one's nodes.
func (c *cluster) carriersWanted() int {
	size := map[string]int{}
	for _, o := range c.nodes {
		size[o.datacenter]++
	}
	k := 0
	for _, n := range size {
		k += min(n, defaultCarriers)
	}
	return k
}

// defaultCarriers is serve's carriers per data center when the config
// names none.
const defaultCarriers = 2

// roomConfig is the config file every node reads: the origin and the
// scenario's room.
func roomConfig(s Scenario, originURL string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "origin: %q\nlog_level: info\nrooms:\n", originURL)
	method := s.QueueingMethod
	if method == "" {
		method = "fifo"
	}
	fmt.Fprintf(&b, "  - name: %s\n    total_active_users: %d\n    new_users_per_minute: %d\n    session_duration: %d\n    queueing_method: %s\n",
		roomName, s.Limits.TotalActiveUsers, s.Limits.NewUsersPerMinute, int(s.Limits.SessionDuration/time.Minute), method)
	// The crowd's apps ask for the queue answer's JSON form, to read what
	// they were told (see shown.go).
	b.WriteString("    json_response_enabled: true\n")
	if s.Limits.DisableSessionRenewal {
		b.WriteString("    disable_session_renewal: true\n")
	}
	writePriorityGroup(&b, s)
	return b.Bytes()
}

// keygen writes a key file made by the binary's own `waitroom keygen`, so
// the run uses the formats an operator would.
func (c *cluster) keygen(ctx context.Context, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, c.binary, append([]string{"keygen"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s keygen %s: %w: %s", c.binary, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// url is the public address of node i.
func (c *cluster) url(i int) string { return "http://" + c.nodes[i].listen + "/" }

// waitReady polls until every node of want lists every node of its data
// center (of the ring, when it names none) as alive and answers /readyz (it
// heard from the ring and knows its time), and, with data centers, until
// the pool between data centers has formed: each of want that carries
// meets every carrier of the ring there, and a data center wholly in want
// has its carriers; or until a process exits, or startTimeout passes.
func (c *cluster) waitReady(ctx context.Context, want []*node) error {
	timeout := startTimeoutFor(len(c.nodes))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last []string
	for {
		ready := true
		last = last[:0]
		carrying := map[string]int{}
		inWant := map[string]int{}
		for _, n := range want {
			if n.hasExited() {
				return fmt.Errorf("node %s exited while starting: %s", n.name, n.logTail())
			}
			inWant[n.datacenter]++
			v, err := c.view(ctx, n)
			last = append(last, fmt.Sprintf("%s: %d alive, carrier %v, %d between data centers (%v)", n.name, v.alive, v.carrier, v.wanMembers, err))
			if err != nil || v.alive < c.datacenterSize(n.datacenter) || !c.isReady(ctx, n) {
				ready = false
			}
			if n.datacenter != "" && v.carrier {
				carrying[n.datacenter]++
				if v.wanMembers < c.carriersWanted() {
					ready = false
				}
			}
		}
		for dc, k := range inWant {
			if dc != "" && k == c.datacenterSize(dc) && carrying[dc] < min(k, defaultCarriers) {
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			var tails []string
			for _, n := range want {
				tails = append(tails, n.name+": "+n.logTail())
			}
			return fmt.Errorf("the ring did not come up within %v (%s): %s", timeout, strings.Join(last, "; "), strings.Join(tails, "; "))
		case <-tick.C:
		}
	}
}

// isReady asks a node's /readyz, as a load balancer would.
func (c *cluster) isReady(ctx context.Context, n *node) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// nodeView is what the run reads of a node's /state: waitReady, and the
// test that the ring forms its data centers.
type nodeView struct {
	datacenter string       // the node's own data center
	members    []memberView // the members of its pool, itself included
	alive      int          // of them alive
	carrier    bool         // it carries its data center's figures
	wanMembers int          // members of the pool between data centers it meets
}

// memberView is one member of a node's pool, as the node sees it.
type memberView struct {
	name, datacenter string
	alive            bool
}

// view asks a node's admin endpoint whom it sees in its pool and whether it
// carries, and meets whom, between data centers.
func (c *cluster) view(ctx context.Context, n *node) (nodeView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/state", nil)
	if err != nil {
		return nodeView{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nodeView{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nodeView{}, fmt.Errorf("%s/state: %s", n.admin, resp.Status)
	}
	var doc struct {
		Datacenter string `json:"datacenter"`
		Members    []struct {
			Name       string `json:"name"`
			Alive      bool   `json:"alive"`
			Datacenter string `json:"datacenter"`
		} `json:"members"`
		Gossip struct {
			Carrier bool `json:"carrier"`
			WAN     *struct {
				Members int `json:"members"`
			} `json:"wan"`
		} `json:"gossip"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nodeView{}, fmt.Errorf("%s/state: %w", n.admin, err)
	}
	v := nodeView{datacenter: doc.Datacenter, carrier: doc.Gossip.Carrier}
	for _, m := range doc.Members {
		v.members = append(v.members, memberView{name: m.Name, datacenter: m.Datacenter, alive: m.Alive})
		if m.Alive {
			v.alive++
		}
	}
	if doc.Gossip.WAN != nil {
		v.wanMembers = doc.Gossip.WAN.Members
	}
	return v, nil
}

// stop ends every node cleanly (SIGTERM), killing those that do not stop
// within ten seconds.
func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.stop(10 * time.Second)
		}()
	}
	wg.Wait()
}

// start runs the node's process, its output into its log file.
func (n *node) start(binary string) error {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	cmd := exec.Command(binary, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("node %s: starting %s: %w", n.name, binary, err)
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited, n.ending = cmd, exited, false
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.waitErr = err
		var death string
		if !n.ending {
			how := "exit status 0"
			if err != nil {
				how = err.Error()
			}
			death = fmt.Sprintf("%s at %s: %s", n.name, clock(time.Now()), how)
			n.deaths = append(n.deaths, death)
		}
		heard := n.onDeath
		n.mu.Unlock()
		close(exited)
		if death != "" && heard != nil {
			heard(death)
		}
	}()
	return nil
}

// deathsSeen are the node's exits of its own so far.
func (n *node) deathsSeen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.deaths)
}

// hearDeaths has fn told of each exit of the node's own from now on.
func (n *node) hearDeaths(fn func(string)) {
	n.mu.Lock()
	n.onDeath = fn
	n.mu.Unlock()
}

// end marks the node's process as ended on purpose, and returns it and
// the channel closed when it exits.
func (n *node) end() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ending = true
	return n.cmd, n.exited
}

func (n *node) hasExited() bool {
	n.mu.Lock()
	ch := n.exited
	n.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// kill ends the process at once, as a crash would, and waits for it.
func (n *node) kill() {
	cmd, ch := n.end()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-ch
}

// stop asks the process to leave (SIGTERM) and kills it if it has not
// within grace.
func (n *node) stop(grace time.Duration) {
	cmd, ch := n.end()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(grace):
		n.kill()
	}
}

// logTail is the end of the node's log, for an error message.
func (n *node) logTail() string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	if s == "" {
		return "(empty log)"
	}
	return s
}
