// Package api is the admin API's wire: the request and response types a
// node's admin endpoint marshals (the state document, a room's status and
// analytics, priority codes, webhooks, errors) and the Go client that
// sends those requests, as consul's api package is to its agent. The node
// (package edge and edge/admin) writes these types; the command line reads
// them through Client. It imports nothing of the node's, so a program that
// speaks to a node links no node.
package api
