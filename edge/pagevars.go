package edge

import (
	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/policy"
)

// fillPage sets the page variables that follow from the others and from
// the room's page settings: the wait in hours and minutes, the queueing
// method's remaining flags, the operator's message, the closed state, and
// the language, in which it writes the formatted waits out again.
func (v *pageVars) fillPage(rq *request, vw *view) {
	v.WaitTimeHours, v.WaitTimeHourMinutes = v.WaitTime/60, v.WaitTime%60
	v.IsPassthroughQueue = v.QueueingMethod == string(policy.Passthrough)
	v.IsRejectQueue = v.QueueingMethod == string(policy.MethodReject)
	v.Message = vw.message
	v.IsClosed = vw.closed
	l := visitorLanguage(rq, vw)
	v.Lang = l.Tag
	if l == i18n.English() {
		return // the policy writes the waits in English already
	}
	switch {
	case !v.WaitTimeKnown:
		v.WaitTimeFormatted = l.Unknown()
	case v.IsRandomQueue:
		v.WaitTimeFormatted = l.Range(v.WaitTime25Percentile, v.WaitTime75Percentile)
	default:
		v.WaitTimeFormatted = l.Wait(v.WaitTime)
	}
	if v.TimeUntilEventStartFormatted != "" {
		v.TimeUntilEventStartFormatted = l.Wait(v.TimeUntilEventStart)
	}
	if v.TimeUntilEventEndFormatted != "" {
		v.TimeUntilEventEndFormatted = l.Wait(v.TimeUntilEventEnd)
	}
}

// visitorLanguage is the language of the pages a room shows this visitor.
func visitorLanguage(rq *request, vw *view) *i18n.Lang {
	return pageLanguage(vw.cfg.DefaultTemplateLanguage, rq.r.Header.Get("Accept-Language"))
}

// pageLanguage is the language of a visitor's page: the room's
// default_template_language, or with "auto" the best match for the
// browser's Accept-Language, English when it asks for none of them.
func pageLanguage(setting, acceptLanguage string) *i18n.Lang {
	if setting == config.AutoLanguage {
		return i18n.Match(acceptLanguage, i18n.English())
	}
	if l := i18n.Get(setting); l != nil {
		return l
	}
	return i18n.English()
}

// defaultPageIn is the built-in page in the language tag names (English
// when it names none).
func defaultPageIn(tag string) *mustache.Template {
	if t := defaultPages[tag]; t != nil {
		return t
	}
	return defaultPage
}

// closedVar is the variable that tells a page the room is closed. A
// custom page that does not use it (every page written for Cloudflare)
// would tell the visitors of a closed room to keep waiting, so they get
// the built-in closed page instead, as with cookiesRequired.
const closedVar = "isClosed"

// usesVar reports whether template t refers to the variable name anywhere,
// sections included.
func usesVar(t *mustache.Template, name string) bool {
	stack := t.Tags()
	for len(stack) > 0 {
		tag := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if tag.Name() == name {
			return true
		}
		switch tag.Type() {
		case mustache.Section, mustache.InvertedSection:
			stack = append(stack, tag.Tags()...)
		}
	}
	return false
}
