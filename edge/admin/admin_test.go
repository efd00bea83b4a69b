package admin_test

// Admin endpoint tests: GET /state, /rooms/{name}/status, /healthz and
// /metrics, and the table `waitroom state` prints.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/policy"
)

// busyShop is a room of two with two visitors admitted and three queued.
func busyShop(t *testing.T) *edgetest.Fixture {
	t.Helper()
	rc := edgetest.Room("shop", 2, 2)
	rc.Host = "shop.test"
	f := edgetest.NewFixture(t, rc)
	f.AdmitFirst(t, "http://shop.test/")
	f.AdmitFirst(t, "http://shop.test/")
	// Three new visitors queued, and back for their proof two seconds
	// later (at 12:00:07): only then do they count as waiting.
	var vs [3]*edgetest.Visitor
	var first [3]*http.Response
	for i := range vs {
		vs[i] = edgetest.NewVisitor()
		if first[i] = vs[i].Get(f.Server, "http://shop.test/"); first[i].Header.Get("Refresh") == "" {
			t.Fatalf("visitor %d not queued: %d", i+3, first[i].StatusCode)
		}
	}
	f.Clock.Advance(policy.ProofRefresh * time.Second)
	for i, v := range vs {
		if resp := v.Get(f.Server, edgetest.RefreshTarget(t, first[i])); resp.Header.Get("Refresh") == "" {
			t.Fatalf("visitor %d not queued at its proof: %d", i+3, resp.StatusCode)
		}
	}
	f.Server.RefreshAllocations() // as the allocation loop would, before an operator looks
	return f
}

func TestAdminState(t *testing.T) {
	f := busyShop(t)
	resp := edgetest.AdminGet(t, f.Admin, "/state")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /state: %d, %q, %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	raw := edgetest.Body(t, resp)

	t.Run("the document names every figure an operator looks for", func(t *testing.T) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"node", "replica", "incarnation", "time", "members", "gossip", "rooms"} {
			if _, ok := doc[k]; !ok {
				t.Errorf("/state lacks %q", k)
			}
		}
		rooms, _ := doc["rooms"].([]any)
		if len(rooms) != 1 {
			t.Fatalf("rooms: %v", doc["rooms"])
		}
		r := rooms[0].(map[string]any)
		for _, k := range []string{"name", "host", "path", "status", "queueing_method", "total_active_users", "new_users_per_minute", "session_duration",
			"estimated_total_active_users", "estimated_queued_users", "new_users_this_minute", "max_estimated_time_minutes", "open_slots", "admissions_per_minute", "buckets", "nodes"} {
			if _, ok := r[k]; !ok {
				t.Errorf("room lacks %q", k)
			}
		}
		b := r["buckets"].([]any)[0].(map[string]any)
		for _, k := range []string{"bucket", "waiting", "eligible_slots"} {
			if _, ok := b[k]; !ok {
				t.Errorf("bucket lacks %q", k)
			}
		}
		n := r["nodes"].([]any)[0].(map[string]any)
		for _, k := range []string{"node", "replica", "traffic_share", "arrivals_this_minute", "admitted_this_minute"} {
			if _, ok := n[k]; !ok {
				t.Errorf("node share lacks %q", k)
			}
		}
	})

	t.Run("the figures are the room's", func(t *testing.T) {
		var doc api.StateDoc
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Node != "node-a" || len(doc.Members) != 1 || doc.Members[0].Name != "node-a" || !doc.Time.Equal(f.Clock.Now()) {
			t.Errorf("node %q, members %+v, time %v", doc.Node, doc.Members, doc.Time)
		}
		r := doc.Rooms[0]
		if r.Name != "shop" || r.Host != "shop.test" || r.Path != "/" || r.Status != "queueing" || r.QueueingMethod != "fifo" {
			t.Errorf("room %+v", r)
		}
		if r.TotalActiveUsers != 2 || r.NewUsersPerMinute != 2 || r.SessionDuration != 5 {
			t.Errorf("settings %d/%d/%d", r.TotalActiveUsers, r.NewUsersPerMinute, r.SessionDuration)
		}
		if r.EstimatedTotalActiveUsers != 2 || r.EstimatedQueuedUsers != 3 || r.NewUsersThisMinute != 2 || r.OpenSlots != 0 {
			t.Errorf("active %d, queued %d, new %d, open %d; want 2, 3, 2, 0", r.EstimatedTotalActiveUsers, r.EstimatedQueuedUsers, r.NewUsersThisMinute, r.OpenSlots)
		}
		// Two admissions in five minutes: 0.4 a minute, three ahead of the
		// newest visitor... who is in the same bucket, so nobody is ahead.
		if r.MaxEstimatedTimeMinutes < 1 || r.AdmissionsPerMinute <= 0 {
			t.Errorf("max wait %d min, rate %v", r.MaxEstimatedTimeMinutes, r.AdmissionsPerMinute)
		}
		minute := f.Clock.Now().Truncate(time.Minute)
		if len(r.Buckets) != 1 || !r.Buckets[0].Bucket.Equal(minute) || r.Buckets[0].Waiting != 3 || r.Buckets[0].EligibleSlots != 0 {
			t.Errorf("buckets %+v, want one of 3 waiting at %v with no slot", r.Buckets, minute)
		}
		if len(r.Nodes) != 1 || r.Nodes[0].Node != "node-a" || r.Nodes[0].TrafficShare != 1 || r.Nodes[0].ArrivalsThisMinute != 5 || r.Nodes[0].AdmittedThisMinute != 2 {
			t.Errorf("nodes %+v, want node-a with all the traffic: 5 arrivals, 2 admitted", r.Nodes)
		}
	})

	t.Run("rooms/{name}/status answers one room, 404 for an unknown one", func(t *testing.T) {
		rs := edgetest.RoomStatus(t, f.Admin, "shop")
		if rs.Name != "shop" || rs.EstimatedQueuedUsers != 3 {
			t.Errorf("status %+v", rs)
		}
		resp := edgetest.AdminGet(t, f.Admin, "/rooms/nope/status")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(edgetest.Body(t, resp), "no room named nope") {
			t.Errorf("unknown room: %d", resp.StatusCode)
		}
	})

	t.Run("healthz says ok and nothing else", func(t *testing.T) {
		resp := edgetest.AdminGet(t, f.Admin, "/healthz")
		if got := strings.TrimSpace(edgetest.Body(t, resp)); resp.StatusCode != http.StatusOK || got != "{\n  \"ok\": true\n}" {
			t.Errorf("healthz: %d %s", resp.StatusCode, got)
		}
	})

	t.Run("the admin endpoint answers only GET and is not on the public handler", func(t *testing.T) {
		rec := adminDo(f.Admin, http.MethodPost, "/state")
		if rec.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /state: %d, want 405", rec.StatusCode)
		}
		// On the public side /state is a path of the room like any other:
		// the room is full, so the edgetest.Visitor waits.
		resp := edgetest.NewVisitor().Get(f.Server, "http://shop.test/state")
		if resp.Header.Get("Refresh") == "" || strings.Contains(edgetest.Body(t, resp), "estimated_total_active_users") {
			t.Errorf("public /state: %d, want the queue page", resp.StatusCode)
		}
	})
}

// adminDo sends a bodiless request to the admin handler, as the CLI does.
func adminDo(h http.Handler, method, path string) *http.Response {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, edgetest.AdminURL+path, nil)
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestAdminStatusValues(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Room)
		fill int // visitors sent first
		want string
	}{
		{name: "an empty room is not queueing", want: "not_queueing"},
		{name: "a full room is queueing", fill: 2, want: "queueing"},
		{name: "a room with queue_all is queue_all", edit: func(r *config.Room) { r.QueueAll = true }, want: "queue_all"},
		{name: "a suspended room is suspended", edit: func(r *config.Room) { r.Suspended = true; r.QueueAll = true }, want: "suspended"},
		{name: "a passthrough room over its limit is not queueing", edit: func(r *config.Room) { r.QueueingMethod = "passthrough" }, fill: 3, want: "not_queueing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := edgetest.Room("shop", 1, 1)
			if tt.edit != nil {
				tt.edit(&rc)
			}
			f := edgetest.NewFixture(t, rc)
			for i := 0; i < tt.fill; i++ {
				edgetest.NewVisitor().Get(f.Server, "http://shop.test/")
			}
			if got := edgetest.RoomStatus(t, f.Admin, "shop").Status; got != tt.want {
				t.Errorf("status %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAdminMetrics(t *testing.T) {
	f := busyShop(t)
	// One tampered cookie and one early check-in, so every request counter
	// has a sample.
	v := edgetest.NewVisitor()
	v.Cookies["__waitroom"] = &http.Cookie{Name: "__waitroom", Value: "junk"}
	v.Get(f.Server, "http://shop.test/")
	v.Get(f.Server, "http://shop.test/")
	// The room gauges come from the latest allocation, which the
	// allocation loop renews at least every 250 ms.
	f.Server.RefreshAllocations()

	resp := edgetest.AdminGet(t, f.Admin, "/metrics")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(ct, "version=0.0.4") {
		t.Errorf("Content-Type %q, want the Prometheus text format", ct)
	}
	text := edgetest.Body(t, resp)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v\n%s", err, text)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		fam := fams[name]
		if fam == nil {
			return 0, false
		}
	next:
		for _, m := range fam.Metric {
			for k, v := range labels {
				found := false
				for _, lp := range m.Label {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				return m.Counter.GetValue(), true
			case dto.MetricType_GAUGE:
				return m.Gauge.GetValue(), true
			}
		}
		return 0, false
	}
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		typ    dto.MetricType
		want   float64
	}{
		{"new admissions are counted per room", "waitroom_requests_total", map[string]string{"room": "shop", "outcome": "admitted"}, dto.MetricType_COUNTER, 2},
		// Three first pages, three proofs and the tampered cookie's page.
		{"queued answers are counted", "waitroom_requests_total", map[string]string{"room": "shop", "outcome": "queued"}, dto.MetricType_COUNTER, 7},
		{"early check-ins are counted apart", "waitroom_requests_total", map[string]string{"room": "shop", "outcome": "early_checkin"}, dto.MetricType_COUNTER, 1},
		{"cookie errors are counted by reason", "waitroom_cookie_errors_total", map[string]string{"room": "shop", "reason": "malformed"}, dto.MetricType_COUNTER, 1},
		{"the merged active users are a gauge", "waitroom_room_active_users", map[string]string{"room": "shop"}, dto.MetricType_GAUGE, 2},
		{"the limit is exported beside them", "waitroom_room_total_active_users", map[string]string{"room": "shop"}, dto.MetricType_GAUGE, 2},
		// The tampered cookie's edgetest.Visitor has not come back for its proof.
		{"the queued users are a gauge", "waitroom_room_queued_users", map[string]string{"room": "shop"}, dto.MetricType_GAUGE, 3},
		{"the new users of this minute are a gauge", "waitroom_room_new_users_this_minute", map[string]string{"room": "shop"}, dto.MetricType_GAUGE, 2},
		{"queueing is 1 with the status as a label", "waitroom_room_queueing", map[string]string{"room": "shop", "status": "queueing"}, dto.MetricType_GAUGE, 1},
		{"the ring size is exported", "waitroom_gossip_members", nil, dto.MetricType_GAUGE, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fam := fams[tt.metric]; fam == nil || fam.GetType() != tt.typ || fam.GetHelp() == "" {
				t.Fatalf("%s: family %v, want type %v with help", tt.metric, fam, tt.typ)
			}
			got, ok := value(tt.metric, tt.labels)
			if !ok || got != tt.want {
				t.Errorf("%s%v = %v (present %v), want %v", tt.metric, tt.labels, got, ok, tt.want)
			}
		})
	}
	t.Run("the Go runtime and process collectors are registered", func(t *testing.T) {
		if fams["go_goroutines"] == nil {
			t.Error("no go_goroutines")
		}
	})
}

func TestReadingTheStateChangesNothing(t *testing.T) {
	f := busyShop(t)
	raw := f.Server.AdminHandler() // without the harness's round of the loop
	// The allocation loop may replace the allocation between two reads
	// (it runs every 250 ms); a read that replaced it would do so every time.
	for try := 0; try < 20; try++ {
		before := f.Server.CurrentAllocation("shop")
		for _, path := range []string{"/state", "/rooms/shop/status", "/metrics"} {
			if resp := edgetest.AdminGet(t, raw, path); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
		}
		if f.Server.CurrentAllocation("shop") == before {
			return
		}
	}
	t.Fatal("every read of the state replaced the room's allocation")
}
