package edge_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// priorityRoom is a room of the given limits with one priority group, vip.
func priorityRoom(name string, total, perMinute int) config.Room {
	rc := room(name, total, perMinute)
	rc.PriorityGroups = []config.PriorityGroup{{Name: "vip"}}
	return rc
}

// adminPost posts a JSON body to path on the admin handler.
func adminPost(tb testing.TB, admin http.Handler, path string, v any) *http.Response {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, adminURL+path, bytes.NewReader(b))
	r.Header.Set("Content-Type", "application/json")
	admin.ServeHTTP(rec, r)
	return rec.Result()
}

// mintCodes mints count codes of group vip with uses uses through the admin
// API and returns them.
func mintCodes(tb testing.TB, admin http.Handler, room string, count, uses int) []string {
	tb.Helper()
	resp := adminPost(tb, admin, "/rooms/"+room+"/codes", map[string]any{"group": "vip", "count": count, "uses": uses, "expires": "48h"})
	text := body(tb, resp)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("mint: %d %s", resp.StatusCode, text)
	}
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(rows) != count+1 || strings.Join(rows[0], ",") != "code,id,group,uses,expires,link" {
		tb.Fatalf("mint answered %q (%v)", text, err)
	}
	var out []string
	for _, r := range rows[1:] {
		if !strings.HasSuffix(r[5], "?__waitroom_code="+r[0]) {
			tb.Fatalf("link %q does not carry code %q", r[5], r[0])
		}
		out = append(out, r[0])
	}
	return out
}

func withCode(u, code string) string { return u + "?__waitroom_code=" + url.QueryEscape(code) }

func codeMetric(tb testing.TB, admin http.Handler, room, result string) float64 {
	tb.Helper()
	return metric(tb, admin, fmt.Sprintf(`waitroom_priority_codes_total{result=%q,room=%q}`, result, room))
}

func TestPriorityCodes(t *testing.T) {
	t.Run("a code holder goes in ahead of the line, and the code works once", func(t *testing.T) {
		f := newFixture(t, priorityRoom("shop", 100, 2))
		admitFirst(t, f, "http://shop.test/")
		admitFirst(t, f, "http://shop.test/")
		for range 3 {
			newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/")
		}
		code := mintCodes(t, f.Admin, "shop", 1, 1)[0]
		f.Clock.Advance(time.Minute)
		settle(t, f)

		if resp := newVisitor().Get(f.Server, "http://shop.test/"); resp.Header.Get("X-Origin") == "yes" {
			t.Fatal("a new visitor without a code went in past three waiting")
		}
		holder := newVisitor()
		resp := holder.Get(f.Server, withCode("http://shop.test/tickets", code))
		if resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("the code holder got %d, want the origin ahead of the line", resp.StatusCode)
		}
		uris := f.Origin.URIs()
		if last := uris[len(uris)-1]; strings.Contains(last, "__waitroom_code") || last != "/tickets" {
			t.Fatalf("the origin saw %q, want /tickets without the code", last)
		}
		if got := codeMetric(t, f.Admin, "shop", "accepted"); got != 1 {
			t.Fatalf("accepted codes %v, want 1", got)
		}
		if got := metric(t, f.Admin, `waitroom_priority_admissions_total{group="vip",room="shop",way="ahead"}`); got != 1 {
			t.Fatalf("vip admissions ahead of the line %v, want 1", got)
		}
		var an api.Analytics
		if err := json.NewDecoder(adminGet(t, f.Admin, "/rooms/shop/analytics?minutes=5").Body).Decode(&an); err != nil {
			t.Fatal(err)
		}
		if g := an.PriorityGroups["vip"]; g.Admitted != 1 || g.CodeUses != 1 {
			t.Fatalf("analytics of group vip %+v, want 1 admitted and 1 code use", g)
		}
		if g := roomStatus(t, f.Admin, "shop").Last10Minutes.PriorityGroups["vip"]; g.Admitted != 1 || g.CodeUses != 1 {
			t.Fatalf("state of group vip %+v, want 1 admitted and 1 code use", g)
		}
		// The holder's next request is a session like any other's.
		if resp := holder.Get(f.Server, "http://shop.test/tickets"); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("the holder's next request got %d, want the origin", resp.StatusCode)
		}
		if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", code)); resp.Header.Get("X-Origin") == "yes" {
			t.Fatal("a second visitor went in on a single-use code")
		}
		if got := codeMetric(t, f.Admin, "shop", "used"); got != 1 {
			t.Fatalf("used codes %v, want 1", got)
		}
	})

	t.Run("a code holder never pushes the room past its limits", func(t *testing.T) {
		f := newFixture(t, priorityRoom("shop", 100, 1))
		admitFirst(t, f, "http://shop.test/")
		codes := mintCodes(t, f.Admin, "shop", 3, 1)
		for i, c := range codes {
			if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", c)); resp.Header.Get("X-Origin") == "yes" {
				t.Fatalf("code holder %d went in past new_users_per_minute 1", i)
			}
		}
	})

	t.Run("a group's own cap sends its holders to the line once reached", func(t *testing.T) {
		rc := priorityRoom("shop", 100, 2)
		rc.PriorityGroups[0].NewUsersPerMinute = 1
		f := newFixture(t, rc)
		admitFirst(t, f, "http://shop.test/")
		admitFirst(t, f, "http://shop.test/")
		newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/")
		codes := mintCodes(t, f.Admin, "shop", 2, 1)
		f.Clock.Advance(time.Minute)
		settle(t, f)
		if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", codes[0])); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("the first holder of the minute got %d, want the origin", resp.StatusCode)
		}
		if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", codes[1])); resp.Header.Get("X-Origin") == "yes" {
			t.Fatal("a second holder went in ahead of the line past the group's cap of 1 a minute")
		}
	})

	t.Run("a multi-use code admits as many visitors as it has uses", func(t *testing.T) {
		f := newFixture(t, priorityRoom("shop", 100, 50))
		code := mintCodes(t, f.Admin, "shop", 1, 3)[0]
		in := 0
		for range 5 {
			if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", code)); resp.Header.Get("X-Origin") == "yes" {
				in++
			}
		}
		if accepted := codeMetric(t, f.Admin, "shop", "accepted"); accepted != 3 || in != 5 {
			t.Fatalf("%v uses accepted and %d visitors in, want 3 uses (and all 5 in: the room has room)", accepted, in)
		}
	})

	t.Run("a revoked code is refused", func(t *testing.T) {
		f := newFixture(t, priorityRoom("shop", 100, 50))
		code := mintCodes(t, f.Admin, "shop", 1, 5)[0]
		if resp := adminPost(t, f.Admin, "/rooms/shop/codes/revoke", map[string]any{"codes": []string{code}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body(t, resp))
		}
		newVisitor().Get(f.Server, withCode("http://shop.test/", code))
		if got := codeMetric(t, f.Admin, "shop", "revoked"); got != 1 {
			t.Fatalf("revoked refusals %v, want 1", got)
		}
	})

	t.Run("the queue page offers the code field, says when a code did not work, and a custom page can do the same", func(t *testing.T) {
		rc := priorityRoom("shop", 1, 1)
		rc.CustomPageHTML = `<html><body>{{#priorityCodes}}<form><input name="{{priorityCodeParam}}">{{priorityCodeMessage}}</form>{{/priorityCodes}}</body></html>`
		plain := priorityRoom("plain", 1, 1)
		plain.Host = "plain.test"
		rc.Host = "shop.test"
		f := newFixture(t, rc, plain)
		admitFirst(t, f, "http://shop.test/")
		admitFirst(t, f, "http://plain.test/")
		page := body(t, newVisitor().Get(f.Server, withCode("http://shop.test/", "not-a-code")))
		if !strings.Contains(page, `<input name="__waitroom_code">This code is not valid for this waiting room.`) {
			t.Fatalf("custom page %q lacks the code field with the failure", page)
		}
		page = body(t, newVisitor().Get(f.Server, "http://plain.test/"))
		if !strings.Contains(page, `name="__waitroom_code"`) || strings.Contains(page, "not valid") {
			t.Fatalf("default page %q: want the code field and no failure", page)
		}
	})

	t.Run("an invite-only room lets in code holders only, and slows an address that keeps guessing", func(t *testing.T) {
		rc := priorityRoom("shop", 100, 50)
		rc.InviteOnly = true
		f := newFixture(t, rc)
		resp := newVisitor().Get(f.Server, "http://shop.test/")
		if page := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "invitation only") || !strings.Contains(page, `name="__waitroom_code"`) {
			t.Fatalf("a visitor without a code got %d %q, want 403 with the code form", resp.StatusCode, page)
		}
		code := mintCodes(t, f.Admin, "shop", 1, 1)[0]
		if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", code)); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("a code holder got %d, want the origin", resp.StatusCode)
		}
		forged := code[:len(code)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(code, "a")]
		for i := range 5 {
			resp := newVisitor().Get(f.Server, withCode("http://shop.test/", forged))
			if page := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "not valid") {
				t.Fatalf("forged code %d: %d %q, want 403 saying it is not valid", i, resp.StatusCode, page)
			}
		}
		if resp := newVisitor().Get(f.Server, withCode("http://shop.test/", forged)); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the sixth forged code got %d, want 429", resp.StatusCode)
		}
		if inv, slow := codeMetric(t, f.Admin, "shop", "invalid"), codeMetric(t, f.Admin, "shop", "slowed"); inv != 5 || slow != 1 {
			t.Fatalf("invalid %v, slowed %v; want 5 and 1", inv, slow)
		}
	})

	t.Run("an invite-only room and the code field speak the visitor's language", func(t *testing.T) {
		rc := priorityRoom("shop", 100, 50)
		rc.InviteOnly = true
		rc.DefaultTemplateLanguage = "auto"
		f := newFixture(t, rc)
		resp := newVisitor().Get(f.Server, "http://shop.test/", "Accept-Language", "ja-JP,ja;q=0.9")
		if page := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "この待合室は招待制です") || !strings.Contains(page, `lang="ja-JP"`) {
			t.Fatalf("a Japanese visitor without a code got %d %q, want the invitation page in Japanese", resp.StatusCode, page)
		}
		resp = newVisitor().Get(f.Server, withCode("http://shop.test/", "not-a-code"), "Accept-Language", "ar")
		if page := body(t, resp); !strings.Contains(page, "هذا الرمز غير صالح") || !strings.Contains(page, `dir="rtl"`) {
			t.Fatalf("an Arabic visitor with a bad code got %q, want the refusal in Arabic, right to left", page)
		}
	})
}

// TestSingleUseCodeAtThreeNodesAtOnce presents one single-use code at the
// three nodes of a ring at the same moment. Each node claims the code's
// mark only when it does not hold it, so at most one visitor per node gets
// in on it (the bound: k nodes presented with it within one propagation
// delay admit at most k); once the mark has spread, no node accepts it
// again.
func TestSingleUseCodeAtThreeNodesAtOnce(t *testing.T) {
	c := newCluster(t, 3, clusterOpts{Rooms: []config.Room{priorityRoom("shop", 1000, 1000)}})
	codes := mintCodes(t, c.Nodes[0].Admin, "shop", 2, 1)

	accepted := func() float64 {
		var n float64
		for _, nd := range c.Nodes {
			n += codeMetric(t, nd.Admin, "shop", "accepted")
		}
		return n
	}
	t.Run("three nodes at once accept it at most once each", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, nd := range c.Nodes {
			for range 2 { // two visitors at each node
				wg.Add(1)
				go func() {
					defer wg.Done()
					newVisitor().Get(nd.Server, withCode("http://shop.test/", codes[0]))
				}()
			}
		}
		wg.Wait()
		if n := accepted(); n < 1 || n > 3 {
			t.Fatalf("the code was accepted %v times by 3 nodes, want 1 to 3", n)
		}
	})
	t.Run("once its use has spread, no node accepts it", func(t *testing.T) {
		before := accepted()
		for _, nd := range c.Nodes {
			testkit.Eventually(t, testkit.Wait{What: "every node holding the code's use", Timeout: 5 * time.Second}, func() bool {
				return len(nd.Server.Node().MarkList()) >= 1
			})
			newVisitor().Get(nd.Server, withCode("http://shop.test/", codes[0]))
		}
		if n := accepted(); n != before {
			t.Fatalf("accepted %v more times after the use had spread", n-before)
		}
	})
	t.Run("a code used at one node is refused at the others", func(t *testing.T) {
		newVisitor().Get(c.Nodes[0].Server, withCode("http://shop.test/", codes[1]))
		before := accepted()
		for _, nd := range c.Nodes[1:] {
			testkit.Eventually(t, testkit.Wait{What: "the use reaching " + nd.Name, Timeout: 5 * time.Second}, func() bool {
				return len(nd.Server.Node().MarkList()) >= 2
			})
			newVisitor().Get(nd.Server, withCode("http://shop.test/", codes[1]))
		}
		if n := accepted(); n != before {
			t.Fatalf("other nodes accepted a used code %v times", n-before)
		}
	})
}

func TestPriorityGroupBoundsAgree(t *testing.T) {
	if config.MaxPriorityGroups != policy.MaxPriorityGroups {
		t.Fatalf("config allows %d priority groups, the policy keeps %d", config.MaxPriorityGroups, policy.MaxPriorityGroups)
	}
}

// TestLimitsHoldWithPriorityTrafficMixedIn sends a crowd, half of it holding
// a shared code, to the three nodes of a ring in turn, each node knowing
// what the others admitted, over the rest of a minute: the ring lets in no
// more than new_users_per_minute in the minute, code holders included.
func TestLimitsHoldWithPriorityTrafficMixedIn(t *testing.T) {
	const perMinute = 6
	c := newCluster(t, 3, clusterOpts{Rooms: []config.Room{priorityRoom("shop", 100, perMinute)}})
	code := mintCodes(t, c.Nodes[0].Admin, "shop", 1, 100)[0]
	admitted := func(n *clusterNode) int64 { return roomStatus(t, n.Admin, "shop").NewUsersThisMinute }
	var in, holdersIn, total int64
	for i := range 18 {
		nd := c.Nodes[i%3]
		holder := i%2 == 1
		u := "http://shop.test/"
		if holder {
			u = withCode(u, code)
		}
		resp := newVisitor().Get(nd.Server, u)
		if resp.Header.Get("X-Origin") == "yes" {
			in++
			if holder {
				holdersIn++
			}
		}
		total = in
		for _, other := range c.Nodes {
			testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("%s seeing %d admitted", other.Name, total), Timeout: 5 * time.Second}, func() bool {
				return admitted(other) == total
			})
		}
		c.Advance(3 * time.Second) // 18 visitors over the rest of the minute
	}
	if in > perMinute || in == 0 {
		t.Fatalf("%d let in over the minute, want 1 to the limit %d", in, perMinute)
	}
	if holdersIn == 0 {
		t.Fatalf("none of the %d let in held the code", in)
	}
}
