// Package edge is the node: it routes each request to a room by host and
// path, opens the visitor's sealed token, takes the request through the
// policy's steps against the room's cached allocation, counts what the
// request changed in the node's replica of the room state (which gossip
// carries to the other nodes), and then either proxies the request to the
// origin or answers with the queue page (or its JSON). It keeps the rooms
// in force as replicated registers and recomputes their allocations in its
// allocation loop, and a room whose allocation fails runs in its failure
// mode (failsafe.go) rather than taking the node down.
//
// In forward-auth mode (forward.go) a proxy the operator already runs asks
// the node about each request instead, and the node answers "go on" or with
// the page; the request takes the same steps below, and only the last one,
// going on to the origin, differs.
//
// edge holds no admission maths of its own: every decision and every count
// comes from package policy, computed over a crdt snapshot that package
// gossip keeps merged.
//
// # Data centers
//
// A node may belong to a data center of several nodes (config datacenter):
// gossip then keeps the data center's per-node cells among its members and
// carries only the data center's figures to the others (package gossip).
// The node divides a room's Anywhere part over its data center's members
// and the other data centers' nodes, and splits the rest by traffic as
// always, another data center counting as one node with all of its
// traffic; the lag it assumes is measured among its data center's members.
//
// # Beside it
//
// What runs beside the node uses it through its exported methods (the
// rooms and their figures, the room registry's writes, priority codes'
// signer and marks, the metrics registry, AfterEachRound), and edge imports
// none of it:
//
//   - edge/admin, the admin API (the state document, the room, codes and
//     webhook APIs, the metrics, the console and the guard in front of
//     them); edge/api, its wire types and the Go client the command line
//     uses;
//   - edge/agent, what runs a node as a process (`waitroom serve`): keys,
//     gossip security, the listeners, TLS, readiness, and the node, its
//     admin API and its webhooks wired together;
//   - edge/webhook/deliver, the webhooks' notices and their delivery, signed
//     with edge/webhook;
//   - edge/edgetest, the one harness of nodes in one process, and
//     edge/crowd, the visitor's side of a room.
//
// Under it, knowing nothing of a node: edge/config (the configuration, read
// and checked), edge/canon (the canonical spelling of a path and a host),
// edge/i18n (the page's languages), edge/visitors (what the node remembers
// of its visitors between requests), edge/challenge (the bot challenge's
// verifier), edge/accesslog (the access log's lines, its writer and the
// recorder of an answer), edge/clientaddr (the visitor's address),
// edge/queuepage (the queue page rendered from its variables) and
// edge/roomreg (a room's settings as a replicated register's bytes). The
// tools that are not the node (the load generator, the bench, the demo,
// the fidelity run) are the command's, under cmd/waitroom/internal.
//
// # One request
//
//  1. Route: the path and Host are put in canonical form first (dot
//     segments resolved, escapes decoded or upper-cased, the host
//     lower-cased without its trailing dot), and the request is rewritten
//     so the origin receives that form; a path with no single meaning (an
//     encoded slash, a backslash, double encoding) is refused with 400.
//     Then the most specific route wins (a named host before any host, then
//     the longest path prefix); a request no route matches is refused, or
//     passed to the default origin with unrouted: pass.
//  2. Token: the room's cookie is opened with the node's cookie keys and the
//     room's name as associated data. A token that does not open, has
//     expired or belongs to another room is a new visitor, never an error.
//  3. An admitted token within its session goes to the origin; its session
//     is renewed unless disable_session_renewal is set, and policy.Count
//     moves its count to the slice of its renewed expiry.
//  4. Anyone else is decided by the room's allocation (policy.TurnOf, then
//     policy.Request). A queued visitor who checks in before the refresh
//     interval stored in the token gets the page again without an attempt,
//     so refresh-spamming gains nothing.
//  5. What the request changed is worked out by policy.Count, the only
//     writer of the counters, and added to the node's own entries before
//     the next allocation is computed (the room's lock orders the two), so
//     within one node the count is exact; other nodes see it one gossip
//     round later.
//
// # The cookie check
//
// A visitor's place lives only in its cookie, so a client that keeps none
// would be a new visitor, at the back, on every refresh. A new visitor's
// first queue page therefore refreshes to its own address with
// __waitroom_cc=<second> added. Back there without a valid cookie for the
// room, the client gets the cookies-required answer (cookiesRequired in the
// page and the JSON) with no refresh; back with its cookie, it is handled as
// usual and returns to the clean address at its next step. The parameter is
// removed from every request before anything else looks at it, so the
// origin never sees it and it changes no decision.
package edge
