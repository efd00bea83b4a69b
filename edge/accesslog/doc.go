// Package accesslog writes a node's access log: one line per request a
// node answers, with the outcome the request path decided (admitted,
// queued, first page, bypassed, refused, challenge, stopped, unrouted), so
// that an operator can follow one visitor's path through the room, as
// every proxy they already run lets them follow a request.
//
// A line is JSON (the default) or the common log format with waitroom's
// fields after it. It never holds a cookie, a token, a priority code or a
// query string: only the path of the address, and the visitor as a keyed
// hash of its token's id, the same on every node of a ring that shares the
// cookie key, and telling nothing of the cookie.
//
// Writing never blocks a request: lines go into a bounded buffer that one
// goroutine empties into the file; when the buffer is full a line is
// dropped and counted. The file is opened again on Reopen (the node calls
// it on SIGHUP, after logrotate has moved the file away), and Close writes
// what is buffered before it returns.
//
// The request path's side is a Recorder: the request's ResponseWriter
// while the log is on, which records the answer's status and size in the
// line the node fills in, from Begin to End (pooled: the log costs a
// request no allocation). Collectors are its metrics, lines dropped and
// lines failed, for the node's registry.
//
// It imports nothing of waitroom's: the node hands it entries.
package accesslog
