package edge

import (
	"strconv"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/config"
)

// A room's priority codes as the node keeps them: minted and checked with
// the node's cookie keys, their uses and revocations marks in the ring's
// replicated marks (see priority.go). The admin API mints, revokes and
// reports codes with the methods below.

// CodeSigner mints and verifies the node's priority codes, keyed from its
// cookie keys: any node of the ring checks any code without a list.
func (s *Server) CodeSigner() *cookie.CodeSigner { return cookie.NewCodeSigner(s.keys) }

// CodeUses counts the uses of code c of room that this node knows of.
func (s *Server) CodeUses(room string, c cookie.Code) int { return s.usesOf(room, c) }

// CodeRevoked reports whether code c of room is revoked, as far as this
// node knows.
func (s *Server) CodeRevoked(room string, c cookie.Code) bool {
	return s.node.HasMark(revokedMark(room, c))
}

// RevokeCode marks code c of room revoked across the ring until the code's
// own expiry: it is refused from then on, and visitors who already hold
// its group keep it.
func (s *Server) RevokeCode(room string, c cookie.Code) { s.node.Mark(revokedMark(room, c), c.Expires) }

// CodeLink is the start of the link that presents a code of room rc: the
// room's host and path with the code's parameter, to which the code is
// added, escaped for a query (only the path, for a room without a host of
// its own).
func CodeLink(rc *config.Room) string {
	path := rc.Path
	if path == "" {
		path = "/"
	}
	if rc.Host == "" {
		return path + "?" + codeParam + "="
	}
	return "https://" + rc.Host + path + "?" + codeParam + "="
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
