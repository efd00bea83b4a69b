// Package roomreg is the bytes of a room's settings as a replicated
// register. Room settings are replicated state: each room is an LWW
// register named "room/<name>" holding its config.Room as JSON, and an
// empty value is a deleted room. A change made through any node's admin
// API is gossiped like any other register and every node rebuilds its room
// table from the registers.
//
// It knows nothing of a node: the register's name, its value decoded in
// the configuration's schema, the secrets a register leaves behind on
// unencrypted gossip, and whether a set of registers changed. The node
// fills in what a room takes from it (its origin, its turnstile secret)
// and validates the result.
package roomreg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
)

// Prefix begins the name of every room register.
const Prefix = "room/"

// Name is the register of the named room.
func Name(room string) string { return Prefix + room }

// Decode decodes a room register's value, checks that it holds the room
// the register is named for, and fills in the settings' defaults. It does
// not validate: the node first fills in what a room takes from it.
func Decode(name string, raw []byte) (*config.Room, error) {
	var rc config.Room
	if err := json.Unmarshal(raw, &rc); err != nil {
		return nil, fmt.Errorf("decode room %q: %w", name, err)
	}
	if rc.Name != name {
		return nil, fmt.Errorf("room register %q holds room %q", name, rc.Name)
	}
	rc.ApplyDefaults()
	return &rc, nil
}

// StripSecrets removes the secrets from a register as it leaves the node
// without a gossip key, when gossip is plaintext on the wire: a room's
// turnstile_secret (nodes take it from their own config) and the secret of
// any other register that holds one (a webhook registered through the
// admin API: nodes without it leave the webhook to the node that has it).
func StripSecrets(name string, value []byte) []byte {
	field := "secret"
	if strings.HasPrefix(name, Prefix) {
		field = "turnstile_secret"
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(value, &fields) != nil {
		return value
	}
	if _, ok := fields[field]; !ok {
		return value
	}
	delete(fields, field)
	out, err := json.Marshal(fields)
	if err != nil {
		return value
	}
	return out
}

// Same reports whether two sets of room registers are the same, values
// included: a node whose clock stands still (or repeats a millisecond) can
// write new settings under the stamp and replica of its earlier ones,
// after an overwrite of a register stamped in the far future.
func Same(a, b map[string]crdt.LWW[[]byte]) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.Stamp != y.Stamp || x.Replica != y.Replica || !bytes.Equal(x.Value, y.Value) {
			return false
		}
	}
	return true
}
