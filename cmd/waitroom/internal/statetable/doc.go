// Package statetable prints a node's state document for a person: what
// `waitroom state` shows without --json. The document comes from the admin
// API's client (edge/api); this package only lays it out.
package statetable
