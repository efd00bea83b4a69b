// Package adminclient is the one client of a node's admin endpoint: what
// `waitroom state`, `waitroom rooms` and `waitroom healthcheck` send
// (reading the state document, listing, applying, stopping and resuming
// rooms, probing health and readiness), the rooms file they
// apply, and the table the state is printed as for a person.
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
)

// Client talks to a node's admin endpoint, for the CLI. It sends what
// the endpoint asks of a caller: JSON with its Content-Type on every change,
// and the bearer token when there is one.
type Client struct {
	// URL is the node's admin address, a URL (http://127.0.0.1:9090) or a
	// host and port; when empty, AddrEnv, then DefaultAddr.
	URL     string
	Token   string // bearer token; TokenEnv when empty
	Timeout time.Duration
}

// The environment variables a client reads when its fields are empty, as
// consul's CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN: set them once in an
// operator's shell and every command speaks to the same node.
const (
	AddrEnv  = "WAITROOM_ADDR"
	TokenEnv = "WAITROOM_ADMIN_TOKEN"
)

// DefaultAddr is the admin address of a node started with the defaults.
const DefaultAddr = "http://127.0.0.1:9090"

// Addr is the admin endpoint's base URL the client speaks to: URL,
// AddrEnv or DefaultAddr, with http:// added to a bare host and port.
func (c *Client) Addr() string {
	base := c.URL
	if base == "" {
		base = os.Getenv(AddrEnv)
	}
	if base == "" {
		base = DefaultAddr
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return strings.TrimRight(base, "/")
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	raw, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// send makes one request and returns the answer's body, or an error with the
// endpoint's message when it refused.
func (c *Client) send(ctx context.Context, method, path string, body any) ([]byte, error) {
	base := c.Addr()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("admin address %q: %w", base, err)
	}
	if method != http.MethodGet && method != http.MethodHead {
		// The endpoint takes changes only as JSON, bodiless ones too:
		// that is what keeps web pages' forms out.
		req.Header.Set("Content-Type", "application/json")
	}
	tok := c.Token
	if tok == "" {
		tok = os.Getenv(TokenEnv)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the address is said once, below
		}
		return nil, fmt.Errorf("%s %s%s: %w", method, base, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s %s: %s", method, path, e.Error)
		}
		return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return raw, nil
}

// Probe asks the node's /healthz, or /readyz when ready is set, as a
// container's health check or a probe does: nil when it answers 200, else
// an error saying what it answered.
func (c *Client) Probe(ctx context.Context, ready bool) error {
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	_, err := c.send(ctx, http.MethodGet, path, nil)
	return err
}

// State reads the node's state document; it returns the decoded document
// and the raw JSON.
func (c *Client) State(ctx context.Context) (*edge.StateDoc, []byte, error) {
	raw, err := c.send(ctx, http.MethodGet, "/state", nil)
	if err != nil {
		return nil, nil, err // names the address
	}
	var doc edge.StateDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("decode state from %s: %w", c.Addr(), err)
	}
	return &doc, raw, nil
}

// Rooms lists the rooms a node has in force.
func (c *Client) Rooms(ctx context.Context) ([]config.Room, error) {
	var out []config.Room
	return out, c.do(ctx, http.MethodGet, "/rooms", nil, &out)
}

// Room reads one room.
func (c *Client) Room(ctx context.Context, name string) (*config.Room, error) {
	var out config.Room
	return &out, c.do(ctx, http.MethodGet, "/rooms/"+url.PathEscape(name), nil, &out)
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
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/stop", map[string]string{"page_html": pageHTML}, &out)
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
	return &out, c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(name)+"/message", map[string]string{"message": message}, &out)
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
