// Package queuepage renders the queue page from its variables: the
// variables themselves (Vars, named as in the reference so that a
// Cloudflare template or app works unchanged, and the JSON answer's
// cfWaitingRoom object), the built-in page in every language of package
// i18n, the choice between a room's own template and the built-in one
// (Template), the cache of rendered pages (Cache), the refresh address
// filled in on the way out (WriteFilled), and the plain status page the
// node answers outside a queue (WriteStatus).
//
// It knows nothing of a node: the request path works the variables out
// (the estimate, the room's settings, the visitor's token) and hands them
// here with the room's template.
package queuepage
