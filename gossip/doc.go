// Package gossip spreads a node's crdt state to the other nodes of a ring
// over hashicorp/memberlist, and merges theirs.
//
// What travels: every change to one of the node's own counter entries or a
// register is queued as a small broadcast (one entry or register each, named
// so that a newer value replaces one not yet sent) and relayed by whoever
// learns something new from it; registers too large for a packet go over
// memberlist's TCP stream; push-pull anti-entropy exchanges whole states now
// and then, repairing whatever broadcasts missed. The wire format (wire.go)
// is versioned and decoded by hand with every declared length checked, so a
// message is taken whole or dropped whole.
//
// Who is heard: a ring is authenticated by its gossip keys (memberlist
// encrypts every packet and stream with AES-GCM); a node refuses to start
// without one unless Config.Insecure says otherwise, and then warns every
// minute. Traffic no key opens is refused by memberlist and counted here.
// Even a key holder is believed only within what could be true (guard.go):
// cells and stamps dated beyond the allowed clock offset, impossible counts,
// node announcements that do not match their writer and registers the
// owner's check refuses are dropped before they merge, counted by reason and
// logged once a minute per reason.
//
// Membership: the join loop retries seeds with backoff, rejoins when the
// ring shrinks below what it had, and looks for lost members now and then,
// so partitions heal; a node leaving cleanly announces it (leave.go), so its
// peers stop holding its share of the rooms' limits.
package gossip
