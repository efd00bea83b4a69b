package edge_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// accessLine is one line of a node's access log, read back.
type accessLine struct {
	Node        string  `json:"node"`
	Room        string  `json:"room"`
	Outcome     string  `json:"outcome"`
	Visitor     string  `json:"visitor"`
	Bucket      string  `json:"bucket"`
	Position    *int64  `json:"position"`
	Status      int     `json:"status"`
	Bytes       int64   `json:"bytes"`
	DurationMS  float64 `json:"duration_ms"`
	Client      string  `json:"client"`
	Method      string  `json:"method"`
	Host        string  `json:"host"`
	Path        string  `json:"path"`
	ForwardAuth bool    `json:"forward_auth"`
}

// loggedFixture is a node writing its access log to a file in a temporary
// directory, with edit applied to its config besides.
func loggedFixture(t *testing.T, edit func(*config.Config), rooms ...config.Room) (*fixture, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.log")
	f := newFixtureWith(t, func(c *config.Config) {
		c.AccessLog = path
		if edit != nil {
			edit(c)
		}
	}, rooms...)
	return f, path
}

// accessLines stops the node, which writes every buffered line, and reads
// its access log back, with the file's raw text.
func accessLines(t *testing.T, f *fixture, path string) ([]accessLine, string) {
	t.Helper()
	if err := f.Server.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []accessLine
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var l accessLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a line that is not JSON: %v: %s", err, sc.Text())
		}
		lines = append(lines, l)
	}
	return lines, string(raw)
}

func outcomesOf(lines []accessLine) string {
	var o []string
	for _, l := range lines {
		o = append(o, l.Outcome)
	}
	return strings.Join(o, " ")
}

func TestTheAccessLogSaysWhatBecameOfEachRequest(t *testing.T) {
	full := room("shop", 1, 1) // one visitor fills it
	t.Run("the first visitor is admitted, the next gets its first page, then is queued when it checks in", func(t *testing.T) {
		f, path := loggedFixture(t, nil, full)
		first := f.AdmitFirst(t, "http://shop.test/tickets")
		second := newVisitor()
		second.Get(f.Server, "http://shop.test/tickets")
		f.Clock.Advance(30 * time.Second)
		f.Server.RefreshAllocations()
		second.Get(f.Server, "http://shop.test/tickets")
		first.Get(f.Server, "http://shop.test/basket")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "admitted first_page queued admitted"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
		adm, fp, q, again := lines[0], lines[1], lines[2], lines[3]
		if adm.Room != "shop" || adm.Node != "node-a" || adm.Status != http.StatusOK || adm.Bytes == 0 || adm.Method != "GET" || adm.Host != "shop.test" || adm.Path != "/tickets" || adm.Client != "192.0.2.1" {
			t.Errorf("admitted line: %+v", adm)
		}
		if adm.Bucket != "" || adm.Position != nil {
			t.Errorf("an admitted visitor's line has a place in line: %+v", adm)
		}
		if again.Visitor != adm.Visitor || adm.Visitor == "" || again.Path != "/basket" {
			t.Errorf("the admitted visitor's two lines: %+v and %+v, want one visitor id", adm, again)
		}
		if q.Visitor != fp.Visitor || q.Visitor == adm.Visitor || q.Visitor == "" {
			t.Errorf("the queued visitor's lines: %+v and %+v, want its own id on both", fp, q)
		}
		if q.Bucket == "" || q.Position == nil {
			t.Errorf("a queued visitor's line has no bucket or place in line: %+v", q)
		}
	})
	t.Run("a reject room's visitor is refused", func(t *testing.T) {
		rc := full
		rc.QueueingMethod = "reject"
		f, path := loggedFixture(t, nil, rc)
		resp := newVisitor().Get(f.Server, "http://shop.test/")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "refused"; got != want || lines[0].Status != resp.StatusCode {
			t.Fatalf("outcomes %q (status %d, answered %d), want %q", got, lines[len(lines)-1].Status, resp.StatusCode, want)
		}
	})
	t.Run("a suspended room and a bypass rule send visitors straight through", func(t *testing.T) {
		susp := room("off", 1, 1)
		susp.Host, susp.Suspended, susp.CookieSuffix = "off.test", true, "off"
		byp := room("shop", 1, 1)
		byp.Host, byp.CookieSuffix, byp.Bypass = "shop.test", "shop", []config.BypassRule{{PathPrefix: "/static/"}}
		f, path := loggedFixture(t, nil, susp, byp)
		for _, u := range []string{"http://off.test/", "http://shop.test/static/app.css"} {
			newVisitor().Get(f.Server, u)
		}
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "bypassed bypassed"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
		for i, r := range []string{"off", "shop"} {
			if lines[i].Room != r || lines[i].Visitor != "" {
				t.Errorf("line %d: room %q visitor %q, want room %q and no visitor", i, lines[i].Room, lines[i].Visitor, r)
			}
		}
	})
	t.Run("a visitor who has not solved the challenge is held by it", func(t *testing.T) {
		sv := newSiteverify(t, "the-secret")
		f, path := loggedFixture(t, nil, challengedRoom(sv, "infinite_queue", "allow"))
		f.AdmitFirst(t, "http://shop.test/")
		newVisitor().Get(f.Server, "http://shop.test/")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "admitted challenge"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
	})
	t.Run("an admitted visitor is stopped by the emergency stop", func(t *testing.T) {
		f, path := loggedFixture(t, nil, room("shop", 100, 100))
		v := f.AdmitFirst(t, "http://shop.test/")
		if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/stop", map[string]string{}); resp.StatusCode != http.StatusOK {
			t.Fatalf("stop: %d %s", resp.StatusCode, body(t, resp))
		}
		f.Server.RefreshAllocations()
		v.Get(f.Server, "http://shop.test/")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "admitted stopped"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
	})
	t.Run("a request no room routes is unrouted, and one whose path has no single meaning refused", func(t *testing.T) {
		rc := room("shop", 100, 100)
		rc.Host = "shop.test"
		f, path := loggedFixture(t, nil, rc)
		newVisitor().Get(f.Server, "http://elsewhere.test/")
		newVisitor().Get(f.Server, "http://shop.test/shop%2F..%2F")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "unrouted refused"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
		if lines[0].Room != "" || lines[0].Status != http.StatusNotFound {
			t.Errorf("unrouted line: %+v", lines[0])
		}
	})
	t.Run("a proxy's forward-auth question logs the visitor's answer, marked as such", func(t *testing.T) {
		f, path := loggedFixture(t, forwardOn, full)
		fa := f.Server.ForwardAuthHandler()
		askedVia(fa, "/auth")(newVisitor(), "http://shop.test/tickets")
		second := askedVia(fa, "/auth")(newVisitor(), "http://shop.test/tickets")
		askedVia(fa, "/nginx/auth")(newVisitor(), "http://shop.test/tickets")
		lines, _ := accessLines(t, f, path)
		if got, want := outcomesOf(lines), "admitted first_page first_page"; got != want {
			t.Fatalf("outcomes %q, want %q", got, want)
		}
		for i, l := range lines {
			if !l.ForwardAuth || l.Client != "198.51.100.7" || l.Host != "shop.test" || l.Path != "/tickets" {
				t.Errorf("line %d: %+v, want a forward-auth line of the visitor at 198.51.100.7", i, l)
			}
		}
		if lines[0].Status != http.StatusOK || lines[1].Status != second.StatusCode || lines[1].Status != http.StatusTooManyRequests {
			t.Errorf("statuses %d, %d; want 200 (go on) and the 429 the proxy sends the queued visitor", lines[0].Status, lines[1].Status)
		}
		if lines[2].Status != http.StatusOK || lines[2].Bytes == 0 {
			t.Errorf("nginx's kept answer: %+v, want the page nginx fetches (200, its bytes)", lines[2])
		}
	})
}

func TestTheAccessLogNeverHoldsASecret(t *testing.T) {
	const (
		code  = "PRIORITYCODEsecret123"
		token = "querytokenSECRET456"
	)
	for _, format := range []string{"json", "common"} {
		t.Run("in the "+format+" format, a request with a code, a token in its query and a cookie leaves none of them in the log", func(t *testing.T) {
			f, path := loggedFixture(t, func(c *config.Config) { c.AccessLogFormat = format }, room("shop", 100, 100))
			v := f.AdmitFirst(t, "http://shop.test/account")
			var cookie string
			for _, c := range v.Cookies {
				cookie = c.Value
			}
			if cookie == "" {
				t.Fatal("the admitted visitor has no cookie")
			}
			v.Get(f.Server, "http://shop.test/login?__waitroom_code="+code+"&token="+token+"&code=abc", "Cookie", "session=sessionSECRET789", "Authorization", "Bearer bearerSECRET")
			newVisitor().Get(f.Server, "http://shop.test/?__waitroom_code="+code)
			if err := f.Server.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			log := string(raw)
			if strings.Count(log, "\n") != 3 {
				t.Fatalf("want 3 lines, got:\n%s", log)
			}
			for _, secret := range []string{code, token, "code=abc", "sessionSECRET789", "bearerSECRET", cookie, "__waitroom", "?"} {
				if strings.Contains(log, secret) {
					t.Errorf("the log holds %q:\n%s", secret, log)
				}
			}
			if !strings.Contains(log, "/login") {
				t.Errorf("the log lacks the path /login:\n%s", log)
			}
		})
	}
}

func TestANodeWithAnAccessLogCountsWhatTheLogLost(t *testing.T) {
	f, _ := loggedFixture(t, nil, room("shop", 100, 100))
	metrics := body(t, adminGet(t, f.Admin, "/metrics"))
	for _, name := range []string{"waitroom_access_log_dropped_total 0", "waitroom_access_log_failed_total 0"} {
		t.Run("it exports "+name, func(t *testing.T) {
			if !strings.Contains(metrics, "\n"+name+"\n") {
				t.Errorf("no %q in /metrics", name)
			}
		})
	}
}
