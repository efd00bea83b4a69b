package config

// The visitor's page beyond the limits: the built-in page's language, the
// operator's message and the closed (sold-out) state.

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TemplateLanguages are the languages of the built-in page, those of
// Cloudflare's default_template_language, in its order.
var TemplateLanguages = []string{
	"en-US", "es-ES", "de-DE", "fr-FR", "it-IT", "ja-JP", "ko-KR", "pt-BR", "zh-CN",
	"zh-TW", "nl-NL", "pl-PL", "id-ID", "tr-TR", "ar-EG", "ru-RU", "fa-IR",
}

// AutoLanguage as default_template_language is waitroom's own: each visitor
// gets the built-in page in the language their browser asks for
// (Accept-Language), and English when none of them is offered.
const AutoLanguage = "auto"

// MaxMessage is the longest operator message, in characters: a line or two
// on the page, not an article.
const MaxMessage = 500

// Rules checked by Validate:
//
//   - default_template_language: empty (en-US), one of TemplateLanguages, or
//     "auto".
//   - message, events[i].message: at most MaxMessage characters of valid
//     UTF-8. It is shown as text (HTML-escaped), never as markup.
//   - closed, events[i].close_at_end: no rule. While the room is closed a
//     custom page that does not use isClosed gives way to the built-in
//     closed page.
func (r *Room) validatePage(p *problems) {
	if l := r.DefaultTemplateLanguage; l != "" && l != AutoLanguage && !slices.Contains(TemplateLanguages, l) {
		p.add("default_template_language", "%q must be one of %s or %s", l, strings.Join(TemplateLanguages, ", "), AutoLanguage)
	}
	checkMessage(p, "message", r.Message)
	for i := range r.Events {
		checkMessage(p, fmt.Sprintf("events[%d].message", i), r.Events[i].Message)
	}
}

func checkMessage(p *problems, field, m string) {
	switch {
	case !utf8.ValidString(m):
		p.add(field, "must be valid UTF-8 text")
	case utf8.RuneCountInString(m) > MaxMessage:
		p.add(field, "is %d characters long; at most %d are allowed", utf8.RuneCountInString(m), MaxMessage)
	}
}

// ClosedAt reports whether the room is closed at t: closed by the operator,
// or past the end of an event with close_at_end while no event pre-queues
// or runs.
func (r *Room) ClosedAt(t time.Time) bool {
	if r.Closed {
		return true
	}
	if _, ph := r.At(t); ph != NoEvent {
		return false
	}
	for i := range r.Events {
		if e := &r.Events[i]; e.CloseAtEnd && !t.Before(e.EventEndTime) {
			return true
		}
	}
	return false
}

// MessageAt is the operator's message in force at t: a pre-queueing or
// running event's own, else the room's.
func (r *Room) MessageAt(t time.Time) string {
	if e, ph := r.At(t); ph != NoEvent && e.Message != "" {
		return e.Message
	}
	return r.Message
}

// Reopen clears what closes the room: the operator's closed flag and the
// close_at_end of every event that has ended by t, so that reopening after
// a sold-out event is one step.
func (r *Room) Reopen(t time.Time) {
	r.Closed = false
	for i := range r.Events {
		if e := &r.Events[i]; e.CloseAtEnd && !t.Before(e.EventEndTime) {
			e.CloseAtEnd = false
		}
	}
}
