package edge

import (
	"html"
	"strings"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/i18n"
)

// defaultPageHTML is the queue page a room shows without custom_page_html.
// It uses the same Mustache variables a custom page can, and refreshes by
// itself (the Refresh header does too; the meta tag covers clients that
// ignore the header, and names the same address, refreshURL, since a
// browser may follow whichever of the two comes last). With cookiesRequired
// it is the answer to a client that did not keep its cookie: no refresh,
// which would only queue it at the back again, and a link to try again.
//
// [[key]] stands for the text of package i18n in the page's language (see
// defaultPages); [[lang]] and [[dir]] for the language's tag and writing
// direction. The estimate is a polite live region, so a screen reader
// announces it when it changes without a reload; lastUpdated keeps its ISO
// value in the datetime attribute and is shown in the visitor's own time.
const defaultPageHTML = `<!doctype html>
<html lang="[[lang]]" dir="[[dir]]">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{^cookiesRequired}}<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}{{#refreshURL}}; url={{refreshURL}}{{/refreshURL}}">{{/cookiesRequired}}
<title>{{#cookiesRequired}}[[title_cookies]]{{/cookiesRequired}}{{^cookiesRequired}}{{#isClosed}}[[title_closed]]{{/isClosed}}{{^isClosed}}[[title_queue]]{{/isClosed}}{{/cookiesRequired}}</title>
<style>
  :root { --ink:#1d2330; --muted:#4f586b; --accent:#2f4fc9; --bg:#f3f5fa; }
  * { box-sizing: border-box; }
  body { margin:0; min-height:100vh; display:flex; align-items:center; justify-content:center;
         font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans Arabic", sans-serif; background:var(--bg); color:var(--ink); }
  main { background:#fff; border-radius:16px; box-shadow:0 8px 40px rgba(20,30,60,.10); padding:44px 48px; max-width:560px; width:calc(100% - 32px); margin:16px; text-align:center; }
  h1 { font-size:1.6rem; margin:0 0 8px; }
  .lede { color:var(--muted); margin:0 0 24px; line-height:1.55; }
  .wait { font-size:2.2rem; font-weight:700; color:var(--accent); margin:8px 0 4px; overflow-wrap:anywhere; }
  .label { letter-spacing:.04em; font-size:.8rem; font-weight:600; color:var(--muted); }
  .ahead { margin:8px 0 0; color:var(--ink); }
  .msg { border:1px solid #c9d3f5; background:#eef2ff; border-radius:10px; padding:12px 16px; margin:0 0 24px; text-align:start; }
  .msg h2 { font-size:.85rem; margin:0 0 4px; color:var(--accent); }
  .msg p { margin:0; line-height:1.5; white-space:pre-line; overflow-wrap:anywhere; }
  .bar { height:6px; border-radius:3px; background:#e6e9f2; overflow:hidden; margin:28px 0 18px; }
  .bar span { display:block; height:100%; width:40%; background:var(--accent); border-radius:3px; animation: slide 2.4s ease-in-out infinite; }
  @keyframes slide { 0% { transform:translateX(-100%); } 100% { transform:translateX(250%); } }
  @media (prefers-reduced-motion: reduce) { .bar span { animation:none; width:100%; opacity:.35; } }
  @media (max-width: 480px) { main { padding:28px 20px; border-radius:12px; } h1 { font-size:1.35rem; } .wait { font-size:1.8rem; } }
  :lang(ko) { word-break:keep-all; }
  .fine { font-size:.85rem; color:var(--muted); line-height:1.5; margin:0; }
  .again { display:inline-block; margin:4px 0 24px; padding:10px 22px; border-radius:8px; background:var(--accent); color:#fff; text-decoration:none; font-weight:600; }
</style>
</head>
<body>
<main>
  {{#message}}<section class="msg" aria-labelledby="msg-title"><h2 id="msg-title">[[message_label]]</h2><p dir="auto">{{message}}</p></section>{{/message}}
  {{#cookiesRequired}}
  <h1>[[title_cookies]]</h1>
  <p class="lede">[[lede_cookies]]</p>
  <p class="lede">[[allow_cookies]]</p>
  <a class="again" href="{{refreshURL}}">[[try_again]]</a>
  {{/cookiesRequired}}
  {{^cookiesRequired}}
  {{#isClosed}}
  <h1>[[title_closed]]</h1>
  <p class="lede">[[lede_closed]]</p>
  {{/isClosed}}
  {{^isClosed}}
  {{#isEventPrequeueing}}
  <h1>[[title_prequeue]]</h1>
  <p class="lede">[[lede_prequeue]]{{#shuffleAtEventStart}}[[sentence_gap]][[prequeue_shuffle]]{{/shuffleAtEventStart}}</p>
  <div role="status" aria-live="polite" aria-atomic="true">
  <div class="label">[[label_starts]]</div>
  <div class="wait">{{timeUntilEventStartFormatted}}</div>
  </div>
  {{/isEventPrequeueing}}
  {{^isEventPrequeueing}}
  {{#queueAll}}
  <h1>[[title_paused]]</h1>
  <p class="lede">[[lede_paused]]</p>
  {{/queueAll}}
  {{^queueAll}}
  {{#queueIsFull}}
  <h1>[[title_full]]</h1>
  <p class="lede">[[lede_full]]</p>
  {{/queueIsFull}}
  {{^queueIsFull}}
  <h1>[[title_queue]]</h1>
  <p class="lede">[[lede_busy]][[sentence_gap]]{{#isRandomQueue}}[[order_random]]{{/isRandomQueue}}{{^isRandomQueue}}[[order_fifo]]{{/isRandomQueue}}[[sentence_gap]][[keep_open]]</p>
  {{/queueIsFull}}
  <div role="status" aria-live="polite" aria-atomic="true">
  <div class="label">[[label_wait]]</div>
  {{#waitTimeKnown}}<div class="wait">{{waitTimeFormatted}}</div>{{/waitTimeKnown}}
  {{^waitTimeKnown}}<div class="wait">[[calculating]]</div>{{/waitTimeKnown}}
  {{#positionKnown}}<p class="ahead">{{positionFormatted}}</p>{{/positionKnown}}
  </div>
  {{/queueAll}}
  {{/isEventPrequeueing}}
  {{/isClosed}}
  {{^isClosed}}<div class="bar" aria-hidden="true"><span></span></div>{{/isClosed}}
  {{{turnstile}}}
  {{#priorityCodes}}<form method="get" class="fine">{{#priorityCodeMessage}}<strong>{{priorityCodeMessage}}</strong><br>{{/priorityCodeMessage}}<label>[[code_label]] <input name="{{priorityCodeParam}}" autocomplete="off" required></label> <button>[[code_button]]</button></form>{{/priorityCodes}}
  <p class="fine" id="nocookies" hidden><strong>[[nocookies]]</strong></p>
  <script>if(!navigator.cookieEnabled){document.getElementById("nocookies").hidden=false;}</script>
  <p class="fine">[[refresh_note]]<br>[[last_updated]] <time id="updated" datetime="{{lastUpdated}}">{{lastUpdated}}</time></p>
  <script>(function(){var t=document.getElementById("updated"),d=new Date(t.dateTime);if(!isNaN(d)){try{t.textContent=d.toLocaleString(document.documentElement.lang,{dateStyle:"medium",timeStyle:"medium"});}catch(e){t.textContent=d.toLocaleString();}}})();</script>
  {{/cookiesRequired}}
</main>
</body>
</html>
`

// defaultPages are the built-in page in every language, by tag.
var defaultPages = func() map[string]*mustache.Template {
	m := make(map[string]*mustache.Template, len(i18n.Tags))
	for _, tag := range i18n.Tags {
		t, err := mustache.ParseString(defaultPageSource(i18n.Get(tag)))
		if err != nil {
			panic("default queue page, " + tag + ": " + err.Error())
		}
		m[tag] = t
	}
	return m
}()

// defaultPageSource fills the page's [[key]] slots with l's text, escaped
// for HTML.
func defaultPageSource(l *i18n.Lang) string {
	pairs := []string{"[[lang]]", l.Tag, "[[dir]]", l.Dir()}
	for _, k := range i18n.Keys {
		pairs = append(pairs, "[["+k+"]]", html.EscapeString(l.S(k)))
	}
	return strings.NewReplacer(pairs...).Replace(defaultPageHTML)
}

// defaultPage is the built-in page in English: what parsePage gives a room
// without a custom page, and what the page's language replaces (see
// pageTemplate).
var defaultPage = defaultPages["en-US"]
