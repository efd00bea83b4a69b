// Package agent runs a waitroom node as a process, as `waitroom serve`
// does: it reads the keys from their files or the environment and decides
// how gossip is secured, builds the node (edge.New), its admin API
// (edge/admin) and its webhooks (edge/webhook/deliver), and serves them on
// the listeners: the public one with its deadlines and connection cap,
// HTTPS from certificate files or ACME and the redirect to it, the
// forward-auth endpoint and the admin endpoint. It answers readiness, and
// on a stop drains the listeners, hands the node's last counts to its
// peers and leaves the ring.
package agent
