package api

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/waitroom/waitroom/policy/duration"
)

// MintRequest is the body of POST /rooms/{name}/codes: count codes of a
// priority group, each admitting Uses visitors until Expires from now. The
// node answers with CSV, one code a line (see Client.MintCodes).
type MintRequest struct {
	Group   string            `json:"group"`
	Count   int               `json:"count"`
	Uses    int               `json:"uses"`
	Expires duration.Duration `json:"expires"`
}

// CodesRequest is the body of POST /rooms/{name}/codes/revoke and
// /codes/status: the codes, as minted.
type CodesRequest struct {
	Codes []string `json:"codes"`
}

// CodeStatus is one priority code as the node reports it: what the code
// says and, when it verifies (or has only expired), its uses as the node
// knows them and whether it is revoked; Error says why a code does not
// verify.
type CodeStatus struct {
	ID      string `json:"id"`
	Group   string `json:"group,omitempty"`
	Uses    int    `json:"uses,omitempty"`
	Used    int    `json:"used"`
	Expires string `json:"expires,omitempty"`
	Revoked bool   `json:"revoked"`
	Error   string `json:"error,omitempty"`
}

// MintCodes mints count priority codes of group for room, each admitting
// uses visitors and expiring after expires, and returns them as the node
// writes them: CSV with a header line (code, id, group, uses, expires,
// link).
func (c *Client) MintCodes(ctx context.Context, room, group string, count, uses int, expires time.Duration) ([]byte, error) {
	return c.send(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes", MintRequest{
		Group: group, Count: count, Uses: uses, Expires: duration.Duration(expires),
	})
}

// RevokeCodes revokes codes of room across the ring.
func (c *Client) RevokeCodes(ctx context.Context, room string, codes []string) ([]CodeStatus, error) {
	var out []CodeStatus
	err := c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes/revoke", CodesRequest{Codes: codes}, &out)
	return out, err
}

// CodesStatus reports the uses and revocation of codes of room as the node
// knows them.
func (c *Client) CodesStatus(ctx context.Context, room string, codes []string) ([]CodeStatus, error) {
	var out []CodeStatus
	err := c.do(ctx, http.MethodPost, "/rooms/"+url.PathEscape(room)+"/codes/status", CodesRequest{Codes: codes}, &out)
	return out, err
}
