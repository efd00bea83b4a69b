package queuepage

import (
	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/edge/i18n"
)

// Vars are the queue page's template variables, named as in the
// reference so that a Cloudflare template or app works unchanged. The same
// struct is the JSON response's cfWaitingRoom object.
type Vars struct {
	InWaitingRoom        bool `json:"inWaitingRoom"`
	WaitTimeKnown        bool `json:"waitTimeKnown"`
	WaitTime             int  `json:"waitTime"`
	WaitTime25Percentile int  `json:"waitTime25Percentile"`
	WaitTime50Percentile int  `json:"waitTime50Percentile"`
	WaitTime75Percentile int  `json:"waitTime75Percentile"`
	// waitroom's own: the percentiles in seconds, as WaitTimeFormatted
	// says them. A random queue's percentile under a minute is told to
	// the page's check-in ("20 seconds"); every other is the minutes × 60.
	WaitTime25PercentileSeconds int    `json:"waitTime25PercentileSeconds"`
	WaitTime50PercentileSeconds int    `json:"waitTime50PercentileSeconds"`
	WaitTime75PercentileSeconds int    `json:"waitTime75PercentileSeconds"`
	WaitTimeFormatted           string `json:"waitTimeFormatted"`
	QueueIsFull                 bool   `json:"queueIsFull"`
	QueueAll                    bool   `json:"queueAll"`
	LastUpdated                 string `json:"lastUpdated"`
	RefreshIntervalSeconds      int    `json:"refreshIntervalSeconds"`
	QueueingMethod              string `json:"queueingMethod"`
	IsFIFOQueue                 bool   `json:"isFIFOQueue"`
	IsRandomQueue               bool   `json:"isRandomQueue"`
	// Position is the number of visitors ahead in line (FIFO only), and
	// PositionKnown whether there is one to show: never under random
	// queueing, nor before an event's start. PositionFormatted says it in
	// the page's language, in the form that fits the number ("You are
	// next." for 0). waitroom's own, next to the reference's fields.
	Position          int64  `json:"position"`
	PositionKnown     bool   `json:"positionKnown"`
	PositionFormatted string `json:"positionFormatted,omitempty"`

	// The event variables (reference event model).
	IsEventActive                bool   `json:"isEventActive"`
	IsEventPrequeueing           bool   `json:"isEventPrequeueing"`
	TimeUntilEventStart          int    `json:"timeUntilEventStart"` // minutes
	TimeUntilEventStartFormatted string `json:"timeUntilEventStartFormatted"`
	TimeUntilEventEnd            int    `json:"timeUntilEventEnd"` // minutes
	TimeUntilEventEndFormatted   string `json:"timeUntilEventEndFormatted"`
	ShuffleAtEventStart          bool   `json:"shuffleAtEventStart"`
	Turnstile                    string `json:"-"`

	// waitroom's own: the cookie check (the node's cookieCheckParam).
	// CookiesRequired is true on the answer to a client that did not keep
	// its cookie: no place in line, no automatic refresh.
	CookiesRequired bool `json:"cookiesRequired"`
	// The rest of the reference's variables, and waitroom's own page
	// variables (the node fills them in, and WriteIn).
	WaitTimeHours       int    `json:"waitTimeHours"`
	WaitTimeHourMinutes int    `json:"waitTimeHourMinutes"`
	IsPassthroughQueue  bool   `json:"isPassthroughQueue"`
	IsRejectQueue       bool   `json:"isRejectQueue"`
	Message             string `json:"message"`
	IsClosed            bool   `json:"isClosed"`
	// Lang is the page's language (a tag of package i18n): the place in
	// line and the formatted waits are written in it and the built-in page is shown in it.
	Lang string `json:"-"`

	// RefreshURL is the address the page should load next, when it is not
	// the page's own: the marked address on a new visitor's first page,
	// the clean one after a marked request, and on the cookies-required
	// answer the clean address to try again at. In the page it is
	// RefreshURLSlot (see WriteFilled).
	RefreshURL string `json:"-"`

	// waitroom's own: priority codes (the node's priority.go). PriorityCodes is
	// true in a room with priority groups, whose page may offer a field
	// named PriorityCodeParam; PriorityCodeMessage says what became of a
	// code the request carried that did not work.
	PriorityCodes       bool   `json:"priorityCodes"`
	PriorityCodeParam   string `json:"-"`
	PriorityCodeMessage string `json:"priorityCodeMessage,omitempty"`
}

// Context is v as the template sees it: each field under its name in the
// reference.
func (v *Vars) Context() map[string]any {
	return map[string]any{
		"inWaitingRoom":                v.InWaitingRoom,
		"waitTimeKnown":                v.WaitTimeKnown,
		"waitTime":                     v.WaitTime,
		"waitTime25Percentile":         v.WaitTime25Percentile,
		"waitTime50Percentile":         v.WaitTime50Percentile,
		"waitTime75Percentile":         v.WaitTime75Percentile,
		"waitTime25PercentileSeconds":  v.WaitTime25PercentileSeconds,
		"waitTime50PercentileSeconds":  v.WaitTime50PercentileSeconds,
		"waitTime75PercentileSeconds":  v.WaitTime75PercentileSeconds,
		"waitTimeFormatted":            v.WaitTimeFormatted,
		"queueIsFull":                  v.QueueIsFull,
		"queueAll":                     v.QueueAll,
		"lastUpdated":                  v.LastUpdated,
		"refreshIntervalSeconds":       v.RefreshIntervalSeconds,
		"queueingMethod":               v.QueueingMethod,
		"isFIFOQueue":                  v.IsFIFOQueue,
		"isRandomQueue":                v.IsRandomQueue,
		"position":                     v.Position,
		"positionKnown":                v.PositionKnown,
		"positionFormatted":            v.PositionFormatted,
		"isEventActive":                v.IsEventActive,
		"isEventPrequeueing":           v.IsEventPrequeueing,
		"timeUntilEventStart":          v.TimeUntilEventStart,
		"timeUntilEventStartFormatted": v.TimeUntilEventStartFormatted,
		"timeUntilEventEnd":            v.TimeUntilEventEnd,
		"timeUntilEventEndFormatted":   v.TimeUntilEventEndFormatted,
		"shuffleAtEventStart":          v.ShuffleAtEventStart,
		"turnstile":                    v.Turnstile,
		CookiesRequiredVar:             v.CookiesRequired,
		"refreshURL":                   v.RefreshURL,
		"priorityCodes":                v.PriorityCodes,
		"priorityCodeParam":            v.PriorityCodeParam,
		"priorityCodeMessage":          v.PriorityCodeMessage,
		"waitTimeHours":                v.WaitTimeHours,
		"waitTimeHourMinutes":          v.WaitTimeHourMinutes,
		"isPassthroughQueue":           v.IsPassthroughQueue,
		"isRejectQueue":                v.IsRejectQueue,
		"message":                      v.Message,
		ClosedVar:                      v.IsClosed,
	}
}

// CookiesRequiredVar is the page variable that is true on the
// cookies-required answer.
const CookiesRequiredVar = "cookiesRequired"

// HandlesCookiesRequired reports whether a page template shows the
// cookies-required answer itself, that is, uses cookiesRequired anywhere. A
// template that does not (one written for Cloudflare, or before the check
// existed) would show that answer as an ordinary queue page, and its own
// meta refresh would loop; the built-in page is shown instead.
func HandlesCookiesRequired(t *mustache.Template) bool { return UsesVar(t, CookiesRequiredVar) }

// ClosedVar is the variable that tells a page the room is closed. A
// custom page that does not use it (every page written for Cloudflare)
// would tell the visitors of a closed room to keep waiting, so they get
// the built-in closed page instead, as with cookiesRequired.
const ClosedVar = "isClosed"

// UsesVar reports whether template t refers to the variable name anywhere,
// sections included.
func UsesVar(t *mustache.Template, name string) bool {
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

// WriteIn writes v's place in line, and its formatted waits out again, in
// language l, whose tag becomes the page's language.
func (v *Vars) WriteIn(l *i18n.Lang) {
	v.Lang = l.Tag
	if v.PositionKnown {
		v.PositionFormatted = l.Position(v.Position)
	}
	if l == i18n.English() {
		return // the policy writes the waits in English already
	}
	switch {
	case !v.WaitTimeKnown:
		v.WaitTimeFormatted = l.Unknown()
	case v.IsRandomQueue:
		v.WaitTimeFormatted = l.Span(v.WaitTime25PercentileSeconds, v.WaitTime75PercentileSeconds)
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
