// Package browsertest drives a real browser (headless Chromium, through
// chromedp) against a waitroom node, to check what no HTTP client in Go can:
// that a browser shows the queue page, honours its automatic refresh, keeps
// its cookie (also inside a cross-site iframe, where the cookie must be
// SameSite=None; Secure) and lands on the origin when it is admitted, at the
// room's own address although its first refresh went to the cookie check's;
// and that a browser set to refuse cookies is told that cookies are
// required instead of being queued at the back on every refresh.
//
// The package holds only tests. They look for Chromium at /usr/bin/chromium,
// or at $WAITROOM_CHROMIUM, and skip when it is not there, so that
// `go test ./...` stays green on a machine without a browser. CI installs
// Chromium with .ci/install-browser.sh and should set
// WAITROOM_REQUIRE_BROWSER=1, which turns the skip into a failure.
//
// Each test takes about 25 to 45 seconds of real time: the queue page
// refreshes every ~20 s and the tests wait for the browser to do it by
// itself. The node's clock is a running testkit.Clock (the real clock,
// shifted by the test's moves) that the test moves to the next minute, so
// that new_users_per_minute does not hold a freed slot for up to a minute.
//
// Set WAITROOM_SCREENSHOT_DIR to keep the screenshots: queue-page.png (the
// queue page), queue-page-iframe.png (the same page in a partner's iframe),
// origin-in-iframe.png (the origin in that iframe after admission) and
// cookies-required.png (what a browser that refuses cookies is told),
// console.png and console-stopped.png (the operator's console of a
// three-node ring, before and after its emergency stop), and from the
// languages test page-en-US.png, page-ja-JP.png, page-pt-BR.png,
// page-ar-EG.png and, at a phone's width, page-phone-de-DE.png and
// page-phone-ar-EG.png, and a closed room's page-closed-ko-KR.png. The
// languages test renders the built-in page in all its languages in one
// browser, in a few seconds; CJK text needs a font such as Debian's
// fonts-noto-cjk to show in the screenshots. The console's test takes a
// few seconds: it needs no refresh of the queue page.
package browsertest
