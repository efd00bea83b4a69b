package queuepage

import (
	_ "embed"
	"html"
	"strings"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/i18n"
)

// defaultPageHTML is the queue page a room shows without custom_page_html,
// kept as HTML in default.html. It uses the same Mustache variables a
// custom page can, and refreshes by itself (the Refresh header does too; the meta tag covers clients that
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
//
//go:embed default.html
var defaultPageHTML string

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

// Default is the built-in page in English: what Parse gives a room
// without a custom page, and what the page's language replaces (see
// DefaultIn and Template).
var Default = defaultPages["en-US"]

// DefaultIn is the built-in page in the language tag names (English
// when it names none).
func DefaultIn(tag string) *mustache.Template {
	if t := defaultPages[tag]; t != nil {
		return t
	}
	return Default
}

// Language is the language of a visitor's page: the room's
// default_template_language, or with "auto" the best match for the
// browser's Accept-Language, English when it asks for none of them.
func Language(setting, acceptLanguage string) *i18n.Lang {
	if setting == config.AutoLanguage {
		return i18n.Match(acceptLanguage, i18n.English())
	}
	if l := i18n.Get(setting); l != nil {
		return l
	}
	return i18n.English()
}

// Parse parses a queue page template; empty means the built-in page.
// Partials are never read from disk.
func Parse(src string) (*mustache.Template, error) {
	if src == "" {
		return Default, nil
	}
	return mustache.ParseStringPartials(src, &mustache.StaticProvider{})
}
