package gossip

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
)

// What a node takes from its peers. Keys keep strangers out of the ring
// (memberlist refuses what no key opens; logWriter counts it), but a peer
// that holds a key is still only believed within what could be true: a
// counter cell or register dated beyond the allowed clock offset, a count no
// node's traffic could make, a node announcement that does not match its
// writer and a register the node's own checks refuse (room settings) are
// dropped before anything is merged, counted under their reason and logged,
// one line per reason per minute, so a flood cannot fill the log.

// Refusal reasons besides crdt's (future_minute, future_stamp,
// impossible_value), the labels of the dropped-input counter.
const (
	RefusedUnauthenticated = "unauthenticated"   // a packet or stream no gossip key opens
	RefusedWrongLabel      = "wrong_label"       // a packet or stream of another cluster label
	RefusedNodeInfo        = "invalid_node_info" // a node announcement that does not decode or names another writer
	RefusedRegister        = "invalid_register"  // a register Config.CheckRegister refused
	RefusedNameTaken       = "name_taken"        // a join under the name of a live member at another address
)

// refusalLogInterval is how often a refusal reason may log a line.
const refusalLogInterval = time.Minute

// refusalLog remembers, per reason, when a refusal was last logged and how
// many were refused since.
type refusalLog struct {
	mu sync.Mutex
	by map[string]*refusalCount
}

type refusalCount struct {
	at    time.Time
	since int
}

// refuse counts one refused input under reason and logs it, unless a line
// for the same reason was logged within the last minute; the next line then
// says how many were refused without a line.
func (n *Node) refuse(reason string, err error) {
	n.stats.drop(reason)
	since, due := n.refusals.due(reason, n.clock())
	if !due {
		return
	}
	n.log.Warn().Str("reason", reason).Err(err).Int("refused_without_a_line", since).Msg("refused gossip input from a peer")
}

// due reports whether a line for reason is due at now, and how many were
// refused without a line since the last; if due, it records the line.
func (l *refusalLog) due(reason string, now time.Time) (since int, due bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]*refusalCount{}
	}
	rc := l.by[reason]
	if rc != nil && now.Sub(rc.at) < refusalLogInterval {
		rc.since++
		return 0, false
	}
	if rc != nil {
		since = rc.since
	}
	l.by[reason] = &refusalCount{at: now}
	return since, true
}

// screen drops from a peer's delta everything the node refuses at
// nowMillis (see the top of this file) and what could not change the state
// anyway (registers no newer than those held), and returns the rest.
func (n *Node) screen(d crdt.Delta, nowMillis int64) crdt.Delta {
	entries := d.Entries[:0]
	for _, e := range d.Entries {
		if err := crdt.CheckEntry(e, nowMillis); err != nil {
			n.refuse(boundsReason(err), err)
			continue
		}
		if n.cfg.CheckEntry != nil {
			if err := n.cfg.CheckEntry(e); err != nil {
				n.refuse(boundsReason(err), err)
				continue
			}
		}
		entries = append(entries, e)
	}
	d.Entries = entries
	d = n.screenAggregates(d, nowMillis)
	if len(d.Registers) == 0 {
		return d
	}
	// Vet only the registers that would win: push-pull carries every
	// register each round, and most are what the node holds already.
	regs := n.newerRegisters(d.Registers, crdt.LatestStamp(nowMillis))
	d.Registers = regs[:0]
	for _, r := range regs {
		if err := crdt.CheckStamp(r.Reg.Stamp, nowMillis); err != nil {
			n.refuse(boundsReason(err), fmt.Errorf("register %q: %w", r.Name, err))
			continue
		}
		if strings.HasPrefix(r.Name, nodeInfoPrefix) {
			if err := checkNodeInfo(r); err != nil {
				n.refuse(RefusedNodeInfo, err)
				continue
			}
		} else if n.cfg.CheckRegister != nil {
			if err := n.cfg.CheckRegister(r.Name, r.Reg.Value); err != nil {
				n.refuse(RefusedRegister, fmt.Errorf("register %q: %w", r.Name, err))
				continue
			}
		}
		d.Registers = append(d.Registers, r)
	}
	return d
}

// newerRegisters keeps, in place, the registers of regs newer than those
// held, and those held that are dated beyond latest (a peer may replace
// them).
func (n *Node) newerRegisters(regs []crdt.RegisterEntry, latest int64) []crdt.RegisterEntry {
	out := regs[:0]
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range regs {
		if cur, ok := n.state.Register(r.Name); ok && cur.Stamp.Wall <= latest && !r.Reg.Newer(cur) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func boundsReason(err error) string {
	var oob *crdt.OutOfBounds
	if errors.As(err, &oob) {
		return oob.Reason
	}
	return "invalid"
}

const nodeInfoPrefix = "node/"

// checkNodeInfo accepts a node announcement only under its writer's name
// and when it names the node and incarnation its writer's replica id is
// derived from: no peer can announce, or announce the leave of, another.
func checkNodeInfo(r crdt.RegisterEntry) error {
	if r.Name != NodeInfoRegister(r.Reg.Replica) {
		return fmt.Errorf("register %q written by replica %s", r.Name, r.Reg.Replica)
	}
	ni, err := DecodeNodeInfo(r.Reg.Value)
	if err != nil {
		return fmt.Errorf("register %q: %w", r.Name, err)
	}
	if crdt.NewReplicaID(ni.Name, ni.Incarnation) != r.Reg.Replica {
		return fmt.Errorf("register %q announces node %q incarnation %d, not its writer", r.Name, ni.Name, ni.Incarnation)
	}
	return nil
}

// outgoing is a register as it leaves the node (see Config.Redact).
func (n *Node) outgoing(r crdt.RegisterEntry) crdt.RegisterEntry {
	if n.cfg.Redact != nil && len(r.Reg.Value) > 0 {
		r.Reg.Value = n.cfg.Redact(r.Name, r.Reg.Value)
	}
	return r
}

// classifyMemberlist names the refusal a memberlist log line reports, or ""
// when it reports none: memberlist refuses unkeyed and wrong-keyed traffic
// itself and only says so in its log.
func classifyMemberlist(line []byte) string {
	switch {
	case bytes.Contains(line, []byte("unacceptable label")):
		return RefusedWrongLabel
	case bytes.Contains(line, []byte("Decrypt packet failed")):
		return RefusedUnauthenticated
	case bytes.Contains(line, []byte("failed to receive")) && bytes.Contains(bytes.ToLower(line), []byte("crypt")):
		return RefusedUnauthenticated
	}
	return ""
}

// nameGuard refuses a join (memberlist's join push-pull, NotifyMerge) that
// claims the name of a live member, this node included, at another address:
// memberlist keeps the member it has, but the newcomer would learn the
// ring and could announce the name's leave, knocking the real member out.
// A member suspected or gone may be replaced, as memberlist reclaims a dead
// member's name (DeadNodeReclaimTime).
type nameGuard Node

func (g *nameGuard) NotifyMerge(peers []*memberlist.Node) error {
	n := (*Node)(g)
	held := map[string]Member{}
	for _, m := range n.Members() {
		held[m.Name] = m
	}
	for _, p := range peers {
		if p.State != memberlist.StateAlive {
			continue
		}
		m, ok := held[p.Name]
		if ok && m.Alive && !m.Suspected && m.Addr != p.Address() {
			err := fmt.Errorf("a joining node claims the name %q at %s, held by a live member at %s", p.Name, p.Address(), m.Addr)
			n.refuse(RefusedNameTaken, err)
			return err
		}
	}
	return nil
}
