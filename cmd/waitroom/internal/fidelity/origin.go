package fidelity

import (
	"github.com/waitroom/waitroom/edge/edgetest"
)

// VisitorHeader names the visitor on every request of the crowd; the room
// passes it through, so the origin knows whom it serves without reading the
// room's sealed cookie.
const VisitorHeader = "X-Fidelity-Visitor"

// startOrigin starts the site behind the ring: the test origin, logging
// every request's visitor and time, what the truth is judged from.
func startOrigin(opts ...edgetest.Option) (*edgetest.Origin, error) {
	return edgetest.StartOrigin(append(opts, edgetest.VisitorHeader(VisitorHeader))...)
}

// hitsOf is what the origin saw so far: whose requests, and when.
func hitsOf(o *edgetest.Origin) []Hit {
	log := o.Log()
	out := make([]Hit, len(log))
	for i, h := range log {
		out[i] = Hit{Visitor: h.Visitor, At: h.At}
	}
	return out
}
