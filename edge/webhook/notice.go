package webhook

import "time"

// Notice is the JSON body of a webhook request: what a receiver decodes
// once the signature checks.
type Notice struct {
	ID   string    `json:"id"`
	Type string    `json:"type"`
	Time time.Time `json:"time"` // ring time the change was seen
	Room string    `json:"room,omitempty"`
	Node string    `json:"node,omitempty"` // the node concerned, for node notices
	// Data holds the figures of the change (status, limits, event).
	Data map[string]any `json:"data,omitempty"`
}
