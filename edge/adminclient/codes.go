package adminclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// MintCodes mints count priority codes of group for room, each admitting
// uses visitors and expiring after expires, and returns them as the node
// writes them: CSV with a header line (code, id, group, uses, expires,
// link).
func (c *Client) MintCodes(ctx context.Context, room, group string, count, uses int, expires time.Duration) ([]byte, error) {
	return c.send(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes", map[string]any{
		"group": group, "count": count, "uses": uses, "expires": expires.String(),
	})
}

// CodeStatus is one priority code as the node reports it.
type CodeStatus struct {
	ID      string `json:"id"`
	Group   string `json:"group,omitempty"`
	Uses    int    `json:"uses,omitempty"`
	Used    int    `json:"used"`
	Expires string `json:"expires,omitempty"`
	Revoked bool   `json:"revoked"`
	Error   string `json:"error,omitempty"`
}

// RevokeCodes revokes codes of room across the ring.
func (c *Client) RevokeCodes(ctx context.Context, room string, codes []string) ([]CodeStatus, error) {
	var out []CodeStatus
	err := c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes/revoke", map[string]any{"codes": codes}, &out)
	return out, err
}

// CodesStatus reports the uses and revocation of codes of room as the node
// knows them.
func (c *Client) CodesStatus(ctx context.Context, room string, codes []string) ([]CodeStatus, error) {
	var out []CodeStatus
	err := c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes/status", map[string]any{"codes": codes}, &out)
	return out, err
}
