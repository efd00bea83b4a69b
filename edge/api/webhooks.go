package api

import (
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// WebhookStatus is one webhook's deliveries as this node made them, for the
// state document and GET /webhooks.
type WebhookStatus struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Delivered uint64 `json:"delivered"`
	Failed    uint64 `json:"failed_attempts"`
	GivenUp   uint64 `json:"given_up"`
	// Pending counts the notices this node holds for the webhook, sent by
	// it or waiting for another node to mark them delivered.
	Pending int `json:"pending"`
	// Oldest are the oldest pending notices (at most five): their id, who
	// is to send them and the attempts made here.
	Oldest    []string  `json:"oldest,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	LastErrAt time.Time `json:"last_error_at,omitzero"`
}

// WebhookRequest is the body of PUT /webhooks/{name}: a webhook registered
// for the whole ring, with the secret its notices are signed with.
type WebhookRequest struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Events []string `json:"events,omitempty"`
}

// Webhook is a webhook as GET /webhooks shows it, never with its secret:
// where it comes from (config, a node's config file; api, registered
// through the admin API) and this node's deliveries to it.
type Webhook struct {
	config.Webhook
	Source string         `json:"source"` // config or api
	Status *WebhookStatus `json:"status,omitempty"`
}
