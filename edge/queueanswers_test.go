package edge_test

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
)

var updateAnswers = flag.Bool("update-answers", false, "rewrite testdata/queue_answers.golden from the answers the node gives now")

// The queue answers' golden file holds whole answers (status, every header,
// body) of the queued path across rooms, languages, HTML and JSON, new
// visitors, check-ins and the cookie check, as the node gave them before its
// queued path was made cheaper: a visitor must get the same bytes however
// the node prepares them. Rewrite it only for a change a visitor is meant
// to see (go test ./edge -run TestQueueAnswers -update-answers).
const queueAnswersGolden = "testdata/queue_answers.golden"

func TestQueueAnswersAreTheSameBytesAsBefore(t *testing.T) {
	start := newFakeClock(5).Now()
	event := config.Event{
		Name:           "launch",
		EventStartTime: start.Add(95 * time.Minute),
		EventEndTime:   start.Add(5 * time.Hour),
	}
	pre := start.Add(-time.Minute)
	event.PrequeueStartTime = &pre
	custom := `<!doctype html><title>{{waitTimeFormatted}}</title>
<p>{{#positionKnown}}{{position}} ahead{{/positionKnown}} {{waitTime}} min ({{waitTimeHours}}h{{waitTimeHourMinutes}}) q={{queueingMethod}} full={{queueIsFull}} all={{queueAll}}</p>
<p>updated {{lastUpdated}}, every {{refreshIntervalSeconds}} s, next {{refreshURL}} {{message}} {{#cookiesRequired}}cookies!{{/cookiesRequired}}</p>
<p>{{#isEventPrequeueing}}starts in {{timeUntilEventStartFormatted}}{{/isEventPrequeueing}} <script>{{{refreshURL}}}</script></p>`
	rooms := []config.Room{
		{Name: "fifo", Path: "/fifo", TotalActiveUsers: 1, NewUsersPerMinute: 1, JSONResponseEnabled: true, CookieSuffix: "fifo"},
		{Name: "random", Path: "/random", TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueingMethod: "random", JSONResponseEnabled: true,
			DefaultTemplateLanguage: config.AutoLanguage, CookieSuffix: "random", CookieAttributes: config.CookieAttributes{SameSite: "strict", Secure: "always"}},
		{Name: "custom", Path: "/custom", TotalActiveUsers: 1, NewUsersPerMinute: 1, CustomPageHTML: custom, QueueingStatusCode: 202,
			Message: `Doors <open> at "noon" & not before`, CookieSuffix: "custom"},
		{Name: "german", Path: "/german", TotalActiveUsers: 1, NewUsersPerMinute: 1, DefaultTemplateLanguage: "de-DE", QueueingStatusCode: 429,
			QueueAll: true, CookieSuffix: "german", CookieAttributes: config.CookieAttributes{SameSite: "none"}},
		{Name: "event", Path: "/event", TotalActiveUsers: 1, NewUsersPerMinute: 1, Events: []config.Event{event}, JSONResponseEnabled: true,
			DefaultTemplateLanguage: config.AutoLanguage, CookieSuffix: "event"},
		{Name: "closed", Path: "/closed", TotalActiveUsers: 1, NewUsersPerMinute: 1, Closed: true, CookieSuffix: "closed"},
	}
	var keyFile string
	f := newFixtureWith(t, func(c *config.Config) { keyFile = c.CookieKeyFile }, rooms...)
	keys, err := agent.LoadCookieKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	// The refresh jitter walks a fixed sequence, so that the refresh
	// intervals, in headers and pages, are the same on every run.
	var draws int
	f.Server.SetJitter(func() float64 { draws++; return float64(draws%10) / 10 })
	h := http.Handler(f.Server)
	for _, rc := range rooms {
		if rc.Events == nil && !rc.Closed && !rc.QueueAll {
			f.AdmitFirst(t, "http://shop.test"+rc.Path+"/")
		}
	}

	var out strings.Builder
	record := func(name string, resp *http.Response) {
		fmt.Fprintf(&out, "=== %s\n%d\n", name, resp.StatusCode)
		names := make([]string, 0, len(resp.Header))
		for k := range resp.Header {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			for _, v := range resp.Header[k] {
				if k == "Set-Cookie" {
					v = openedCookie(t, keys, v)
				}
				fmt.Fprintf(&out, "%s: %s\n", k, v)
			}
		}
		fmt.Fprintf(&out, "\n%s\n", body(t, resp))
	}
	for _, rc := range rooms {
		base := "http://shop.test" + rc.Path
		page := newVisitor()
		app := newVisitor()
		firstPage := page.Get(h, base+"/tickets?show=1&seat=A%2012", "Accept-Language", "fr-CH, de;q=0.5")
		record(rc.Name+": a new visitor's first page, in French or German", firstPage)
		record(rc.Name+": a new app asking for JSON", app.Get(h, base+"/api/state", "Accept", "application/json"))
		record(rc.Name+": a new visitor on a path that starts with two slashes", newVisitor().Get(h, base+"//other.example/x?a=<b>"))
		record(rc.Name+": a browser that kept no cookie, back on the marked address", newVisitor().Get(h, refreshTarget(t, firstPage), "Accept-Language", "fr-CH, de;q=0.5"))
		f.Clock.Advance(time.Second)
		first := newVisitor()
		resp := first.Get(h, base+"/tickets?show=1&seat=A%2012", "Accept-Language", "de-DE")
		f.Clock.Advance(2 * time.Second)
		record(rc.Name+": the first page's proof, on the marked address with the cookie", first.Get(h, refreshTarget(t, resp), "Accept-Language", "de-DE"))
		record(rc.Name+": an early check-in", first.Get(h, base+"/tickets?show=1&seat=A%2012", "Accept-Language", "de-DE"))
		f.Clock.Advance(35 * time.Second)
		f.Server.RefreshAllocations()
		record(rc.Name+": a check-in when it counts", first.Get(h, base+"/tickets?show=1&seat=A%2012", "Accept-Language", "de-DE"))
		record(rc.Name+": the app checking in", app.Get(h, base+"/api/state", "Accept", "application/json"))
		f.Clock.Advance(20 * time.Second)
	}

	path := filepath.Join(queueAnswersGolden)
	if *updateAnswers {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-answers from a node whose answers are right)", err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("the answers differ from %s at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("the answers differ from %s in length: %d lines, want %d", path, len(gl), len(wl))
	}
}

// openedCookie writes a Set-Cookie line with its sealed value opened: the
// token's fields, all but the visitor's random id, which is the only part
// of the answers drawn at random (the sealing's nonce aside).
func openedCookie(t *testing.T, keys *cookie.Keyring, line string) string {
	t.Helper()
	nv, attrs, _ := strings.Cut(line, ";")
	name, value, _ := strings.Cut(nv, "=")
	if value == "" {
		return line
	}
	room := strings.TrimPrefix(strings.TrimPrefix(name, "__waitroom"), "_")
	tok, err := keys.Open(value, room, time.Unix(0, 0))
	if err != nil {
		t.Fatalf("the cookie %s does not open for room %q: %v", name, room, err)
	}
	tok.ID = 0
	return fmt.Sprintf("%s=%+v;%s", name, tok, attrs)
}
