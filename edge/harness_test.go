package edge_test

// The edge tests' names for the one harness, edge/edgetest: the fake clock
// (testkit.Clock), one node built with edge.New on loopback (startServer,
// serveNode, newFixture), the one in-process cluster (newCluster: N nodes,
// fake or wall clock, optionally gossiping through a gossip.FaultNet) in
// front of the one test origin (edgetest.Origin), and a visitor that keeps
// its cookies; and small helpers of their own to read bodies, cookies,
// JSON and the admin endpoint. Waiting is done with testkit.Eventually;
// the allocation loop is run with Server.RefreshAllocations rather than
// slept for.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

type (
	fixture     = edgetest.Fixture
	visitor     = edgetest.Visitor
	cluster     = edgetest.Cluster
	clusterNode = edgetest.Node
	clusterOpts = edgetest.ClusterOptions
)

var (
	newFakeClock   = edgetest.NewClock
	keyFile        = edgetest.KeyFile
	room           = edgetest.Room
	nodeConfig     = edgetest.NodeConfig
	testGossipKeys = edgetest.GossipKeys
	startServer    = edgetest.StartServer
	serveNode      = edgetest.ServeNode
	newFixture     = edgetest.NewFixture
	newFixtureWith = edgetest.NewFixtureWith
	newVisitor     = edgetest.NewVisitor
	refreshSeconds = edgetest.RefreshSeconds
	refreshTarget  = edgetest.RefreshTarget
	faultAddrs     = edgetest.GossipAddrs
	newCluster     = edgetest.NewCluster
	clusterOf      = edgetest.ClusterOf
)

func body(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// setCookie returns the raw Set-Cookie line for cookie name, or "".
func setCookie(resp *http.Response, name string) string {
	for _, line := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(line, name+"=") {
			return line
		}
	}
	return ""
}

// cookieAttr returns the value of attribute attr ("Max-Age") in a raw
// Set-Cookie line, and whether it is there at all.
func cookieAttr(line, attr string) (string, bool) {
	for _, part := range strings.Split(line, ";")[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(k, attr) {
			return v, true
		}
	}
	return "", false
}

func maxAge(tb testing.TB, line string) int {
	tb.Helper()
	v, ok := cookieAttr(line, "Max-Age")
	if !ok {
		tb.Fatalf("Set-Cookie %q has no Max-Age", line)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("Set-Cookie %q: Max-Age %q", line, v)
	}
	return n
}

// adminURL is the address admin requests built in tests are sent to: a
// loopback one, as the CLI's are (the endpoint refuses other hosts).
const adminURL = "http://127.0.0.1:9090"

// adminGet fetches path from the admin handler.
func adminGet(tb testing.TB, admin http.Handler, path string) *http.Response {
	tb.Helper()
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, adminURL+path, nil))
	return rec.Result()
}

// roomStatus decodes GET /rooms/{name}/status.
func roomStatus(tb testing.TB, admin http.Handler, name string) api.RoomStatus {
	tb.Helper()
	resp := adminGet(tb, admin, "/rooms/"+name+"/status")
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("status of room %s: %d %s", name, resp.StatusCode, body(tb, resp))
	}
	var rs api.RoomStatus
	if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil {
		tb.Fatal(err)
	}
	return rs
}

// metric returns the value of the sample whose line starts with prefix (a
// metric name with its labels, as the text format writes them) in /metrics,
// or 0 when there is none.
func metric(tb testing.TB, admin http.Handler, prefix string) float64 {
	tb.Helper()
	text := body(tb, adminGet(tb, admin, "/metrics"))
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			if err != nil {
				tb.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// checkParse parses a node's config and holds the outcome: taken when want
// is empty, else refused with an error that contains want.
func checkParse(t *testing.T, yaml, want string) {
	t.Helper()
	_, err := config.Parse([]byte(yaml))
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
