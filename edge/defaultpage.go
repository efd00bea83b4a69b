package edge

import "github.com/cbroglie/mustache"

// defaultPageHTML is the queue page a room shows without custom_page_html.
// It uses the same Mustache variables a custom page can, and refreshes by
// itself (the Refresh header does too; the meta tag covers clients that
// ignore the header, and names the same address, refreshURL, since a
// browser may follow whichever of the two comes last). With cookiesRequired
// it is the answer to a client that did not keep its cookie: no refresh,
// which would only queue it at the back again, and a link to try again.
const defaultPageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{^cookiesRequired}}<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}{{#refreshURL}}; url={{refreshURL}}{{/refreshURL}}">{{/cookiesRequired}}
<title>{{#cookiesRequired}}Cookies are required{{/cookiesRequired}}{{^cookiesRequired}}You are in line{{/cookiesRequired}}</title>
<style>
  :root { --ink:#1d2330; --muted:#5b6477; --accent:#3b5bdb; --bg:#f3f5fa; }
  * { box-sizing: border-box; }
  body { margin:0; min-height:100vh; display:flex; align-items:center; justify-content:center;
         font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
  main { background:#fff; border-radius:16px; box-shadow:0 8px 40px rgba(20,30,60,.10); padding:44px 48px; max-width:560px; margin:24px; text-align:center; }
  h1 { font-size:1.6rem; margin:0 0 8px; }
  .lede { color:var(--muted); margin:0 0 28px; line-height:1.5; }
  .wait { font-size:2.2rem; font-weight:700; color:var(--accent); margin:8px 0 4px; }
  .label { text-transform:uppercase; letter-spacing:.08em; font-size:.75rem; color:var(--muted); }
  .bar { height:6px; border-radius:3px; background:#e6e9f2; overflow:hidden; margin:28px 0 18px; }
  .bar span { display:block; height:100%; width:40%; background:var(--accent); border-radius:3px; animation: slide 2.4s ease-in-out infinite; }
  @keyframes slide { 0% { transform:translateX(-100%); } 100% { transform:translateX(250%); } }
  .fine { font-size:.85rem; color:var(--muted); line-height:1.5; margin:0; }
  .again { display:inline-block; margin:4px 0 24px; padding:10px 22px; border-radius:8px; background:var(--accent); color:#fff; text-decoration:none; font-weight:600; }
</style>
</head>
<body>
<main>
  {{#cookiesRequired}}
  <h1>Cookies are required</h1>
  <p class="lede">Cookies are required to hold your place in this queue. Your browser did not keep the cookie this site gave it, so every refresh would put you at the back of the line again.</p>
  <p class="lede">Please allow cookies for this site, then try again.</p>
  <a class="again" href="{{refreshURL}}">Try again</a>
  <p class="fine">If you opened a link someone shared with you, trying again is all you need to do.</p>
  {{/cookiesRequired}}
  {{^cookiesRequired}}
  {{#isEventPrequeueing}}
  <h1>Starting soon</h1>
  <p class="lede">You are in the pre-queue. It opens in {{timeUntilEventStartFormatted}}{{#shuffleAtEventStart}}; when it does, everyone here gets a place in line at random, so there is no need to hurry{{/shuffleAtEventStart}}. Keep this page open.</p>
  <div class="label">Starts in</div>
  <div class="wait">{{timeUntilEventStartFormatted}}</div>
  {{/isEventPrequeueing}}
  {{^isEventPrequeueing}}
  {{#queueAll}}
  <h1>The site is paused</h1>
  <p class="lede">Everyone is waiting while the site is paused. Your place in line is kept.</p>
  {{/queueAll}}
  {{^queueAll}}
  {{#queueIsFull}}
  <h1>The line is full</h1>
  <p class="lede">So many people are waiting that the line is full right now. Please keep this page open; it will try again by itself.</p>
  {{/queueIsFull}}
  {{^queueIsFull}}
  <h1>You are in line</h1>
  <p class="lede">The site is busy. {{#isRandomQueue}}Visitors are let in at random as room opens up.{{/isRandomQueue}}{{^isRandomQueue}}Visitors are let in in the order they arrived.{{/isRandomQueue}} Keep this page open; it will take you in when it is your turn.</p>
  {{/queueIsFull}}
  <div class="label">Estimated wait</div>
  {{#waitTimeKnown}}<div class="wait">{{waitTimeFormatted}}</div>{{/waitTimeKnown}}
  {{^waitTimeKnown}}<div class="wait">Calculating…</div>{{/waitTimeKnown}}
  {{#positionKnown}}<p class="position">About {{position}} people ahead of you.</p>{{/positionKnown}}
  {{/queueAll}}
  {{/isEventPrequeueing}}
  <div class="bar"><span></span></div>
  {{{turnstile}}}
  <p class="fine" id="nocookies" hidden><strong>Your browser is not keeping cookies.</strong> Your place in line is kept in a cookie: without it every refresh puts you at the back. Please allow cookies for this site and reload.</p>
  <script>if(!navigator.cookieEnabled){document.getElementById("nocookies").hidden=false;}</script>
  <p class="fine">This page refreshes every {{refreshIntervalSeconds}} seconds. Refreshing it yourself does not move you ahead.<br>Last updated {{lastUpdated}}</p>
  {{/cookiesRequired}}
</main>
</body>
</html>
`

var defaultPage = func() *mustache.Template {
	t, err := mustache.ParseString(defaultPageHTML)
	if err != nil {
		panic("default queue page: " + err.Error())
	}
	return t
}()
