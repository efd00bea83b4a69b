// Package admin is a node's admin endpoint: what an operator, a monitor
// and the command line ask of a running node, over HTTP on the admin
// listener (loopback by default, never the public one). It serves the
// state document (GET /state), a room's status and analytics, the
// Prometheus metrics with the merged rooms' gauges, /healthz and /readyz,
// the room API (rooms created, changed, stopped and deleted at run time,
// the message and the closed state), priority codes, the webhook API and
// the operator's console (edge/dashboard), behind the guard that keeps
// other sites, foreign hosts and callers without the token out.
//
// It uses the node (edge.Server) through its exported methods only: the
// rooms and their figures, the room registry's writes, the code signer
// and marks, the gossip node. The request and response types are edge/api's,
// which the command line's client reads.
package admin
