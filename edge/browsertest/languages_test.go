package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/i18n"
)

// langPage is what the languages test reads from a rendered default page.
type langPage struct {
	Lang        string  `json:"lang"`
	Dir         string  `json:"dir"`
	Direction   string  `json:"direction"` // computed, of the body
	H1          string  `json:"h1"`
	Wait        string  `json:"wait"`
	Message     string  `json:"message"`
	Updated     string  `json:"updated"`
	UpdatedISO  string  `json:"updatedISO"`
	Main        bool    `json:"main"`
	LiveRegion  bool    `json:"liveRegion"`
	Overflow    bool    `json:"overflow"`
	MinContrast float64 `json:"minContrast"`
}

const readLangPageJS = `(() => {
  const q = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ""; };
  const lum = c => { const m = c.match(/[\d.]+/g).map(Number);
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(m[0]) + 0.7152 * f(m[1]) + 0.0722 * f(m[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const bgOf = e => { for (; e; e = e.parentElement) { const b = getComputedStyle(e).backgroundColor; if (!/rgba\(.*, 0\)$/.test(b) && b !== "transparent") return b; } return "rgb(255, 255, 255)"; };
  let min = 99;
  for (const e of document.querySelectorAll("h1, h2, .lede, .label, .wait, .fine, .msg p, .ahead")) {
    if (e.offsetParent === null) continue; // hidden
    min = Math.min(min, ratio(getComputedStyle(e).color, bgOf(e)));
  }
  const t = document.querySelector("time");
  return {lang: document.documentElement.lang, dir: document.documentElement.dir,
          direction: getComputedStyle(document.body).direction, h1: q("h1"), wait: q(".wait"),
          message: q(".msg p"), updated: t ? t.textContent : "", updatedISO: t ? t.dateTime : "",
          main: !!document.querySelector("main"),
          liveRegion: !!document.querySelector('[role="status"][aria-live="polite"] .wait'),
          overflow: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          minContrast: min};
})()`

// TestBrowserRendersEveryLanguage opens the built-in page of a room set
// to "auto" once per language, in one browser, asking in that language,
// and checks that the browser shows the page in it (right to left for
// Arabic and Persian), with the operator's message, the estimate in a
// live region, lastUpdated in local time, readable contrast, and no
// sideways scrolling on a phone.
func TestBrowserRendersEveryLanguage(t *testing.T) {
	t.Parallel()
	chromium(t)
	org := startOrigin(t)
	const message = "The 7 pm batch is sold out; more at 8."
	n := newNode(t, org.URL, func(rc *config.Room) {
		rc.DefaultTemplateLanguage = config.AutoLanguage
		rc.Message = message
	})
	roomURL := n.serve(t) + "/"
	first := newGoVisitor(t, nil)
	if resp, body := first.get(t, roomURL); resp.StatusCode != http.StatusOK || !strings.Contains(body, originMarker) {
		t.Fatalf("first visitor: status %d, want the origin page", resp.StatusCode)
	}

	ctx := startBrowser(t)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	open := func(tag string) langPage {
		t.Helper()
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": tag}}); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(roomURL)); err != nil {
			t.Fatalf("open the room in %s: %v", tag, err)
		}
		p, err := chromedp.Run(ctx, chromedp.Evaluate[langPage](readLangPageJS))
		if err != nil {
			t.Fatalf("read the page in %s: %v", tag, err)
		}
		return p
	}
	shots := []string{"en-US", "ja-JP", "ar-EG", "pt-BR"}
	for _, tag := range i18n.Tags {
		l := i18n.Get(tag)
		p := open(tag)
		t.Run(tag+" is shown in its language", func(t *testing.T) {
			wantDir := "ltr"
			if l.RTL {
				wantDir = "rtl"
			}
			if p.Lang != tag || p.Dir != wantDir || p.Direction != wantDir {
				t.Errorf("lang %q dir %q (computed %q), want %s and %s", p.Lang, p.Dir, p.Direction, tag, wantDir)
			}
			if p.H1 != l.S("title_queue") {
				t.Errorf("heading %q, want %q", p.H1, l.S("title_queue"))
			}
			waits := []string{l.S("calculating")}
			for m := 0; m <= 120; m++ {
				waits = append(waits, l.Wait(m))
			}
			if !slices.Contains(waits, p.Wait) {
				t.Errorf("estimate %q is not a wait written in %s", p.Wait, tag)
			}
			if p.Message != message {
				t.Errorf("message %q, want %q", p.Message, message)
			}
			if p.Updated == "" || p.Updated == p.UpdatedISO {
				t.Errorf("lastUpdated shown as %q: want it in the visitor's local time, not %q", p.Updated, p.UpdatedISO)
			}
			if !p.Main || !p.LiveRegion {
				t.Errorf("landmark main %v, estimate in a polite live region %v: want both", p.Main, p.LiveRegion)
			}
			if p.MinContrast < 4.5 {
				t.Errorf("lowest text contrast %.2f:1, want at least 4.5:1 (WCAG AA)", p.MinContrast)
			}
		})
		if slices.Contains(shots, tag) {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			saveScreenshot(t, fmt.Sprintf("page-%s.png", tag), png)
		}
	}

	t.Run("on a phone the page fits the screen", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))); err != nil {
			t.Fatal(err)
		}
		for _, tag := range []string{"de-DE", "ar-EG"} {
			p := open(tag)
			if p.Overflow {
				t.Errorf("%s: the page scrolls sideways at 390 px", tag)
			}
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			saveScreenshot(t, "page-phone-"+tag+".png", png)
		}
	})

	t.Run("a closed room shows the closed page in the visitor's language", func(t *testing.T) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/rooms/"+roomName+"/close", nil)
		req.Header.Set("Content-Type", "application/json")
		n.srv.AdminHandler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("close: %d %s", rec.Code, rec.Body)
		}
		for _, tag := range []string{"fa-IR", "ko-KR"} {
			if p := open(tag); p.H1 != i18n.Get(tag).S("title_closed") || p.Message != message {
				t.Errorf("%s: heading %q, message %q; want the closed page with the message", tag, p.H1, p.Message)
			}
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		saveScreenshot(t, "page-closed-ko-KR.png", png)
	})
}
