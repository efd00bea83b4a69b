package edge_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestDefaultPageLanguage(t *testing.T) {
	tests := []struct {
		name, setting, accept string
		want                  []string // in the page
	}{
		{name: "a room in Japanese shows the whole page and the wait in Japanese", setting: "ja-JP", accept: "en-US",
			want: []string{`<html lang="ja-JP" dir="ltr">`, "順番待ちの列に並んでいます", "推定待ち時間", `<div class="wait">1分</div>`, "最終更新"}},
		{name: "auto gives an Arabic browser the page in Arabic, right to left", setting: "auto", accept: "ar-EG,ar;q=0.9,en;q=0.5",
			want: []string{`<html lang="ar-EG" dir="rtl">`, "أنت في قائمة الانتظار", `<div class="wait">دقيقة واحدة</div>`}},
		{name: "auto gives a browser asking for European Portuguese the Brazilian page", setting: "auto", accept: "pt-PT,pt;q=0.9",
			want: []string{`<html lang="pt-BR" dir="ltr">`, "Você está na fila", "1 minuto"}},
		{name: "auto gives traditional Chinese to a Hong Kong browser", setting: "auto", accept: "zh-HK",
			want: []string{`<html lang="zh-TW"`, "您正在排隊"}},
		{name: "auto falls back to English for a language there is not", setting: "auto", accept: "fi-FI",
			want: []string{`<html lang="en-US" dir="ltr">`, "You are in line"}},
		{name: "a room in Spanish ignores the browser's languages", setting: "es-ES", accept: "ja-JP",
			want: []string{`<html lang="es-ES"`, "Estás en la cola", "1 minuto"}},
		{name: "a room without a language is in English", setting: "", accept: "fr-FR",
			want: []string{`<html lang="en-US"`, "You are in line", "1 minute"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := fullRoom("shop")
			rc.DefaultTemplateLanguage = tt.setting
			f := newFixture(t, rc)
			admitFirst(t, f, "http://shop.test/")
			page := body(t, newVisitor().Get(f.Server, "http://shop.test/", "Accept-Language", tt.accept))
			for _, s := range tt.want {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q:\n%s", s, page)
				}
			}
		})
	}
}

func TestCloudflareVariablesAndJSONFields(t *testing.T) {
	rc := fullRoom("shop")
	rc.JSONResponseEnabled = true
	rc.Message = "Batch two at 8 pm"
	rc.CustomPageHTML = allVars + "\nwaitTimeHours={{waitTimeHours}}\nwaitTimeHourMinutes={{waitTimeHourMinutes}}\nisPassthroughQueue={{isPassthroughQueue}}\nisRejectQueue={{isRejectQueue}}\nmessage={{message}}\nisClosed={{isClosed}}\npositionKnown={{positionKnown}}\n"
	f := newFixture(t, rc)
	admitFirst(t, f, "http://shop.test/")
	vars := parseVars(t, body(t, newVisitor().Get(f.Server, "http://shop.test/")))
	for k, want := range map[string]string{"waitTimeHours": "0", "waitTimeHourMinutes": "1", "isPassthroughQueue": "false", "isRejectQueue": "false", "message": "Batch two at 8 pm", "isClosed": "false"} {
		if vars[k] != want {
			t.Errorf("template variable %s = %q, want %q", k, vars[k], want)
		}
	}
	obj := queueJSON(t, newVisitor().Get(f.Server, "http://shop.test/", "Accept", "application/json"))
	types := map[string]string{
		"inWaitingRoom": "bool", "waitTimeKnown": "bool", "waitTime": "number", "waitTime25Percentile": "number",
		"waitTime50Percentile": "number", "waitTime75Percentile": "number", "waitTimeFormatted": "string",
		"queueIsFull": "bool", "queueAll": "bool", "lastUpdated": "string", "refreshIntervalSeconds": "number",
		"queueingMethod": "string", "isFIFOQueue": "bool", "isRandomQueue": "bool", "isPassthroughQueue": "bool",
		"isRejectQueue": "bool", "isEventActive": "bool", "isEventPrequeueing": "bool", "timeUntilEventStart": "number",
		"timeUntilEventStartFormatted": "string", "timeUntilEventEnd": "number", "timeUntilEventEndFormatted": "string",
		"shuffleAtEventStart": "bool", "waitTimeHours": "number", "waitTimeHourMinutes": "number",
		"message": "string", "isClosed": "bool", "position": "number", "positionKnown": "bool",
	}
	for k, typ := range types {
		var got string
		switch obj[k].(type) {
		case bool:
			got = "bool"
		case float64:
			got = "number"
		case string:
			got = "string"
		}
		if got != typ {
			t.Errorf("cfWaitingRoom.%s is %T (%v), want a %s", k, obj[k], obj[k], typ)
		}
	}
	if obj["message"] != "Batch two at 8 pm" {
		t.Errorf("cfWaitingRoom.message = %v", obj["message"])
	}
}

func TestOperatorMessage(t *testing.T) {
	f := newFixture(t, fullRoom("shop"))
	admitFirst(t, f, "http://shop.test/")
	steps := []struct {
		name, method string
		body         any
		want, absent string
	}{
		{name: "a message set through the admin API shows on the page, as text", method: http.MethodPost,
			body: map[string]string{"message": "The 7 pm batch is <b>sold out</b>"},
			want: "The 7 pm batch is &lt;b&gt;sold out&lt;/b&gt;", absent: "<b>sold out"},
		{name: "clearing it takes it off the page", method: http.MethodDelete, absent: "sold out"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if resp := adminSend(t, f.Admin, st.method, "/rooms/shop/message", st.body); resp.StatusCode != http.StatusOK {
				t.Fatalf("admin: %d %s", resp.StatusCode, body(t, resp))
			}
			settle(t, f)
			page := body(t, newVisitor().Get(f.Server, "http://shop.test/"))
			if st.want != "" && !strings.Contains(page, st.want) {
				t.Errorf("page lacks %q:\n%s", st.want, page)
			}
			if strings.Contains(page, st.absent) {
				t.Errorf("page holds %q:\n%s", st.absent, page)
			}
		})
	}
	t.Run("a message longer than the limit is refused, naming the field", func(t *testing.T) {
		resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/message", map[string]string{"message": strings.Repeat("x", config.MaxMessage+1)})
		if b := body(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "message") {
			t.Errorf("got %d %s, want 422 naming message", resp.StatusCode, b)
		}
	})
}

func TestClosedRoom(t *testing.T) {
	rc := room("shop", 2, 2)
	rc.JSONResponseEnabled = true
	rc.DefaultTemplateLanguage = "auto"
	f := newFixture(t, rc)
	admitted := admitFirst(t, f, "http://shop.test/")

	if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/close", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("close: %d %s", resp.StatusCode, body(t, resp))
	}
	settle(t, f)
	hits := f.Origin.Hits()
	newcomer := newVisitor()
	t.Run("a newcomer gets the closed page in its language, with a place kept", func(t *testing.T) {
		resp := newcomer.Queue(t, f.Server, f.Clock, "http://shop.test/", "Accept-Language", "de-DE")
		page := body(t, resp)
		if !strings.Contains(page, "Der Warteraum ist geschlossen") || resp.Header.Get("Refresh") == "" {
			t.Errorf("want the refreshing closed page in German:\n%s", page)
		}
		if f.Origin.Hits() != hits {
			t.Error("a newcomer reached the origin of a closed room with room to spare")
		}
	})
	t.Run("the JSON answer says the room is closed", func(t *testing.T) {
		obj := queueJSON(t, newVisitor().Get(f.Server, "http://shop.test/", "Accept", "application/json"))
		if obj["isClosed"] != true {
			t.Errorf("isClosed = %v, want true", obj["isClosed"])
		}
	})
	t.Run("an admitted visitor finishes the session", func(t *testing.T) {
		if resp := admitted.Get(f.Server, "http://shop.test/"); resp.Header.Get("X-Origin") != "yes" {
			t.Errorf("admitted visitor held by a closed room: %d", resp.StatusCode)
		}
	})
	t.Run("reopening lets the waiting visitor in with its place", func(t *testing.T) {
		if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/open", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("open: %d %s", resp.StatusCode, body(t, resp))
		}
		// Its next check-ins (every refresh interval, at most 23 s) take
		// it in as soon as the minute's budget releases the free slot.
		for i := 0; ; i++ {
			f.Clock.Advance(25 * time.Second)
			settle(t, f)
			resp := newcomer.Get(f.Server, "http://shop.test/")
			if resp.Header.Get("X-Origin") == "yes" {
				break
			}
			if i == 4 {
				t.Fatalf("the visitor who waited through the closure was not admitted within two minutes of reopening:\n%s", body(t, resp))
			}
		}
	})
}

func TestRoomClosesAtTheEventsEnd(t *testing.T) {
	rc := room("shop", 100, 50)
	start := time.Unix(1_900_000_000, 0).UTC()
	rc.Events = []config.Event{{Name: "sale", EventStartTime: start.Add(-time.Hour), EventEndTime: start.Add(time.Hour), CloseAtEnd: true}}
	for _, tt := range []struct {
		name   string
		at     time.Time
		closed bool
	}{
		{name: "open while the event runs", at: start},
		{name: "closed from its end", at: start.Add(time.Hour), closed: true},
		{name: "still closed a day later", at: start.Add(25 * time.Hour), closed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rc.ClosedAt(tt.at); got != tt.closed {
				t.Errorf("ClosedAt = %v, want %v", got, tt.closed)
			}
		})
	}
	t.Run("reopening clears the event's closure", func(t *testing.T) {
		c := rc
		c.Events = append([]config.Event(nil), rc.Events...)
		c.Reopen(start.Add(2 * time.Hour))
		if c.ClosedAt(start.Add(3 * time.Hour)) {
			t.Error("still closed after Reopen")
		}
	})
}

func TestMessageAndClosureReachEveryNode(t *testing.T) {
	r := newRing(t, 3, room("shop", 100, 50))
	for _, step := range []struct{ path, want string }{
		{"/rooms/shop/message", "Sold out at 7"},
		{"/rooms/shop/close", "The waiting room is closed"},
	} {
		resp := adminSend(t, r.admins[0], http.MethodPost, step.path, map[string]string{"message": "Sold out at 7"})
		if step.path != "/rooms/shop/message" {
			resp = adminSend(t, r.admins[0], http.MethodPost, step.path, nil)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", step.path, resp.StatusCode, body(t, resp))
		}
	}
	took := testkit.Eventually(t, testkit.Wait{What: "closed page with the message at node c", Timeout: 2 * time.Second}, func() bool {
		page := body(t, newVisitor().Get(r.nodes[2], "http://shop.test/"))
		return strings.Contains(page, "Sold out at 7") && strings.Contains(page, "The waiting room is closed")
	})
	t.Logf("message and closure set on node a shown at node c after %s", took)
}

func TestReopeningKeepsTheQueuesOrder(t *testing.T) {
	rc := fullRoom("shop")
	rc.JSONResponseEnabled = true
	f := newFixture(t, rc)
	admitFirst(t, f, "http://shop.test/")
	early := newVisitor()
	early.Queue(t, f.Server, f.Clock, "http://shop.test/")
	if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/close", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("close: %d %s", resp.StatusCode, body(t, resp))
	}
	settle(t, f)
	// The closure lasts into the next minute; the early visitor keeps
	// checking in, and a late one arrives while the room is closed.
	late := newVisitor()
	for i := 0; i < 4; i++ {
		f.Clock.Advance(20 * time.Second)
		settle(t, f)
		early.Get(f.Server, "http://shop.test/")
		if i == 2 {
			late.Queue(t, f.Server, f.Clock, "http://shop.test/")
		}
	}
	if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/open", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("open: %d %s", resp.StatusCode, body(t, resp))
	}
	settle(t, f)
	e := queueJSON(t, early.Get(f.Server, "http://shop.test/", "Accept", "application/json"))
	l := queueJSON(t, late.Get(f.Server, "http://shop.test/", "Accept", "application/json"))
	if e["isClosed"] != false || l["isClosed"] != false {
		t.Fatalf("still closed after reopening: %v %v", e["isClosed"], l["isClosed"])
	}
	if ew, lw := e["waitTime"].(float64), l["waitTime"].(float64); e["waitTimeKnown"] != true || ew >= lw {
		t.Errorf("after reopening the visitor who came before the closure waits %v min, the one who came during it %v: want the earlier ahead", ew, lw)
	}
}

func TestClosedRoomWithACustomPage(t *testing.T) {
	tests := []struct {
		name, page, want string
	}{
		{name: "a page written for Cloudflare gives way to the built-in closed page", page: "<p>{{waitTimeFormatted}} left</p>", want: "The waiting room is closed"},
		{name: "a page that uses isClosed is shown, with it true", page: "<p>closed={{isClosed}}</p>", want: "closed=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := fullRoom("shop")
			rc.CustomPageHTML = tt.page
			rc.Closed = true
			f := newFixture(t, rc)
			if page := body(t, newVisitor().Get(f.Server, "http://shop.test/")); !strings.Contains(page, tt.want) {
				t.Errorf("page lacks %q:\n%s", tt.want, page)
			}
		})
	}
}
