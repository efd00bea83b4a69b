package crowd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// Outcome is what an answer was, seen from the visitor.
type Outcome int

// The outcomes.
const (
	// Failed: no answer (see Answer.Err), or an error status without a
	// Refresh header.
	Failed Outcome = iota
	// Admitted: a 2xx or 3xx answer without a Refresh header, the origin's.
	Admitted
	// Queued: an answer with a Refresh header, the queue page (or its JSON).
	Queued
	// Rejected: a 429 without a Refresh header, or a no-store 503: the room
	// lets nobody in.
	Rejected
)

func (o Outcome) String() string {
	switch o {
	case Admitted:
		return "admitted"
	case Queued:
		return "queued"
	case Rejected:
		return "rejected"
	default:
		return "failed"
	}
}

// Classify tells what an answer was and, for a queued one, the refresh it
// asked for. A Refresh header that does not parse is followed as a reload
// after no wait, as a browser would ignore it: the answer still counts as
// queued.
func Classify(resp *http.Response) (Outcome, Refresh) {
	if v := resp.Header.Get("Refresh"); v != "" {
		r, _ := ParseRefresh(v)
		return Queued, r
	}
	switch s := resp.StatusCode; {
	case s >= 200 && s < 400:
		return Admitted, Refresh{}
	case s == http.StatusTooManyRequests:
		return Rejected, Refresh{}
	case s == http.StatusServiceUnavailable && strings.Contains(resp.Header.Get("Cache-Control"), "no-store"):
		return Rejected, Refresh{}
	}
	return Failed, Refresh{}
}

// Answer is one request's result.
type Answer struct {
	Outcome Outcome
	// Status is the HTTP status of the final answer (after redirects), 0
	// when there was none.
	Status int
	// Refresh is what a queued answer asked for.
	Refresh Refresh
	// Sent and At are when the request went out and when the answer (or
	// the error) came back.
	Sent, At time.Time
	// URL is the address the final answer came from.
	URL *url.URL
	// Header is the final answer's header.
	Header http.Header
	// Wait is what a queued answer in the JSON form (see AcceptJSON) told
	// the visitor about its wait; nil for a page or any other answer.
	Wait *Wait
	// Err is the transport error of a request that got no answer.
	Err error
}

// Visitor is one person with a browser: its own cookie jar, the headers it
// sends, and where its queue page will take it next. It is not safe for use
// by several goroutines at once (a person has one tab).
type Visitor struct {
	client *http.Client
	header http.Header
	// next is where the visitor's next check-in goes while it waits: the
	// address the last Refresh named, resolved. nil: the target.
	next *url.URL
	// due is when the last Refresh asked the visitor to come back.
	due time.Time
}

// NewVisitor returns a visitor with an empty cookie jar that sends header
// on every request, over rt (shared by a crowd: connections are the
// browser's business, not the person's), each request bounded by timeout
// (0: none).
func NewVisitor(rt http.RoundTripper, header http.Header, timeout time.Duration) *Visitor {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &Visitor{
		client: &http.Client{Transport: rt, Jar: jar, Timeout: timeout},
		header: header.Clone(),
	}
}

// Get loads target as the visitor's browser would at this point: while the
// visitor waits in a queue, the address its queue page's Refresh named
// (the cookie check of a first page, then the clean address again);
// otherwise target itself. It does not wait for the refresh: see Follow.
// Redirects are followed and cookies kept. The body is read and dropped,
// but for a queue answer's JSON form, which is read into Answer.Wait.
func (v *Visitor) Get(ctx context.Context, target string) Answer {
	u := target
	if v.next != nil {
		u = v.next.String()
	}
	a := Answer{Sent: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		a.At, a.Err = time.Now(), fmt.Errorf("visitor: request for %q: %w", u, err)
		return a
	}
	for k, vs := range v.header {
		req.Header[k] = vs
	}
	resp, err := v.client.Do(req)
	if err != nil {
		a.At, a.Err = time.Now(), err
		return a
	}
	var body []byte
	if isJSON(resp.Header.Get("Content-Type")) && resp.Header.Get("Refresh") != "" {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxWaitBody+1))
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	a.At = time.Now()
	if err != nil {
		a.Err = fmt.Errorf("visitor: reading the answer of %s: %w", u, err)
		return a
	}
	a.Status, a.URL, a.Header = resp.StatusCode, resp.Request.URL, resp.Header
	a.Outcome, a.Refresh = Classify(resp)
	switch a.Outcome {
	case Queued:
		if w, ok := ParseWait(body); ok {
			a.Wait = &w
		}
		v.due = a.At.Add(a.Refresh.After)
		v.next = resp.Request.URL
		if a.Refresh.URL != "" {
			if n, err := resp.Request.URL.Parse(a.Refresh.URL); err == nil {
				v.next = n
			}
		}
	case Admitted, Rejected:
		// Let in, or turned away: the page is no longer a queue page, and
		// the next visit starts at the target.
		v.next, v.due = nil, time.Time{}
	}
	// An error page leaves the visitor where it was: reloading it loads the
	// same address again.
	return a
}

// isJSON reports whether a Content-Type names JSON, parameters aside.
func isJSON(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), AcceptJSON)
}

// Waiting reports whether the visitor's last answer was a queue page.
func (v *Visitor) Waiting() bool { return v.next != nil }

// Next is the address the visitor's next check-in goes to while it waits
// (the one its last queue page's Refresh named), "" when it does not wait.
func (v *Visitor) Next() string {
	if v.next == nil {
		return ""
	}
	return v.next.String()
}

// Cookie is the value of the cookie name the visitor would send to target,
// "" when it holds none.
func (v *Visitor) Cookie(target, name string) string {
	u, err := url.Parse(target)
	if err != nil {
		return ""
	}
	for _, c := range v.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// ErrRejected is Follow's error when the room turns the visitor away.
var ErrRejected = errors.New("visitor: turned away by the waiting room")

// Follow loads target (or, if the visitor is on a queue page already, waits
// for its refresh and loads the address it names) and, while the answer is a
// queue page, waits as long as its Refresh asks and loads the address it
// names, as a browser left on the page does, until the visitor is let in. Every answer is passed to
// seen first (nil: none). A transport error or an error status is retried
// after retry (a person pressing reload), unless retry is 0, when Follow
// returns it. It returns the admitting answer, or ctx's error when ctx ends
// first, or ErrRejected.
func (v *Visitor) Follow(ctx context.Context, target string, retry time.Duration, seen func(Answer)) (Answer, error) {
	for {
		// A visitor on a queue page comes back when the page says, not
		// before: an early check-in gains nothing.
		if v.next != nil && !Sleep(ctx, time.Until(v.due)) {
			return Answer{}, ctx.Err()
		}
		a := v.Get(ctx, target)
		if ctx.Err() != nil {
			return a, ctx.Err()
		}
		if seen != nil {
			seen(a)
		}
		switch a.Outcome {
		case Admitted:
			return a, nil
		case Rejected:
			return a, ErrRejected
		case Queued:
			continue
		}
		if retry <= 0 {
			if a.Err != nil {
				return a, a.Err
			}
			return a, fmt.Errorf("visitor: %s answered %d", target, a.Status)
		}
		if !Sleep(ctx, retry) {
			return a, ctx.Err()
		}
	}
}

// Sleep waits d, or until ctx is done; it reports whether the whole wait
// passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
