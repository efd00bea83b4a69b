package api

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
		var e Error
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
func (c *Client) State(ctx context.Context) (*StateDoc, []byte, error) {
	raw, err := c.send(ctx, http.MethodGet, "/state", nil)
	if err != nil {
		return nil, nil, err // names the address
	}
	var doc StateDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("decode state from %s: %w", c.Addr(), err)
	}
	return &doc, raw, nil
}
