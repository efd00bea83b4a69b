package edge

import (
	"github.com/waitroom/waitroom/edge/i18n"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/policy"
)

// fillPage sets the page variables that follow from the others and from
// the room's page settings: the wait in hours and minutes, the queueing
// method's remaining flags, the operator's message, the closed state, and
// the language, in which it writes the place in line and the formatted
// waits out again.
func fillPage(v *queuepage.Vars, rq *request, vw *view) {
	v.WaitTimeHours, v.WaitTimeHourMinutes = v.WaitTime/60, v.WaitTime%60
	v.IsPassthroughQueue = v.QueueingMethod == string(policy.Passthrough)
	v.IsRejectQueue = v.QueueingMethod == string(policy.MethodReject)
	v.Message = vw.message
	v.IsClosed = vw.closed
	v.WriteIn(visitorLanguage(rq, vw))
}

// visitorLanguage is the language of the pages a room shows this visitor.
func visitorLanguage(rq *request, vw *view) *i18n.Lang {
	return queuepage.Language(vw.cfg.DefaultTemplateLanguage, rq.r.Header.Get("Accept-Language"))
}
