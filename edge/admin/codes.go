package admin

import (
	crand "crypto/rand"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/api"
)

// The admin API for priority codes: mint them, revoke them, and ask what
// the ring knows of them, with the node's signer and marks (see
// edge.Server.CodeSigner).

// maxMint is the most codes one request mints.
const maxMint = 100_000

func (a *API) registerCodes(mux *http.ServeMux) {
	mux.HandleFunc("POST /rooms/{name}/codes", a.serveMint)
	mux.HandleFunc("POST /rooms/{name}/codes/revoke", a.serveRevoke)
	mux.HandleFunc("POST /rooms/{name}/codes/status", a.serveCodeStatus)
}

// serveMint mints codes and answers with them as CSV: code, id, group,
// uses, expires (RFC 3339), link.
func (a *API) serveMint(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	rc := a.s.Room(name)
	if rc == nil {
		writeError(w, http.StatusNotFound, "no room named %q", name)
		return
	}
	var req api.MintRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if _, _, ok := rc.PriorityGroup(req.Group); !ok {
		writeError(w, http.StatusBadRequest, "group: room %q has no priority group %q", rc.Name, req.Group)
		return
	}
	if req.Count < 1 || req.Count > maxMint {
		writeError(w, http.StatusBadRequest, "count: %d must be 1 to %d", req.Count, maxMint)
		return
	}
	if req.Uses < 1 || req.Uses > cookie.MaxCodeUses {
		writeError(w, http.StatusBadRequest, "uses: %d must be 1 to %d", req.Uses, cookie.MaxCodeUses)
		return
	}
	if d := time.Duration(req.Expires); d < time.Minute || d > 400*24*time.Hour {
		writeError(w, http.StatusBadRequest, "expires: %v must be 1m to 9600h", d)
		return
	}
	expires := a.s.RingNow().Add(time.Duration(req.Expires)).Unix()
	signer := a.s.CodeSigner()
	link := edge.CodeLink(rc)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"code", "id", "group", "uses", "expires", "link"})
	for range req.Count {
		text, c, err := signer.Mint(crand.Reader, name, cookie.Code{Group: req.Group, Expires: expires, Uses: uint16(req.Uses)})
		if err != nil {
			a.log.Error().Err(err).Msg("mint priority code")
			return
		}
		_ = cw.Write([]string{text, c.IDString(), c.Group, strconv.Itoa(int(c.Uses)), time.Unix(c.Expires, 0).UTC().Format(time.RFC3339), link + url.QueryEscape(text)})
	}
	cw.Flush()
	a.log.Info().Str("room", name).Str("group", req.Group).Int("count", req.Count).Int("uses", req.Uses).Str("by", r.RemoteAddr).Msg("priority codes minted through the admin API")
}

// serveRevoke revokes codes: each is marked revoked across the ring until
// its own expiry, and refused from then on (visitors who already hold its
// group keep it).
func (a *API) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if n, ok := a.eachCode(w, r, true); ok {
		a.log.Info().Str("room", r.PathValue("name")).Int("codes", n).Str("by", r.RemoteAddr).Msg("priority codes revoked through the admin API")
	}
}

// serveCodeStatus reports, for each code, its uses as this node knows them
// and whether it is revoked.
func (a *API) serveCodeStatus(w http.ResponseWriter, r *http.Request) {
	a.eachCode(w, r, false)
}

// eachCode answers a request naming codes with one status per code: what
// the code says and, when it verifies (or has only expired), its uses as
// this node knows them and whether it is revoked, after revoking it first
// when revoke is set. It returns how many codes it answered for, and false
// when the request was refused.
func (a *API) eachCode(w http.ResponseWriter, r *http.Request, revoke bool) (int, bool) {
	name := r.PathValue("name")
	if a.s.Room(name) == nil {
		writeError(w, http.StatusNotFound, "no room named %q", name)
		return 0, false
	}
	var req api.CodesRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return 0, false
	}
	signer := a.s.CodeSigner()
	now := a.s.RingNow()
	out := make([]api.CodeStatus, 0, len(req.Codes))
	for _, text := range req.Codes {
		c, err := signer.Verify(text, name, now)
		st := api.CodeStatus{ID: c.IDString(), Group: c.Group, Uses: int(c.Uses)}
		if err != nil {
			st.Error = err.Error()
		}
		if revoke && err == nil {
			a.s.RevokeCode(name, c)
			st.Revoked = true
		}
		if err == nil || errors.Is(err, cookie.ErrCodeExpired) {
			st.Used = a.s.CodeUses(name, c)
			st.Revoked = st.Revoked || a.s.CodeRevoked(name, c)
			st.Expires = time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)
		}
		out = append(out, st)
	}
	writeJSON(w, http.StatusOK, out)
	return len(req.Codes), true
}
