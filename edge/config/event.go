package config

// A room's scheduled events: their settings, which event governs a given
// time, and the room's settings in force then.

import (
	"fmt"
	"slices"
	"time"
)

// Event is a scheduled event of a room, after Cloudflare's waiting room
// events: for its span the room runs with the event's settings, which
// override the room's where given (a nil pointer or an empty string
// inherits). Before event_start_time, from prequeue_start_time on, visitors
// wait on a countdown page; with shuffle_at_event_start they are ordered at
// random when the event starts, so arriving first during the pre-queue gains
// nothing.
type Event struct {
	// ID names the event in the admin API; default: its index ("0", "1"...).
	ID          string `yaml:"id" json:"id"`
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`

	EventStartTime      time.Time  `yaml:"event_start_time" json:"event_start_time"`
	EventEndTime        time.Time  `yaml:"event_end_time" json:"event_end_time"`
	PrequeueStartTime   *time.Time `yaml:"prequeue_start_time" json:"prequeue_start_time,omitempty"`
	ShuffleAtEventStart bool       `yaml:"shuffle_at_event_start" json:"shuffle_at_event_start"`
	Suspended           bool       `yaml:"suspended" json:"suspended"`

	TotalActiveUsers      *int   `yaml:"total_active_users" json:"total_active_users,omitempty"`
	NewUsersPerMinute     *int   `yaml:"new_users_per_minute" json:"new_users_per_minute,omitempty"`
	SessionDuration       *int   `yaml:"session_duration" json:"session_duration,omitempty"`
	DisableSessionRenewal *bool  `yaml:"disable_session_renewal" json:"disable_session_renewal,omitempty"`
	QueueingMethod        string `yaml:"queueing_method" json:"queueing_method,omitempty"`
	CustomPageHTML        string `yaml:"custom_page_html" json:"custom_page_html,omitempty"`

	// Message is waitroom's own: the operator's message while the event
	// pre-queues or runs, in place of the room's.
	Message string `yaml:"message" json:"message,omitempty"`
	// CloseAtEnd is waitroom's own: from the event's end the room is
	// closed (sold out) until the operator reopens it.
	CloseAtEnd bool `yaml:"close_at_end" json:"close_at_end,omitempty"`

	eventCloudflareOnly `yaml:",inline"`
}

// eventCloudflareOnly holds the read-only fields of an event exported from
// Cloudflare's API, accepted so that the export loads and then ignored.
type eventCloudflareOnly struct {
	CreatedOn  any `yaml:"created_on" json:"created_on,omitempty"`
	ModifiedOn any `yaml:"modified_on" json:"modified_on,omitempty"`
	// The bot challenge's per-event override is not carried out: the
	// room's challenge holds during events.
	TurnstileAction any `yaml:"turnstile_action" json:"turnstile_action,omitempty"`
	TurnstileMode   any `yaml:"turnstile_mode" json:"turnstile_mode,omitempty"`
}

// Phase is where a room stands in its schedule at a given time.
type Phase uint8

const (
	// NoEvent: the room runs with its own settings.
	NoEvent Phase = iota
	// Prequeue: an event is about to start; everyone waits on a countdown.
	Prequeue
	// EventActive: an event runs; its settings override the room's.
	EventActive
)

// String names the phase as the room API and the state document show it.
func (p Phase) String() string {
	switch p {
	case Prequeue:
		return "prequeueing"
	case EventActive:
		return "event_active"
	}
	return "no_event"
}

// PrequeueStart is when the event's pre-queue opens (its start when it has
// none).
func (e *Event) PrequeueStart() time.Time {
	if e.PrequeueStartTime != nil {
		return *e.PrequeueStartTime
	}
	return e.EventStartTime
}

// At returns the event that governs time t, if any, and the phase. Events
// do not overlap (Validate refuses it).
func (r *Room) At(t time.Time) (*Event, Phase) {
	for i := range r.Events {
		e := &r.Events[i]
		switch {
		case !t.Before(e.EventStartTime) && t.Before(e.EventEndTime):
			return e, EventActive
		case !t.Before(e.PrequeueStart()) && t.Before(e.EventStartTime):
			return e, Prequeue
		}
	}
	return nil, NoEvent
}

// Effective returns the room's settings in force at t: the room's own, with
// an active event's overrides applied. The pre-queue changes no setting; the
// request path queues everyone during it.
func (r *Room) Effective(t time.Time) Room {
	e, ph := r.At(t)
	eff := *r
	if ph != EventActive {
		return eff
	}
	if e.TotalActiveUsers != nil {
		eff.TotalActiveUsers = *e.TotalActiveUsers
	}
	if e.NewUsersPerMinute != nil {
		eff.NewUsersPerMinute = *e.NewUsersPerMinute
	}
	if e.SessionDuration != nil {
		eff.SessionDuration = *e.SessionDuration
	}
	if e.DisableSessionRenewal != nil {
		eff.DisableSessionRenewal = *e.DisableSessionRenewal
	}
	if e.QueueingMethod != "" {
		eff.QueueingMethod = e.QueueingMethod
	}
	if e.CustomPageHTML != "" {
		eff.CustomPageHTML = e.CustomPageHTML
	}
	if e.Suspended {
		eff.Suspended = true
	}
	return eff
}

// IsPrequeued reports whether an arrival bucket belongs to the event's
// pre-queue.
func (e *Event) IsPrequeued(bucket int64) bool {
	return bucket >= e.PrequeueStart().Unix()/60 && bucket < e.EventStartTime.Unix()/60
}

// validateEvents checks a room's events; p names fields under events[i].
func (r *Room) validateEvents(p *problems) {
	ids := map[string]int{}
	for i := range r.Events {
		e := &r.Events[i]
		f := func(name string) string { return fmt.Sprintf("events[%d].%s", i, name) }
		id := e.ID
		if id == "" {
			id = fmt.Sprint(i) // as ApplyDefaults will name it
		}
		if j, dup := ids[id]; dup {
			p.add(f("id"), "%q repeats events[%d]'s id", id, j)
		}
		ids[id] = i
		if e.EventStartTime.IsZero() {
			p.add(f("event_start_time"), "is required (RFC 3339, e.g. 2026-12-01T10:00:00Z)")
		}
		if e.EventEndTime.IsZero() {
			p.add(f("event_end_time"), "is required (RFC 3339)")
		} else if !e.EventEndTime.After(e.EventStartTime) {
			p.add(f("event_end_time"), "%s must be after event_start_time (%s)", e.EventEndTime.Format(time.RFC3339), e.EventStartTime.Format(time.RFC3339))
		}
		if e.PrequeueStartTime != nil && e.PrequeueStartTime.After(e.EventStartTime) {
			p.add(f("prequeue_start_time"), "%s must not be after event_start_time (%s)", e.PrequeueStartTime.Format(time.RFC3339), e.EventStartTime.Format(time.RFC3339))
		}
		if e.ShuffleAtEventStart && e.PrequeueStartTime == nil {
			p.add(f("shuffle_at_event_start"), "needs a prequeue_start_time: only pre-queued visitors are shuffled")
		}
		tau := r.TotalActiveUsers
		if e.TotalActiveUsers != nil {
			tau = *e.TotalActiveUsers
			if tau < 1 || tau > MaxTotalActiveUsers {
				p.add(f("total_active_users"), "%d must be from 1 to %d", tau, MaxTotalActiveUsers)
			}
		}
		if e.NewUsersPerMinute != nil {
			if n := *e.NewUsersPerMinute; n < 1 || n > tau {
				p.add(f("new_users_per_minute"), "%d must be from 1 to total_active_users (%d)", n, tau)
			}
		}
		if e.SessionDuration != nil {
			if d := *e.SessionDuration; d < 1 || d > 30 {
				p.add(f("session_duration"), "%d must be from 1 to 30 minutes", d)
			}
		}
		if e.QueueingMethod != "" && !slices.Contains(queueingMethods, e.QueueingMethod) {
			p.add(f("queueing_method"), "%q must be one of fifo, random, passthrough, reject (or empty to inherit)", e.QueueingMethod)
		}
		if e.CustomPageHTML != "" {
			if err := CheckPage(e.CustomPageHTML); err != nil {
				p.add(f("custom_page_html"), "%v", err)
			}
		}
	}
	// Events must not overlap, pre-queues included: one event governs at a
	// time.
	idx := make([]int, len(r.Events))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return r.Events[a].PrequeueStart().Compare(r.Events[b].PrequeueStart()) })
	for k := 1; k < len(idx); k++ {
		a, b := &r.Events[idx[k-1]], &r.Events[idx[k]]
		if b.PrequeueStart().Before(a.EventEndTime) {
			p.add(fmt.Sprintf("events[%d]", idx[k]), "overlaps events[%d] (%s ends %s): events and their pre-queues must not overlap", idx[k-1], a.ID, a.EventEndTime.Format(time.RFC3339))
		}
	}
}
