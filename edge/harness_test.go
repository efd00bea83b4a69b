package edge_test

// The edge tests' names for the one harness, edge/edgetest: the fake clock
// (testkit.Clock), one node built as `waitroom serve` builds it on loopback
// (startServer, newFixture), the one in-process cluster
// (newCluster: N nodes, fake or wall clock, optionally gossiping through a
// gossip.MemNet) in front of the one test origin (edgetest.Origin), a
// visitor that keeps its cookies, and the harness's readers of bodies,
// cookies, the admin endpoint and a config's outcome. Waiting is done with
// testkit.Eventually; the allocation loop is run with
// Server.RefreshAllocations rather than slept for.

import "github.com/waitroom/waitroom/edge/edgetest"

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
	newFixture     = edgetest.NewFixture
	newFixtureWith = edgetest.NewFixtureWith
	newVisitor     = edgetest.NewVisitor
	refreshSeconds = edgetest.RefreshSeconds
	refreshTarget  = edgetest.RefreshTarget
	faultAddrs     = edgetest.GossipAddrs
	newCluster     = edgetest.NewCluster
	clusterOf      = edgetest.ClusterOf
	body           = edgetest.Body
	setCookie      = edgetest.SetCookie
	cookieAttr     = edgetest.CookieAttr
	maxAge         = edgetest.MaxAge
	adminGet       = edgetest.AdminGet
	roomStatus     = edgetest.RoomStatus
	metric         = edgetest.Metric
	getRoom        = edgetest.GetRoom
	adminSend      = edgetest.AdminJSON
)

// adminURL is where the tests' admin requests are sent (see
// edgetest.AdminURL).
const adminURL = edgetest.AdminURL
