package queuepage

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// FuzzQueueTemplate feeds arbitrary custom pages through the same check the
// config loader runs and, when a page passes it, renders it with the queue
// page's variables: rendering an accepted template must never panic, and a
// refused one must be refused with an error, not a crash.
func FuzzQueueTemplate(f *testing.F) {
	f.Add(defaultPageHTML, "5 minutes")
	f.Add("{{#waitTimeKnown}}{{waitTime}}{{/waitTimeKnown}}{{^waitTimeKnown}}?{{/waitTimeKnown}}", "1 minute")
	f.Add("{{{turnstile}}}{{&lastUpdated}}{{! comment }}{{=<% %>=}}<% waitTime %>", "x")
	f.Add("{{#a}}{{#b}}{{/a}}{{/b}}", "")
	f.Add("{{> partial}}", "")
	f.Add("{{", "{{")
	f.Fuzz(func(t *testing.T, page, formatted string) {
		if err := config.CheckPage(page); err != nil {
			return
		}
		tmpl, err := Parse(page)
		if err != nil {
			t.Fatalf("CheckPage accepted a page Parse refuses: %v", err)
		}
		v := Vars{
			InWaitingRoom: true, WaitTimeKnown: true, WaitTime: 5, WaitTimeFormatted: formatted,
			LastUpdated: time.Unix(0, 0).UTC().Format(time.RFC3339), RefreshIntervalSeconds: 20,
			QueueingMethod: "fifo", IsFIFOQueue: true, Turnstile: formatted, RefreshURL: formatted, CookiesRequired: formatted == "",
		}
		_, _ = tmpl.Render(v.Context())
	})
}
