package queuepage_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/edge/queuepage"
)

func mustParse(t *testing.T, src string) *mustache.Template {
	t.Helper()
	tmpl, err := queuepage.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestTheTemplateShownIsTheRoomsUnlessItCannotSayWhatTheVarsSay(t *testing.T) {
	plain := mustParse(t, "<p>{{waitTimeFormatted}}</p>")
	aware := mustParse(t, "{{#cookiesRequired}}cookies{{/cookiesRequired}}{{#isClosed}}closed{{/isClosed}}")
	tests := []struct {
		name   string
		custom *mustache.Template
		vars   queuepage.Vars
		want   *mustache.Template
	}{
		{"a room's own page shows an ordinary wait", plain, queuepage.Vars{}, plain},
		{"a page without cookiesRequired gives way to the built-in one", plain, queuepage.Vars{CookiesRequired: true}, queuepage.Default},
		{"a page that says cookiesRequired shows it itself", aware, queuepage.Vars{CookiesRequired: true}, aware},
		{"a page that cannot say the room is closed gives way", plain, queuepage.Vars{IsClosed: true}, queuepage.Default},
		{"a page that says isClosed shows it itself", aware, queuepage.Vars{IsClosed: true}, aware},
		{"the built-in page is shown in the visitor's language", queuepage.Default, queuepage.Vars{Lang: "ja-JP"}, queuepage.DefaultIn("ja-JP")},
		{"the built-in page that stands in is in the visitor's language", plain, queuepage.Vars{IsClosed: true, Lang: "de-DE"}, queuepage.DefaultIn("de-DE")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queuepage.Template(tc.custom, &tc.vars); got != tc.want {
				t.Errorf("Template chose another page than the one expected")
			}
		})
	}
	if queuepage.DefaultIn("de-DE") == queuepage.Default {
		t.Error("the German built-in page is the English one")
	}
	if queuepage.DefaultIn("xx-XX") != queuepage.Default {
		t.Error("an unknown language does not fall back to the English page")
	}
}

func TestWriteFilledPutsTheAddressInEverySlot(t *testing.T) {
	page := []byte(`<meta http-equiv="refresh" content="5; url=` + queuepage.RefreshURLSlot + `"><a href="` + queuepage.RefreshURLSlot + `">again</a>`)
	orig := string(page)
	w := httptest.NewRecorder()
	queuepage.WriteFilled(w, http.StatusAccepted, page, "/shop?x=1")
	want := `<meta http-equiv="refresh" content="5; url=/shop?x=1"><a href="/shop?x=1">again</a>`
	if w.Code != http.StatusAccepted || w.Body.String() != want {
		t.Errorf("got %d %q, want 202 %q", w.Code, w.Body.String(), want)
	}
	if string(page) != orig {
		t.Error("the cached page was changed in place")
	}
}

func TestTheCacheRendersAPageOncePerTemplateAndVars(t *testing.T) {
	var c queuepage.Cache
	tmpl := mustParse(t, "{{waitTime}}")
	renders := 0
	render := func(v queuepage.Vars) []byte {
		return c.Get(tmpl, v, func() []byte {
			renders++
			s, _ := tmpl.Render(v.Context())
			return []byte(s)
		})
	}
	a, b := queuepage.Vars{WaitTime: 5}, queuepage.Vars{WaitTime: 7}
	for _, v := range []queuepage.Vars{a, a, b, a, b} {
		render(v)
	}
	if renders != 2 {
		t.Errorf("%d renders, want 2 (one per set of variables)", renders)
	}
	if got := string(render(b)); got != "7" {
		t.Errorf("cached page %q, want 7", got)
	}
}

func TestLastUpdatedIsTheSecondInUTC(t *testing.T) {
	at := time.Date(2030, 6, 1, 14, 0, 5, 987e6, time.FixedZone("CEST", 2*3600))
	if got := queuepage.LastUpdated(at); got != "2030-06-01T12:00:05.000Z" {
		t.Errorf("LastUpdated = %q", got)
	}
	if got := queuepage.LastUpdated(at.Add(time.Second)); got != "2030-06-01T12:00:06.000Z" {
		t.Errorf("the next second = %q", got)
	}
}

func TestThePagesLanguageIsTheRoomsOrTheBrowsersWithAuto(t *testing.T) {
	tests := []struct {
		name, setting, accept, want string
	}{
		{"a room's language is kept whatever the browser asks", "ja-JP", "de-DE", "ja-JP"},
		{"auto takes the browser's", config.AutoLanguage, "de-DE,de;q=0.9", "de-DE"},
		{"auto without a language the room has is English", config.AutoLanguage, "xx", i18n.English().Tag},
		{"an unknown setting is English", "xx-XX", "", i18n.English().Tag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queuepage.Language(tc.setting, tc.accept).Tag; got != tc.want {
				t.Errorf("Language(%q, %q) = %s, want %s", tc.setting, tc.accept, got, tc.want)
			}
		})
	}
}

func TestAStatusPageSaysItsTitleAndTextEscaped(t *testing.T) {
	w := httptest.NewRecorder()
	queuepage.WriteStatus(w, http.StatusNotFound, "No <room>", "Here & there")
	body := w.Body.String()
	if w.Code != http.StatusNotFound || !strings.Contains(body, "No &lt;room&gt;") || !strings.Contains(body, "Here &amp; there") {
		t.Errorf("got %d %q", w.Code, body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestWriteInSaysTheWaitsInThePagesLanguage(t *testing.T) {
	tests := []struct {
		name, tag string
		vars      queuepage.Vars
		want      string
	}{
		{"a FIFO wait is said in minutes", "de-DE",
			queuepage.Vars{WaitTimeKnown: true, WaitTime: 5, WaitTime25Percentile: 5, WaitTime50Percentile: 5, WaitTime75Percentile: 5,
				WaitTime25PercentileSeconds: 300, WaitTime50PercentileSeconds: 300, WaitTime75PercentileSeconds: 300}, "5 Minuten"},
		{"a random queue's range under a minute is said in seconds", "ru-RU",
			queuepage.Vars{WaitTimeKnown: true, IsRandomQueue: true, WaitTime: 1, WaitTime25Percentile: 1, WaitTime50Percentile: 1, WaitTime75Percentile: 2,
				WaitTime25PercentileSeconds: 25, WaitTime50PercentileSeconds: 50, WaitTime75PercentileSeconds: 120}, "от 25 секунд до 2 минуты"},
		{"an unknown wait is said unknown", "fr-FR", queuepage.Vars{}, i18n.Get("fr-FR").Unknown()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.vars
			v.WriteIn(i18n.Get(tt.tag))
			if v.WaitTimeFormatted != tt.want {
				t.Errorf("WaitTimeFormatted = %q, want %q", v.WaitTimeFormatted, tt.want)
			}
		})
	}
}
