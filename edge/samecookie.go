package edge

// sameCookie is the visitor's cookie value when its token came back
// exactly as the counter rule leaves it ("" otherwise): a browser's
// requests within the same second, a page and its assets. Sealing it again
// would give the same token, with the same expiry and last check-in, under
// a new nonce. Any change the rule makes (a renewed expiry, a later
// check-in, a new session cell) differs from the sent token and is sealed
// as before, so the cookie still carries everything a node that has never
// seen the visitor needs; and a cookie sealed under a key that is no longer
// the newest is sealed under the newest at its next request in a later second.
//
// In proxy mode the answer then carries no Set-Cookie at all (see
// newProxy). In forward-auth mode the endpoint still answers with the
// cookie, the visitor's own value, since the proxies' shipped
// configurations tell an admitted visitor by it.
func (rq *request) sameCookie() string {
	if rq.fresh || rq.tok != rq.sent {
		return ""
	}
	return rq.sentValue
}
