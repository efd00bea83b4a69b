// Package edge is waitroom's HTTP side: it routes each request to a room by
// host and path, opens the visitor's sealed token, asks the policy for a
// decision against the room's cached allocation, and then either proxies the
// request to the origin or answers with the queue page (or its JSON). It
// records every visit in the node's replica of the room state so that gossip
// carries it to the other nodes, and it serves the admin endpoint (/state,
// /rooms/{name}/status, /metrics, /healthz, the room API). The configuration
// is read, defaulted and checked here too, in the config_*.go files.
//
// In forward-auth mode (forward.go) a proxy the operator already runs asks
// the node about each request instead, and the node answers "go on" or with
// the page; the request takes the same steps below, and only the last one,
// going on to the origin, differs.
//
// Beside it, under edge/: adminclient, the one client of the admin endpoint;
// crowd, the visitor's side of a room; edgetest, the one harness of nodes in
// one process. The tools that are not the node (the load generator, the
// bench, the demo, the fidelity run) are the command's, under
// cmd/waitroom/internal.
//
// edge holds no admission maths of its own: every decision comes from
// package policy, computed over a crdt snapshot that package gossip keeps
// merged.
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
//  3. An admitted token within its session goes to the origin; its active
//     count moves to the current minute and the session is renewed unless
//     disable_session_renewal is set.
//  4. Anyone else is decided by the room's allocation. A queued visitor who
//     checks in before the refresh interval stored in the token gets the page
//     again without an attempt, so refresh-spamming gains nothing.
//  5. The node's own counters are written before the next allocation is
//     computed (the room's lock orders the two), so within one node the
//     count is exact; other nodes see it one gossip round later.
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
