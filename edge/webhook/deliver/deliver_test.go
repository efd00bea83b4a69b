package deliver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/edge/webhook"
	"github.com/waitroom/waitroom/gossip/testkit"
)

const webhookSecret = "whsec-0123456789abcdef"

// hookCall is one request the receiver got.
type hookCall struct {
	ID, Type, Sender string
	Signature, Event string // the headers
	Body             []byte
}

// verified reports whether the call's signature holds for the webhook's
// secret at now (the ring's clock, which signed it) and it names its
// notice's id.
func (c hookCall) verified(now time.Time) bool {
	return webhook.Verify([]byte(webhookSecret), c.Signature, c.Body, now, time.Minute) == nil && c.Event == c.ID
}

// hookReceiver is the operator's webhook endpoint: it checks each
// request's signature and answers what the test's answer says.
type hookReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	calls  []hookCall
	answer func(c hookCall, n int) int // status for the nth call of c's type (1-based)
	url    string
}

func newHookReceiver(t *testing.T, answer func(c hookCall, n int) int) *hookReceiver {
	rcv := &hookReceiver{t: t, answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &n)
		c := hookCall{ID: n.ID, Type: n.Type, Sender: r.Header.Get(webhook.SenderHeader),
			Signature: r.Header.Get(webhook.Header), Event: r.Header.Get(webhook.EventHeader), Body: body}
		rcv.mu.Lock()
		rcv.calls = append(rcv.calls, c)
		k := 0
		for _, x := range rcv.calls {
			if x.Type == c.Type {
				k++
			}
		}
		rcv.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer(c, k)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	rcv.url = srv.URL + "/hook"
	return rcv
}

// of returns the calls of one notice type.
func (r *hookReceiver) of(typ string) []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookCall
	for _, c := range r.calls {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

// hookCluster starts a ring of n nodes, each with the receiver as its one
// webhook, on a fake clock.
func hookCluster(t *testing.T, n int, rcv *hookReceiver, opts edgetest.ClusterOptions) *edgetest.Cluster {
	t.Helper()
	return hookClusterOn(t, n, rcv, opts, func(string) bool { return true })
}

// hookClusterOn is hookCluster with the webhook in the config of the nodes
// has says only.
func hookClusterOn(t *testing.T, n int, rcv *hookReceiver, opts edgetest.ClusterOptions, has func(node string) bool) *edgetest.Cluster {
	t.Helper()
	// The receivers are on loopback, which webhooks reach only when the
	// operator allows it.
	return hookClusterWith(t, n, rcv.url, opts, has, config.WebhookNetwork{AllowPrivate: true})
}

// hookClusterWith is hookClusterOn with the webhook's address and the
// nodes' webhook_network given.
func hookClusterWith(t *testing.T, n int, url string, opts edgetest.ClusterOptions, has func(node string) bool, network config.WebhookNetwork) *edgetest.Cluster {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "hook.secret")
	if err := os.WriteFile(secret, []byte(webhookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Rooms = []config.Room{edgetest.Room("shop", 10, 10)}
	c := edgetest.ClusterOf(t, opts)
	c.Edit = func(n *edgetest.Node, cfg *config.Config) {
		if has(n.Name) {
			cfg.Webhooks = []config.Webhook{{Name: "ops", URL: url, SecretFile: secret}}
		}
		cfg.WebhookNetwork = network
	}
	for i := range n {
		c.Add(fmt.Sprintf("pop-%c", 'a'+i), 0)
	}
	c.WaitRing(c.Nodes, 15*time.Second)
	c.Recompute() // the watchers' first look: what is there is no news
	return c
}

// stopRoom stops the shop through one node's admin API.
func stopRoom(t *testing.T, n *edgetest.Node) {
	t.Helper()
	resp := edgetest.AdminSend(n.Admin, http.MethodPost, "/rooms/shop/stop", `{}`, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stop the shop: %d", resp.StatusCode)
	}
}

// untilCalls runs allocation rounds, the clock moving by step each, until
// the receiver has want calls of typ.
func untilCalls(t *testing.T, c *edgetest.Cluster, rcv *hookReceiver, typ string, want int, step time.Duration) {
	t.Helper()
	testkit.Eventually(t, testkit.Wait{Timeout: 20 * time.Second, Tick: 20 * time.Millisecond, What: fmt.Sprintf("%d %s notices", want, typ)}, func() bool {
		c.Advance(step)
		return len(rcv.of(typ)) >= want
	})
}

func TestWebhooksTellTheRingsChangesOnce(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t, nil)
	c := hookCluster(t, 3, rcv, edgetest.ClusterOptions{})
	stopRoom(t, c.Nodes[1])
	untilCalls(t, c, rcv, "room.emergency_stopped", 1, 100*time.Millisecond)
	untilCalls(t, c, rcv, "room.changed", 1, 100*time.Millisecond)
	// More rounds on every node: nobody sends it again.
	for range 30 {
		c.Advance(100 * time.Millisecond)
	}
	for _, typ := range []string{"room.emergency_stopped", "room.changed"} {
		calls := rcv.of(typ)
		if len(calls) != 1 {
			t.Errorf("%s told %d times, want once per ring: %+v", typ, len(calls), calls)
			continue
		}
		if !calls[0].verified(c.Clock.Now()) {
			t.Errorf("%s: the signature does not verify with the webhook's secret", typ)
		}
	}
}

func TestWebhooksRetryWithBackoffUntilTheReceiverAnswers(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t, func(c hookCall, n int) int {
		if c.Type == "room.emergency_stopped" && n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	c := hookCluster(t, 3, rcv, edgetest.ClusterOptions{})
	stopRoom(t, c.Nodes[0])
	untilCalls(t, c, rcv, "room.emergency_stopped", 3, 500*time.Millisecond)
	for range 20 {
		c.Advance(time.Second)
	}
	calls := rcv.of("room.emergency_stopped")
	if len(calls) != 3 {
		t.Fatalf("%d attempts, want 3 (two refused, one answered): %+v", len(calls), calls)
	}
	// The sender's state document and metrics record the two failures.
	var failed, delivered uint64
	for _, n := range c.Nodes {
		for _, w := range n.Server.StateDoc().Webhooks {
			failed += w.Failed
			delivered += w.Delivered
		}
	}
	if failed != 2 {
		t.Errorf("the ring's state documents record %d failed attempts, want 2", failed)
	}
	if delivered < 2 { // room.changed and room.emergency_stopped
		t.Errorf("the ring's state documents record %d deliveries, want at least 2", delivered)
	}
	var failedMetric float64
	for _, n := range c.Nodes {
		failedMetric += edgetest.Metric(t, n.Admin, `waitroom_webhook_deliveries_total{result="failed",webhook="ops"}`)
	}
	if failedMetric != 2 {
		t.Errorf("waitroom_webhook_deliveries_total{result=\"failed\"} sums to %v over the ring, want 2", failedMetric)
	}
}

func TestWebhooksAnotherNodeTakesOverWhenTheSenderDiesMidDelivery(t *testing.T) {
	t.Parallel()
	release := make(chan int)
	var once sync.Once
	rcv := newHookReceiver(t, func(c hookCall, n int) int {
		if c.Type == "room.emergency_stopped" && n == 1 {
			return <-release // held until the test has killed the sender
		}
		return http.StatusOK
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	c := hookCluster(t, 3, rcv, edgetest.ClusterOptions{Tune: edgetest.FastGossip})
	stopRoom(t, c.Nodes[0])
	untilCalls(t, c, rcv, "room.emergency_stopped", 1, 100*time.Millisecond)
	first := rcv.of("room.emergency_stopped")[0]
	var sender *edgetest.Node
	for _, n := range c.Nodes {
		if n.Name == first.Sender {
			sender = n
		}
	}
	if sender == nil {
		t.Fatalf("the notice came from %q, no node of the ring", first.Sender)
	}
	// The change has reached every node before its sender dies (else the
	// ring never heard of it, and there is nothing to tell).
	testkit.Eventually(t, testkit.Wait{Timeout: 10 * time.Second, What: "the stop on every node"}, func() bool {
		for _, n := range c.Nodes {
			if rc := edgetest.GetRoom(t, n.Admin, "shop"); rc == nil || !rc.Stopped {
				return false
			}
		}
		return true
	})
	sender.Kill()
	release <- http.StatusServiceUnavailable // the dead sender never learns
	once.Do(func() { close(release) })
	if !t.Run("a survivor sends it", func(t *testing.T) {
		untilCalls(t, c, rcv, "room.emergency_stopped", 2, 200*time.Millisecond)
	}) {
		for _, n := range c.Live() {
			d := n.Server.StateDoc()
			t.Logf("%s sees members %+v, webhooks %+v", n.Name, d.Members, d.Webhooks)
		}
		t.FailNow()
	}
	for range 20 {
		c.Advance(time.Second)
	}
	calls := rcv.of("room.emergency_stopped")
	if len(calls) != 2 {
		t.Fatalf("%d deliveries, want the dead sender's and one by its successor: %+v", len(calls), calls)
	}
	if calls[1].Sender == first.Sender || calls[1].ID != first.ID {
		t.Errorf("the second delivery %+v, want the same notice %s from another node than %s", calls[1], first.ID, first.Sender)
	}
}

func TestWebhooksRegisteredThroughTheAdminAPIReachTheWholeRing(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t, nil)
	apiRcv := newHookReceiver(t, nil)
	c := hookCluster(t, 3, rcv, edgetest.ClusterOptions{})
	put := func(name, body string) int {
		return edgetest.AdminSend(c.Nodes[2].Admin, http.MethodPut, "/webhooks/"+name, body, "Content-Type", "application/json").StatusCode
	}
	t.Run("a webhook without a proper address or secret is refused", func(t *testing.T) {
		for _, body := range []string{
			`{"url":"ftp://example.test/","secret":"` + webhookSecret + `"}`,
			`{"url":"` + apiRcv.url + `","secret":"short"}`,
			`{"url":"` + apiRcv.url + `","secret":"` + webhookSecret + `","events":["room.nonsense"]}`,
		} {
			if got := put("chat", body); got != http.StatusBadRequest {
				t.Errorf("PUT %s: %d, want 400", body, got)
			}
		}
		if got := put("ops", `{"url":"`+apiRcv.url+`","secret":"`+webhookSecret+`"}`); got != http.StatusConflict {
			t.Errorf("PUT over the config file's webhook: %d, want 409", got)
		}
	})
	t.Run("a webhook registered on one node is sent each notice once", func(t *testing.T) {
		if got := put("chat", `{"url":"`+apiRcv.url+`","secret":"`+webhookSecret+`","events":["room."]}`); got != http.StatusOK {
			t.Fatalf("PUT /webhooks/chat: %d", got)
		}
		// Every node holds it before the change it is to hear of.
		testkit.Eventually(t, testkit.Wait{Timeout: 10 * time.Second, What: "the webhook on every node"}, func() bool {
			c.Advance(100 * time.Millisecond)
			for _, n := range c.Nodes {
				if len(n.Server.StateDoc().Webhooks) != 2 {
					return false
				}
			}
			return true
		})
		stopRoom(t, c.Nodes[0])
		untilCalls(t, c, apiRcv, "room.emergency_stopped", 1, 100*time.Millisecond)
		for range 30 {
			c.Advance(100 * time.Millisecond)
		}
		if calls := apiRcv.of("room.emergency_stopped"); len(calls) != 1 || !calls[0].verified(c.Clock.Now()) {
			t.Errorf("the API's webhook got %+v, want one signed notice", calls)
		}
		resp := edgetest.AdminSend(c.Nodes[1].Admin, http.MethodGet, "/webhooks", "")
		raw, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(raw), `"chat"`) || strings.Contains(string(raw), webhookSecret) {
			t.Errorf("GET /webhooks: %s, want chat listed and no secret shown", raw)
		}
	})
}

func TestWebhooksTellQueueingEventPhasesAndNodesLeaving(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t, nil)
	c := hookCluster(t, 3, rcv, edgetest.ClusterOptions{Tune: edgetest.FastGossip})
	patch := func(body string) {
		t.Helper()
		if resp := edgetest.AdminSend(c.Nodes[0].Admin, http.MethodPatch, "/rooms/shop", body, "Content-Type", "application/json"); resp.StatusCode != http.StatusOK {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("PATCH %s: %d %s", body, resp.StatusCode, raw)
		}
	}
	patch(`{"queue_all":true}`)
	untilCalls(t, c, rcv, "room.queueing_started", 1, 100*time.Millisecond)

	now := c.Clock.Now().UTC().Truncate(time.Minute)
	at := func(m int) string { return now.Add(time.Duration(m) * time.Minute).Format(time.RFC3339) }
	patch(`{"queue_all":false,"events":[{"id":"sale","name":"Sale","prequeue_start_time":"` + at(2) + `","event_start_time":"` + at(3) + `","event_end_time":"` + at(4) + `"}]}`)
	untilCalls(t, c, rcv, "room.queueing_stopped", 1, 100*time.Millisecond)
	untilCalls(t, c, rcv, "event.prequeue_started", 1, 2*time.Second)
	untilCalls(t, c, rcv, "event.started", 1, 2*time.Second)
	untilCalls(t, c, rcv, "event.ended", 1, 2*time.Second)

	c.Nodes[2].Kill()
	untilCalls(t, c, rcv, "node.left", 1, 100*time.Millisecond)
	for range 30 {
		c.Advance(100 * time.Millisecond)
	}
	// The pre-queue queues everyone and the event's start ends it: the
	// room starts and stops queueing twice, each change told once.
	want := map[string]int{"room.queueing_started": 2, "room.queueing_stopped": 2, "event.prequeue_started": 1, "event.started": 1, "event.ended": 1}
	var leftC []hookCall
	for _, l := range rcv.of("node.left") {
		// A loaded machine may see a live member flap too; pop-c's end is
		// what this test made.
		if strings.HasPrefix(l.ID, "node.left:pop-c:") {
			leftC = append(leftC, l)
		}
	}
	if len(leftC) != 1 {
		t.Errorf("pop-c's leaving told %d times, want once: %v", len(leftC), ids(leftC))
	}
	for typ, n := range want {
		if calls := rcv.of(typ); len(calls) != n {
			t.Errorf("%s told %d times, want %d: %v", typ, len(calls), n, ids(calls))
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if all := ids(rcv.calls); len(all) != len(slices.Compact(slices.Sorted(slices.Values(all)))) {
		t.Errorf("a notice was told twice: %v", all)
	}
}

func ids(calls []hookCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.ID)
	}
	return out
}

func TestWebhooksListedOnOneNodeOnlyAreStillSentOnce(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t, nil)
	// Only pop-a's config lists the webhook: when rendezvous hashing picks
	// another node, pop-a sends it once the takeover wait has passed.
	c := hookClusterOn(t, 3, rcv, edgetest.ClusterOptions{}, func(n string) bool { return n == "pop-a" })
	stopRoom(t, c.Nodes[0])
	untilCalls(t, c, rcv, "room.emergency_stopped", 1, time.Minute)
	for range 100 {
		c.Advance(time.Minute)
	}
	if calls := rcv.of("room.emergency_stopped"); len(calls) != 1 || calls[0].Sender != "pop-a" {
		t.Errorf("notices %+v, want one, from pop-a", calls)
	}
}

// lastError is the webhook's last_error in the node's state document.
func lastError(n *edgetest.Node) string {
	for _, w := range n.Server.StateDoc().Webhooks {
		if w.LastError != "" {
			return w.LastError
		}
	}
	return ""
}

func TestWebhooksReachOnlyWhatTheOperatorAllowed(t *testing.T) {
	t.Parallel()
	everyone := func(string) bool { return true }
	untilError := func(t *testing.T, c *edgetest.Cluster) string {
		t.Helper()
		testkit.Eventually(t, testkit.Wait{Timeout: 20 * time.Second, Tick: 20 * time.Millisecond, What: "a failed attempt"}, func() bool {
			c.Advance(500 * time.Millisecond)
			return lastError(c.Nodes[0]) != ""
		})
		return lastError(c.Nodes[0])
	}
	t.Run("a webhook to loopback is refused by default, on the address its name resolves to when sent", func(t *testing.T) {
		rcv := newHookReceiver(t, nil)
		byName := strings.Replace(rcv.url, "127.0.0.1", "localhost", 1)
		for _, u := range []string{rcv.url, byName} {
			c := hookClusterWith(t, 1, u, edgetest.ClusterOptions{}, everyone, config.WebhookNetwork{})
			stopRoom(t, c.Nodes[0])
			if e := untilError(t, c); !strings.Contains(e, "not a public address") {
				t.Errorf("%s: last_error %q, want the address refused", u, e)
			}
			if len(rcv.of("room.emergency_stopped")) != 0 {
				t.Fatalf("%s: the loopback receiver was sent a notice", u)
			}
		}
	})
	t.Run("an allow-list naming the address lets it through", func(t *testing.T) {
		rcv := newHookReceiver(t, nil)
		c := hookClusterWith(t, 1, rcv.url, edgetest.ClusterOptions{}, everyone, config.WebhookNetwork{Allow: []string{"127.0.0.1"}})
		stopRoom(t, c.Nodes[0])
		untilCalls(t, c, rcv, "room.emergency_stopped", 1, 100*time.Millisecond)
	})
	t.Run("a redirect is not followed, and last_error keeps the status code only", func(t *testing.T) {
		target := newHookReceiver(t, nil)
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			// The reason phrase and body are the receiver's to choose,
			// and must not reach the operator's screens. The connection
			// closes after the answer, and says so: a retry must not try
			// it again and fail on its close instead.
			_, _ = buf.WriteString("HTTP/1.1 307 ami-id i-0123456789\r\nLocation: " + target.url + "\r\nConnection: close\r\nContent-Length: 9\r\n\r\nsecret=42")
			_ = buf.Flush()
		}))
		t.Cleanup(redirect.Close)
		c := hookClusterWith(t, 1, redirect.URL+"/hook", edgetest.ClusterOptions{}, everyone, config.WebhookNetwork{AllowPrivate: true})
		stopRoom(t, c.Nodes[0])
		if e := untilError(t, c); e != "answered 307" {
			t.Errorf("last_error %q, want %q", e, "answered 307")
		}
		if n := len(target.of("room.emergency_stopped")) + len(target.of("room.changed")); n != 0 {
			t.Errorf("the redirect's target got %d notices", n)
		}
	})
}
