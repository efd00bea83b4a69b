package edge_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPositionInLine(t *testing.T) {
	tests := []struct {
		name   string
		method string
		want   string // the position the last visitor is shown, "" for none
	}{
		{"a FIFO room shows the last of four queued visitors the three ahead of it", "fifo", "3"},
		{"a random room never shows a position", "random", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := fullRoom("app")
			rc.QueueingMethod = tt.method
			rc.JSONResponseEnabled = true
			f := newFixture(t, rc)
			newVisitor().Get(f.Server, "http://app.test/") // admitted under FIFO
			settle(t, f)
			// Three visitors come twenty seconds apart, one in each arrival
			// slot of the minute, and the last two seconds after the third.
			for i := range 3 {
				if i > 0 {
					f.Clock.Advance(18 * time.Second)
				}
				newVisitor().Queue(t, f.Server, f.Clock, "http://app.test/")
			}
			last := newVisitor()
			last.Queue(t, f.Server, f.Clock, "http://app.test/")
			settle(t, f)
			f.Clock.Advance(time.Minute)
			obj := queueJSON(t, last.Get(f.Server, "http://app.test/api", "Accept", "application/json"))
			known, pos := obj["positionKnown"], fmt.Sprint(obj["position"])
			switch {
			case tt.want == "" && (known != false || pos != "0"):
				t.Errorf("positionKnown %v, position %s; want false and 0", known, pos)
			case tt.want != "" && (known != true || pos != tt.want):
				t.Errorf("positionKnown %v, position %s; want true and %s", known, pos, tt.want)
			}
			page := body(t, last.Get(f.Server, "http://app.test/"))
			line := "About " + tt.want + " people are ahead of you."
			if tt.want != "" && !strings.Contains(page, line) {
				t.Errorf("the default page lacks %q", line)
			}
			if tt.want == "" && strings.Contains(page, "people ahead of you") {
				t.Error("the default page of a random room shows a position")
			}
		})
	}
}

func TestANewVisitorsFirstAnswerCountsEveryoneAhead(t *testing.T) {
	rc := fullRoom("app")
	rc.JSONResponseEnabled = true
	f := newFixture(t, rc)
	newVisitor().Get(f.Server, "http://app.test/") // admitted
	settle(t, f)
	// Three visitors queue in the minute's first arrival slot; a fourth
	// comes in the next one. The ring counts a visitor in the line only
	// once its cookie is back, and the three are back: the fourth's first
	// answer, before its own cookie is, has them ahead, as has the answer
	// after its proof.
	for range 3 {
		newVisitor().Queue(t, f.Server, f.Clock, "http://app.test/")
	}
	f.Clock.Advance(20 * time.Second)
	settle(t, f)
	last := newVisitor()
	first := last.Get(f.Server, "http://app.test/api", "Accept", "application/json")
	obj := queueJSON(t, first)
	if obj["positionKnown"] != true || fmt.Sprint(obj["position"]) != "3" {
		t.Errorf("first answer: positionKnown %v, position %v; want true and the 3 ahead", obj["positionKnown"], obj["position"])
	}
	if obj["waitTimeKnown"] != true {
		t.Errorf("first answer: waitTimeKnown %v; want the wait shown", obj["waitTimeKnown"])
	}
	proved := queueJSON(t, last.Prove(t, f.Server, f.Clock, first, "Accept", "application/json"))
	if proved["positionKnown"] != true || fmt.Sprint(proved["position"]) != "3" {
		t.Errorf("answer after the proof: positionKnown %v, position %v; want true and the 3 ahead", proved["positionKnown"], proved["position"])
	}
}

func TestThePlaceInLineIsSaidInWordsThatFitIt(t *testing.T) {
	tests := []struct {
		name, lang string
		ahead      int // visitors queued before the one asked
		want       string
	}{
		{"a visitor with nobody ahead is told it is next", "", 0, "You are next."},
		{"a visitor with one ahead is told of one person", "", 1, "1 person is ahead of you."},
		{"a Russian page uses the plural form for two", "ru-RU", 2, "Перед вами примерно 2 человека."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// lastAsks builds the line afresh and returns the answer to a
			// new visitor behind it, asked with hdr: an app's JSON and a
			// browser's page each behind the same line.
			lastAsks := func(url string, hdr ...string) *http.Response {
				rc := fullRoom("app")
				rc.JSONResponseEnabled = true
				if tt.lang != "" {
					rc.DefaultTemplateLanguage = tt.lang
				}
				f := newFixture(t, rc)
				newVisitor().Get(f.Server, "http://app.test/") // admitted
				settle(t, f)
				for range tt.ahead {
					newVisitor().Queue(t, f.Server, f.Clock, "http://app.test/")
				}
				settle(t, f)
				f.Clock.Advance(time.Second)
				return newVisitor().Get(f.Server, url, hdr...)
			}
			obj := queueJSON(t, lastAsks("http://app.test/api", "Accept", "application/json"))
			if obj["positionFormatted"] != tt.want {
				t.Errorf("positionFormatted %q, want %q", obj["positionFormatted"], tt.want)
			}
			if page := body(t, lastAsks("http://app.test/")); !strings.Contains(page, tt.want) {
				t.Errorf("the default page lacks %q", tt.want)
			}
		})
	}
}
