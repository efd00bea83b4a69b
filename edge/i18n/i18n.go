// Package i18n holds the built-in queue page's text in the languages of
// Cloudflare's default_template_language, the wait times written out in
// each, and the choice of a language from a browser's Accept-Language
// (golang.org/x/text/language's matcher, which knows that zh-Hant is
// Taiwan's Chinese and that pt-PT readers prefer pt-BR to English).
//
// The text is data (table.go); the edge fills its page template with it.
package i18n

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/language"
)

// Tags are the languages there are, in Cloudflare's order; the first is
// the fallback of last resort.
var Tags = []string{
	"en-US", "es-ES", "de-DE", "fr-FR", "it-IT", "ja-JP", "ko-KR", "pt-BR", "zh-CN",
	"zh-TW", "nl-NL", "pl-PL", "id-ID", "tr-TR", "ar-EG", "ru-RU", "fa-IR",
}

// Keys are the strings every language has.
var Keys = []string{
	"title_queue", "lede_busy", "order_fifo", "order_random", "keep_open",
	"title_full", "lede_full", "title_paused", "lede_paused",
	"title_prequeue", "lede_prequeue", "prequeue_shuffle", "label_starts",
	"label_wait", "calculating", "position", "position_next", "title_cookies", "lede_cookies",
	"allow_cookies", "try_again", "nocookies", "refresh_note", "last_updated",
	"title_closed", "lede_closed", "message_label", "less_minute", "unknown",
	"range", "second", "minute", "hour", "sentence_gap",
	"code_label", "code_button", "code_used", "code_revoked", "code_expired", "code_invalid",
	"invite_only", "invite_label", "code_too_many",
}

// Lang is one language of the page.
type Lang struct {
	Tag      string // as Cloudflare writes it: "pt-BR"
	RTL      bool   // written right to left
	strings  map[string]string
	second   plural
	minute   plural
	hour     plural
	position plural
	rule     func(n int) string
}

var langs = func() map[string]*Lang {
	m := make(map[string]*Lang, len(Tags))
	for _, t := range Tags {
		s := table[t]
		l := &Lang{Tag: t, RTL: t == "ar-EG" || t == "fa-IR", strings: s, rule: ruleFor(t)}
		l.second = parsePlural(s["second"])
		l.minute = parsePlural(s["minute"])
		l.hour = parsePlural(s["hour"])
		l.position = parsePlural(s["position"])
		m[t] = l
	}
	return m
}()

// Get returns the language tag names, or nil when there is none.
func Get(tag string) *Lang { return langs[tag] }

// English is the language of last resort.
func English() *Lang { return langs["en-US"] }

// Dir is the page's writing direction, for the dir attribute.
func (l *Lang) Dir() string {
	if l.RTL {
		return "rtl"
	}
	return "ltr"
}

// S is the text under key; "" when the language lacks it (the test that
// every language has every string keeps that from shipping).
func (l *Lang) S(key string) string { return l.strings[key] }

// Has reports whether the language has text under key.
func (l *Lang) Has(key string) bool {
	s, ok := l.strings[key]
	return ok && (s != "" || key == "sentence_gap")
}

// Wait writes out a wait of the given minutes as policy.FormatWait does in
// English: "less than a minute" below one, hours and minutes above.
func (l *Lang) Wait(minutes int) string {
	if minutes <= 0 {
		return l.S("less_minute")
	}
	h, m := minutes/60, minutes%60
	switch {
	case h == 0:
		return l.count(l.minute, m)
	case m == 0:
		return l.count(l.hour, h)
	}
	return l.count(l.hour, h) + " " + l.count(l.minute, m)
}

// Span writes out a random queue's range from lo to hi seconds, as
// policy.FormatSpan does in English: a wait under a minute in seconds ("20
// seconds"), any other in minutes as Wait has it; one wait when both read
// the same.
func (l *Lang) Span(lo, hi int) string {
	a, b := l.seconds(lo), l.seconds(hi)
	if a == b {
		return a
	}
	return strings.NewReplacer("{lo}", a, "{hi}", b).Replace(l.S("range"))
}

func (l *Lang) seconds(s int) string {
	if s > 0 && s < 60 {
		return l.count(l.second, s)
	}
	return l.Wait(s / 60)
}

// Position writes out a place in line: "You are next." with nobody ahead,
// and the sentence in the plural form that fits n otherwise ("1 person is
// ahead of you.", "About 3 people are ahead of you.").
func (l *Lang) Position(n int64) string {
	if n <= 0 {
		return l.S("position_next")
	}
	return l.count(l.position, int(min(n, 1<<31-1)))
}

// Unknown is the formatted wait when none is known.
func (l *Lang) Unknown() string { return l.S("unknown") }

func (l *Lang) count(p plural, n int) string {
	form, ok := p[l.rule(n)]
	if !ok {
		form = p["other"]
		if form == "" {
			form = p["many"]
		}
	}
	return strings.ReplaceAll(form, "{n}", strconv.Itoa(n))
}

// plural is a unit's forms by CLDR plural category.
type plural map[string]string

func parsePlural(s string) plural {
	p := plural{}
	for _, f := range strings.Split(s, "|") {
		if cat, text, ok := strings.Cut(f, ":"); ok {
			p[cat] = text
		}
	}
	return p
}

// ruleFor is the language's plural rule for whole numbers (CLDR's, for the
// categories the table uses).
func ruleFor(tag string) func(int) string {
	switch tag[:2] {
	case "ja", "ko", "zh", "id", "tr", "fa":
		return func(int) string { return "other" }
	case "fr", "pt":
		return func(n int) string {
			if n <= 1 {
				return "one"
			}
			return "other"
		}
	case "ru":
		return func(n int) string {
			switch m10, m100 := n%10, n%100; {
			case m10 == 1 && m100 != 11:
				return "one"
			case m10 >= 2 && m10 <= 4 && (m100 < 12 || m100 > 14):
				return "few"
			}
			return "many"
		}
	case "pl":
		return func(n int) string {
			switch m10, m100 := n%10, n%100; {
			case n == 1:
				return "one"
			case m10 >= 2 && m10 <= 4 && (m100 < 12 || m100 > 14):
				return "few"
			}
			return "many"
		}
	case "ar":
		return func(n int) string {
			switch m100 := n % 100; {
			case n == 1:
				return "one"
			case n == 2:
				return "two"
			case m100 >= 3 && m100 <= 10:
				return "few"
			case m100 >= 11:
				return "many"
			}
			return "other"
		}
	}
	return func(n int) string {
		if n == 1 {
			return "one"
		}
		return "other"
	}
}

var (
	matchTags = func() []language.Tag {
		t := make([]language.Tag, len(Tags))
		for i, s := range Tags {
			t[i] = language.MustParse(s)
		}
		return t
	}()
	matcher = language.NewMatcher(matchTags)

	// matched caches answers by header: browsers send a handful of
	// distinct Accept-Language values, and parsing one costs more than
	// the rest of a queued visitor's page.
	matchedMu sync.RWMutex
	matched   = map[string]*Lang{}
)

// Match picks the language for a browser's Accept-Language header: the
// best of Tags by the matcher, or fallback when the browser asks for none
// of them (or sends nothing).
func Match(acceptLanguage string, fallback *Lang) *Lang {
	if acceptLanguage == "" || len(acceptLanguage) > 512 {
		return fallback
	}
	matchedMu.RLock()
	l, ok := matched[acceptLanguage]
	matchedMu.RUnlock()
	if !ok {
		l = match(acceptLanguage)
		matchedMu.Lock()
		if len(matched) >= 1024 {
			matched = map[string]*Lang{}
		}
		matched[acceptLanguage] = l
		matchedMu.Unlock()
	}
	if l == nil {
		return fallback
	}
	return l
}

func match(acceptLanguage string) *Lang {
	want, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(want) == 0 {
		return nil
	}
	_, i, conf := matcher.Match(want...)
	if conf == language.No {
		return nil
	}
	return langs[Tags[i]]
}
