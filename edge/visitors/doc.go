// Package visitors is what one node remembers of its visitors between their
// requests, beyond what their cookies say: the state each visitor's token
// was last counted in (Counted), so that copies of one cookie move its count
// once, and the sessions the node has revoked (Revoked), so that a client
// keeping its old cookie neither goes on as admitted nor frees its slot
// twice; and those who keep guessing priority codes (Guessers), so that
// they are slowed down.
//
// Both are bounded in memory, forget an entry once it can no longer matter,
// and take the current time as an argument; package edge owns one of each
// per node (Revoked) or per room (Counted) and calls the counter rule
// (policy.Count) with what they hold.
package visitors
