package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/edge/config"
)

// RedactedSecret is what the admin API shows in place of a room's secret
// (turnstile_secret). Sent back in a room, it keeps the secret the room has,
// so a room read with GET can be edited and applied as it is.
const RedactedSecret = "(set)"

// StopRequest is the body of POST /rooms/{name}/stop: the page everyone
// is held behind, the built-in paused page when empty.
type StopRequest struct {
	PageHTML string `json:"page_html"`
}

// MessageRequest is the body of POST /rooms/{name}/message: the message a
// room's page shows to everyone waiting ("" clears it).
type MessageRequest struct {
	Message string `json:"message"`
}

// Deleted is the answer to a deletion: the name of what was deleted.
type Deleted struct {
	Deleted string `json:"deleted"`
}

// EventDetails is what GET /rooms/{name}/events/{id}/details answers: the
// event, whether it governs the room now and in which phase, and the
// settings in force while it runs. Its fields are in the order of their
// names, as the document has always been written.
type EventDetails struct {
	Effective EventSettings `json:"effective"`
	Event     *config.Event `json:"event"`
	PhaseNow  string        `json:"phase_now"`
}

// EventSettings are a room's settings while an event runs, and the
// event's times.
type EventSettings struct {
	CustomPageHTML        string    `json:"custom_page_html"`
	DisableSessionRenewal bool      `json:"disable_session_renewal"`
	EventEndTime          time.Time `json:"event_end_time"`
	EventStartTime        time.Time `json:"event_start_time"`
	NewUsersPerMinute     int       `json:"new_users_per_minute"`
	PrequeueStartTime     time.Time `json:"prequeue_start_time"`
	QueueingMethod        string    `json:"queueing_method"`
	SessionDuration       int       `json:"session_duration"`
	ShuffleAtEventStart   bool      `json:"shuffle_at_event_start"`
	Suspended             bool      `json:"suspended"`
	TotalActiveUsers      int       `json:"total_active_users"`
}

// ListedRoom is one room of GET /rooms: its settings in force and where
// they came from.
type ListedRoom struct {
	config.Room
	// Source is where the settings in force came from: "file" (the node's
	// config file), "api" (its admin API, since it started), "restored"
	// (its data directory: a change made at run time before a restart) or
	// "ring" (a peer: another node's admin API or config file). When the
	// file and a change made at run time both describe a room, whichever
	// was written last is in force, the file's change dated by the file's
	// modification time.
	Source string `json:"source,omitempty"`
}

// Rooms lists the rooms a node has in force.
func (c *Client) Rooms(ctx context.Context) ([]ListedRoom, error) {
	var out []ListedRoom
	return out, c.do(ctx, http.MethodGet, "/rooms", nil, &out)
}

// Room reads one room.
func (c *Client) Room(ctx context.Context, name string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodGet, "/rooms/"+url.PathEscape(name), nil, &out)
}

// RoomStatus reads one room's live figures as the node counts them: the
// whole ring's active, queued and new users this minute, and its limits.
func (c *Client) RoomStatus(ctx context.Context, name string) (*RoomStatus, error) {
	var out RoomStatus
	return &out, c.do(ctx, http.MethodGet, "/rooms/"+url.PathEscape(name)+"/status", nil, &out)
}

// Apply creates or replaces a room.
func (c *Client) Apply(ctx context.Context, rc config.Room) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPut, "/rooms/"+url.PathEscape(rc.Name), rc, &out)
}

// Delete deletes a room.
func (c *Client) Delete(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/rooms/"+url.PathEscape(name), nil, nil)
}

// Stop queues everyone in a room, admitted visitors included, behind
// pageHTML (the built-in paused page when empty).
func (c *Client) Stop(ctx context.Context, name, pageHTML string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/stop", StopRequest{PageHTML: pageHTML}, &out)
}

// Resume ends an emergency stop.
func (c *Client) Resume(ctx context.Context, name string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/resume", nil, &out)
}

// ParseRooms reads rooms to apply from YAML or JSON: one room, a list of
// rooms, or a config file's "rooms:". Each is checked on its own here; the
// node checks them against its other rooms.
func ParseRooms(data []byte) ([]config.Room, error) {
	var probe any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parse rooms: %w", err)
	}
	var rooms []config.Room
	decode := func(v any) error {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	switch p := probe.(type) {
	case []any:
		if err := decode(&rooms); err != nil {
			return nil, fmt.Errorf("parse rooms: %w", err)
		}
	case map[string]any:
		if _, ok := p["rooms"]; ok {
			c, err := config.Parse(data)
			if err != nil {
				return nil, err
			}
			rooms = c.Rooms
		} else {
			var rc config.Room
			if err := decode(&rc); err != nil {
				return nil, fmt.Errorf("parse room: %w", err)
			}
			rooms = []config.Room{rc}
		}
	default:
		return nil, fmt.Errorf("parse rooms: want a room, a list of rooms or a config with rooms")
	}
	for i := range rooms {
		if err := rooms[i].Validate(); err != nil {
			return nil, err
		}
	}
	return rooms, nil
}

// SetMessage sets the message a room's page shows to everyone waiting;
// an empty message clears it.
func (c *Client) SetMessage(ctx context.Context, name, message string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/message", MessageRequest{Message: message}, &out)
}

// Close closes a room: nobody new gets in, everyone waiting keeps their
// place, admitted visitors finish their sessions.
func (c *Client) Close(ctx context.Context, name string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/close", nil, &out)
}

// Open reopens a closed room, also one closed by an event's end.
func (c *Client) Open(ctx context.Context, name string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/open", nil, &out)
}
