package crowd

import (
	"strings"
	"testing"
	"time"
)

func TestParseRefresh(t *testing.T) {
	cases := []struct {
		name, in string
		want     Refresh
		ok       bool
	}{
		{"a bare interval reloads the page", "20", Refresh{After: 20 * time.Second}, true},
		{"an interval with a url goes there", "20; url=/x?__waitroom_cc=17", Refresh{20 * time.Second, "/x?__waitroom_cc=17"}, true},
		{"the url keyword is read in any case", "5;URL=/y", Refresh{5 * time.Second, "/y"}, true},
		{"a comma separates as a semicolon does", "5, url=/y", Refresh{5 * time.Second, "/y"}, true},
		{"spaces around the equals sign are skipped", "5 ; url = /y", Refresh{5 * time.Second, "/y"}, true},
		{"a url without the keyword is still the url", "5; /y", Refresh{5 * time.Second, "/y"}, true},
		{"a space alone separates too", "5 /y", Refresh{5 * time.Second, "/y"}, true},
		{"single quotes are taken off", "5; url='/y z'", Refresh{5 * time.Second, "/y z"}, true},
		{"double quotes are taken off", `5; url="/y"`, Refresh{5 * time.Second, "/y"}, true},
		{"text after a closing quote is dropped", `5; url="/y" tail`, Refresh{5 * time.Second, "/y"}, true},
		{"an unclosed quote runs to the end", `5; url="/y`, Refresh{5 * time.Second, "/y"}, true},
		{"a fraction is ignored as browsers do", "2.7", Refresh{After: 2 * time.Second}, true},
		{"a leading dot means zero", ".5; url=/", Refresh{0, "/"}, true},
		{"zero is an immediate refresh", "0", Refresh{}, true},
		{"leading whitespace is skipped", "  \t7", Refresh{After: 7 * time.Second}, true},
		{"a separator with nothing after it names no url", "7;  ", Refresh{After: 7 * time.Second}, true},
		{"an empty value is not a refresh", "", Refresh{}, false},
		{"a negative interval is not a refresh", "-1", Refresh{}, false},
		{"a word is not a refresh", "soon", Refresh{}, false},
		{"a number glued to text is not a refresh", "5x; url=/", Refresh{}, false},
		{"an interval too long for a duration is refused", strings.Repeat("9", 30), Refresh{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseRefresh(c.in)
			if ok != c.ok || got != c.want {
				t.Fatalf("ParseRefresh(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestRefreshStringReadsBack(t *testing.T) {
	for _, r := range []Refresh{{}, {After: 20 * time.Second}, {17 * time.Second, "/a?b=c;d"}, {time.Second, "url=x"}} {
		t.Run(r.String(), func(t *testing.T) {
			got, ok := ParseRefresh(r.String())
			if !ok || got != r {
				t.Fatalf("ParseRefresh(%q) = %+v, %v; want %+v", r.String(), got, ok, r)
			}
		})
	}
}

// FuzzParseRefresh: any header value parses without a panic into a wait
// that is not negative, and a value the package formats reads back as it was.
func FuzzParseRefresh(f *testing.F) {
	for _, s := range []string{"20", "20; url=/x", "5, URL='/y'", "2.7", ".", "5x", "", strings.Repeat("9", 25)} {
		f.Add(s, uint32(20), "/x")
	}
	f.Fuzz(func(t *testing.T, in string, secs uint32, u string) {
		if r, ok := ParseRefresh(in); ok && r.After < 0 {
			t.Fatalf("ParseRefresh(%q): negative wait %v", in, r.After)
		}
		if u != "" && (isSpace(u[0]) || u[0] == '\'' || u[0] == '"' || strings.TrimRight(u, " \t\n\f\r") != u) {
			return // such an address cannot be written unquoted
		}
		want := Refresh{After: time.Duration(secs) * time.Second, URL: u}
		got, ok := ParseRefresh(want.String())
		if !ok || got != want {
			t.Fatalf("ParseRefresh(%q) = %+v, %v; want %+v", want.String(), got, ok, want)
		}
	})
}

func TestParseWait(t *testing.T) {
	cases := []struct {
		name, in string
		want     Wait
		ok       bool
	}{
		{"a FIFO answer gives its estimate and place in line",
			`{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":7,"waitTime25Percentile":7,"waitTime50Percentile":7,"waitTime75Percentile":7,"isRandomQueue":false,"position":240,"positionKnown":true,"queueAll":false}}`,
			Wait{WaitTimeKnown: true, WaitTime: 7, WaitTime25: 7, WaitTime50: 7, WaitTime75: 7, PositionKnown: true, Position: 240}, true},
		{"a random queue's answer gives its range and no place",
			`{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":6,"waitTime25Percentile":3,"waitTime50Percentile":6,"waitTime75Percentile":11,"isRandomQueue":true,"position":0,"positionKnown":false}}`,
			Wait{WaitTimeKnown: true, WaitTime: 6, WaitTime25: 3, WaitTime50: 6, WaitTime75: 11, IsRandomQueue: true}, true},
		{"a random queue's percentiles under a minute come in seconds beside the minutes",
			`{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":1,"waitTime25Percentile":1,"waitTime50Percentile":1,"waitTime75Percentile":2,"waitTime25PercentileSeconds":25,"waitTime50PercentileSeconds":50,"waitTime75PercentileSeconds":120,"isRandomQueue":true}}`,
			Wait{WaitTimeKnown: true, WaitTime: 1, WaitTime25: 1, WaitTime50: 1, WaitTime75: 2, WaitSeconds25: 25, WaitSeconds50: 50, WaitSeconds75: 120, IsRandomQueue: true}, true},
		{"a position not known is no position, whatever the number",
			`{"cfWaitingRoom":{"inWaitingRoom":true,"position":12,"positionKnown":false}}`, Wait{}, true},
		{"an answer outside the waiting room is not a wait", `{"cfWaitingRoom":{"inWaitingRoom":false}}`, Wait{}, false},
		{"another document is not a wait", `{"ok":true}`, Wait{}, false},
		{"a page is not a wait", `<!doctype html><title>Waiting</title>`, Wait{}, false},
		{"a field of the wrong type is not a wait", `{"cfWaitingRoom":{"inWaitingRoom":true,"position":"many"}}`, Wait{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseWait([]byte(c.in))
			if got != c.want || ok != c.ok {
				t.Fatalf("ParseWait = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestPercentilesAreTheSecondsTheAnswerGave(t *testing.T) {
	tests := []struct {
		name string
		wait Wait
		want [3]time.Duration
	}{
		{"an answer with seconds is read in them", Wait{WaitTime25: 1, WaitTime50: 1, WaitTime75: 2, WaitSeconds25: 25, WaitSeconds50: 50, WaitSeconds75: 120},
			[3]time.Duration{25 * time.Second, 50 * time.Second, 2 * time.Minute}},
		{"an answer without them is read in its minutes", Wait{WaitTime25: 3, WaitTime50: 6, WaitTime75: 11},
			[3]time.Duration{3 * time.Minute, 6 * time.Minute, 11 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.wait.Percentiles(); got != tt.want {
				t.Errorf("Percentiles() = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzParseWait: any body parses without a panic, and a wait shown with no
// place in line never carries one.
func FuzzParseWait(f *testing.F) {
	f.Add([]byte(`{"cfWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":7,"position":240,"positionKnown":true}}`))
	f.Add([]byte(`{"cfWaitingRoom":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if w, ok := ParseWait(in); ok && !w.PositionKnown && w.Position != 0 {
			t.Fatalf("ParseWait(%q) = %+v: a position without positionKnown", in, w)
		}
	})
}
