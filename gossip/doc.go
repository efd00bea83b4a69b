// Package gossip keeps every node's copy of the replicated room state (a
// crdt.State) in step with its peers over hashicorp/memberlist, with no
// coordinator: each node adds only to its own entries, and every node merges
// what the others send, so all copies converge on the same counts.
//
// # Deltas
//
// A local change (Node.Add, Node.SetRegister) marks the cells it touched as
// dirty. When memberlist next asks for broadcasts, the dirty cells are
// encoded, one cell or register per message, and queued under the cell's
// name on a TransmitLimitedQueue, so a newer value replaces one not yet sent
// instead of queueing behind it (a register too large for a packet, such as
// a room's custom page, goes to every peer over TCP instead). A node that merges something new from a
// broadcast relays it the same way; without the relay most nodes of a large
// ring would wait for push-pull. Because a cell's value only grows and a merge
// takes the maximum per replica, a message that is lost, duplicated or comes
// late does no harm: the next one, or push-pull, carries the newer value.
//
// # Push of own changes
//
// A broadcast waits for the next gossip round (every 200 ms with LAN
// timings) and reaches most peers of a ring only through a relay a round
// later, and every node keeps back what its peers may have admitted within
// that delay. So Node.Add also arms a push (push.go): 15 ms later, the
// node's changed own cells, gathered over that window, go straight to every
// live peer with memberlist's SendBestEffort, in the same stamped entries
// message a broadcast carries (peers decode, screen and time it alike). The
// cells are queued for gossip as before, for relays and for the peers a
// lost packet missed; a gossip round that flushes them first leaves them
// owed to the push, since the broadcast queue picks each transmission's
// peer at random and may miss one. The push costs a packet per peer, so it is bounded:
// only in rings of at most 16 members, and within 6 kB/s per node (a token
// bucket; when it is spent, the next push waits for it), which keeps the
// gossip of 1,000 admissions a second over 10 nodes under 20 kB/s per node.
//
// # Push-pull
//
// Periodically, and when a node joins, memberlist has two nodes swap their
// whole states over TCP; each merges the other's. This is the anti-entropy
// that repairs what broadcasts lost and brings a restarted or partitioned
// node up to date. A node keeps its own pruning horizon (Config.Retention
// minutes of its own clock) and never adopts a peer's, so a peer whose clock
// runs far ahead cannot erase counts here.
//
// # Membership
//
// Join retries the seeds with backoff. A node rejoins when its ring looks
// short and, every SearchInterval even when it looks whole, looks for the
// members it lost and the seeds outside its ring, so the sides of a partition
// that forgot each other merge again when it heals. ExpectedMembers says how many nodes
// share the traffic: a node that crashed, which cannot be told from one cut
// off, stays expected for ten minutes, while one that announced a clean leave
// (Close) gives its part back at once.
//
// # Encryption
//
// Every packet and stream is encrypted and authenticated with memberlist's
// keyring (AES-GCM; the first key encrypts, all keys decrypt, so keys rotate
// in three steps: add, make primary, remove), and unencrypted traffic is
// refused. A node refuses to start without Config.Keys unless Config.Insecure
// says otherwise, and then warns every minute. Traffic no key opens is
// refused by memberlist and counted here, by reason, logged once a minute. Config.Label is checked on
// every packet and stream, so two clusters on one network never merge.
//
// # What a peer may send
//
// A peer is trusted to be a member, not to be correct: every message is
// decoded by hand (wire.go) and validated whole before anything is merged,
// so a bad message is dropped entirely and counted in Stats, never merged
// half-way and never a panic. Messages are bounded (MaxPacketMessage for a
// broadcast, MaxReliableMessage for a TCP send, MaxFullState for push-pull),
// every declared length is checked against the bytes left before anything
// is allocated, integers out of range make a message malformed, and an entry
// needs a room name, a kind, a replica and a positive value. A peer can send
// counts for its own and other replicas' entries (relays do), but merging
// takes the maximum, so a replayed or stale value changes nothing. Even a
// key holder is believed only within what could be true (guard.go): cells
// and stamps dated beyond the allowed clock offset, impossible counts, node
// announcements that do not match their writer and registers the owner's
// check refuses are dropped before they merge, counted by reason and logged
// once a minute per reason. Register
// values are opaque here; the package that writes a register decodes it.
//
// # How late peers' counts arrive
//
// Every counter broadcast carries its origin's wall-clock time of the
// oldest change in it (a stamped entries message), kept as it is relayed;
// every probe's ack carries the responder's clock, which gives each peer's
// clock offset NTP-style. When a stamped change first reaches a node, its
// delay (receive time − stamp + offset) is a sample of its origin; a node
// with no counts of its own to send beats instead (beat.go). Lag and
// RingDelay report each live peer's offset and delay percentile over the
// last minute, and the ring's figure once every live peer has given enough
// samples (lag.go). A node sends stamped messages only while every peer's
// memberlist meta says it reads them, so older nodes keep getting plain
// ones; every node still reads both.
//
// # The ring's time
//
// From the same offsets, RingNow gives the ring's time: the node's clock
// corrected by the median of its live peers' offsets and its own zero
// (crdt.RingOffset, crdt.RingNow), which every node that hears the ring
// reads alike. Counter cells' minutes and register stamps are dated, checked
// and pruned by it; offsets, delays, beats and timeouts stay on the node's
// own clock, in which they are measured. ClockSettled says whether most
// live peers' clocks are measured yet. A node whose clock is more than five
// minutes off its peers' median says so in its log once a minute and in
// Lag (ClockFarOff).
//
// # Panics
//
// Every node merges the same state, so a state that made one node panic
// would make the whole ring panic at once. No goroutine of this package dies
// of a panic: memberlist's callbacks and the node's own goroutines recover
// and report where, to Config.OnPanic or else as one error line in the log.
// The where labels are the Panic constants: gossip_message (NotifyMsg),
// gossip_merge_state (MergeRemoteState), gossip_local_state (LocalState),
// gossip_broadcasts (GetBroadcasts), gossip_meta (NodeMeta), gossip_events
// (NotifyJoin, NotifyLeave, NotifyUpdate), gossip_ping (AckPayload,
// NotifyPingComplete), gossip_join_loop, gossip_prune_loop,
// gossip_beat_loop, gossip_insecure_loop, gossip_push (the push of own
// changes), gossip_marks (marks sent to a peer that joined or to every peer),
// gossip_leave (the hand-over of a clean leave) and gossip_carrier (the
// choice of a data center's carriers and their join between data centers). A message or push-pull
// state whose merge panicked is dropped whole and counted in Stats.Dropped
// under "panic" (DroppedPanic); a push-pull state that could not be built
// is sent empty; a loop goes on with its next tick.
//
// # Data centers
//
// A node may name the data center it belongs to (Config.Datacenter; a ring
// that names none runs as it always has, each node a data center of its
// own, on one pool). Then it runs two memberlist pools, as Consul does:
// its data center's, with the profile's timings, carrying every replica's
// cells, the push, beats, registers and marks as above (and the lag and
// the ring's time a node measures come from it alone); and, while it is
// one of its data center's carriers (Config.Carriers members chosen by
// rendezvous hashing over the live members), a pool between data centers
// with WAN timings, carrying each data center's figures (one aggregate
// entry per cell, crdt.State.Carry) in compact batches within a byte
// budget, the registers that are not node facts, and marks. A carrier
// relays what it hears from other data centers into its own. The first
// carrier in rank sends the data center's figures, straight to every other
// data center's carriers as well as by gossip; the others stand by.
// Per-node cells never leave their data center; a carrier that dies is
// replaced by the next in rank, which sums every cell afresh; the two sides of a data
// center cut in two each carry their own side, and the other data centers
// add them up. See datacenter.go. The two pools never merge: each has a
// label derived from Config.Label. Node.Datacenters lists the data centers
// a node knows (its own by its members, another by the nodes its figures
// sum), from which the edge counts the nodes a room's limits are divided
// between; a data center is known to the others from its first figures.
//
// MemNet is test and measurement support: a network of memberlist
// transports in memory, without sockets, between nodes of one process. It
// models a one-way delay for every pair of addresses and loses, duplicates,
// reorders and partitions packets, and counts the bytes each address sends:
// the fault tests here and in the edge use it with a few nodes, the scale
// harness (scale_test.go) with hundreds grouped in data centers.
// LinkFaults (Config.WANFaults) instead delays and loses what a node's own
// pool between data centers sends on its real transport, for real processes
// on one machine that should stand as far apart as data centers (serve's
// hidden test flags, the fidelity run's data-center scenario).
package gossip
