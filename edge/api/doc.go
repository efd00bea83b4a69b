// Package api is the admin API's wire: the request and response types a
// node's admin endpoint marshals (the state document, a room's status and
// analytics, priority codes, webhooks, errors, health) and the Go client
// that sends those requests, as consul's api package is to its agent. The
// admin API (edge/admin) writes these types; the command line reads them
// through Client. It imports neither the node (edge) nor the admin API, so
// a program that speaks to a node links no node: the figures it carries
// are gossip's and the policy's own types, and rooms are written in the
// configuration's schema (edge/config).
package api
