package edge

import (
	crand "crypto/rand"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// A room's priority codes as the node keeps them: minted with the node's
// cookie keys, their uses and revocations marks in the ring's replicated
// marks (see priority.go). The admin API mints, revokes and reports codes
// through the methods below.

// MintCodes mints count priority codes of room like proto (its group, uses
// and expiry; the id is drawn for each) and hands each to each, as the
// text a visitor presents, the code it stands for and the link that
// presents it. It stops at the first error, each's or the minting's; false
// for a room the node does not have.
func (s *Server) MintCodes(room string, proto cookie.Code, count int, each func(text string, c cookie.Code, link string) error) (bool, error) {
	rm := s.room(room)
	if rm == nil {
		return false, nil
	}
	signer := cookie.NewCodeSigner(s.keys)
	link := roomLink(rm.cfg)
	for range count {
		text, c, err := signer.Mint(crand.Reader, rm.name, proto)
		if err != nil {
			return true, err
		}
		if err := each(text, c, link+url.QueryEscape(text)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// CodeStatuses reports each of codes of room: what the code says and, when
// it verifies (or has only expired), its uses as this node knows them and
// whether it is revoked. With revoke, each code that verifies is first
// marked revoked across the ring until its own expiry, and refused from
// then on (visitors who already hold its group keep it). False for a room
// the node does not have.
func (s *Server) CodeStatuses(room string, codes []string, revoke bool) ([]api.CodeStatus, bool) {
	rm := s.room(room)
	if rm == nil {
		return nil, false
	}
	signer := cookie.NewCodeSigner(s.keys)
	now := s.ringNow()
	out := make([]api.CodeStatus, 0, len(codes))
	for _, text := range codes {
		c, err := signer.Verify(text, rm.name, now)
		st := api.CodeStatus{ID: c.IDString(), Group: c.Group, Uses: int(c.Uses)}
		if err != nil {
			st.Error = err.Error()
		}
		if revoke && err == nil {
			s.node.Mark(revokedMark(rm.name, c), c.Expires)
			st.Revoked = true
		}
		if err == nil || errors.Is(err, cookie.ErrCodeExpired) {
			st.Used = s.usesOf(rm.name, c)
			st.Revoked = st.Revoked || s.node.HasMark(revokedMark(rm.name, c))
			st.Expires = time.Unix(c.Expires, 0).UTC().Format(time.RFC3339)
		}
		out = append(out, st)
	}
	return out, true
}

// roomLink is the start of a code's link: the room's host and path with
// the code parameter (only the path, for a room without a host of its own).
func roomLink(c *config.Room) string {
	path := c.Path
	if path == "" {
		path = "/"
	}
	if c.Host == "" {
		return path + "?" + codeParam + "="
	}
	return "https://" + c.Host + path + "?" + codeParam + "="
}

// useMark names use k (1-based) of code c in room; a single-use code's one
// use is k=1.
func useMark(room string, c cookie.Code, k int) string {
	if c.Uses == 1 {
		return "code/" + room + "/" + c.IDString()
	}
	return "code/" + room + "/" + c.IDString() + "/" + strconv.Itoa(k)
}

func revokedMark(room string, c cookie.Code) string {
	return "revoked/" + room + "/" + c.IDString()
}

// claimUse claims the first use of c this node does not know to be taken.
func (s *Server) claimUse(room string, c cookie.Code) bool {
	for k := 1; k <= int(c.Uses); k++ {
		id := useMark(room, c, k)
		if s.node.HasMark(id) {
			continue
		}
		if s.node.Mark(id, c.Expires) {
			return true
		}
	}
	return false
}

// usesOf counts the uses of c this node knows of.
func (s *Server) usesOf(room string, c cookie.Code) int {
	n := 0
	for k := 1; k <= int(c.Uses); k++ {
		if s.node.HasMark(useMark(room, c, k)) {
			n++
		}
	}
	return n
}
