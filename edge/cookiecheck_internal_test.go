package edge

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestTakeCookieCheck(t *testing.T) {
	tests := []struct {
		name      string
		target    string
		wantQuery string
		wantURI   string
		want      cookieCheck
	}{
		{name: "a request without the marker is left alone", target: "/a?b=1&c=%20", wantQuery: "b=1&c=%20", wantURI: "/a?b=1&c=%20"},
		{name: "a parameter whose name only contains the marker's is kept", target: "/a?x__waitroom_cc=5", wantQuery: "x__waitroom_cc=5", wantURI: "/a?x__waitroom_cc=5"},
		{name: "the marker alone leaves no query, not an empty one", target: "/a?__waitroom_cc=1900000000", wantURI: "/a", want: cookieCheck{present: true, issued: 1900000000}},
		{name: "the other parameters keep their order and encoding", target: "/a?z=1&__waitroom_cc=7&a=%2F+b", wantQuery: "z=1&a=%2F+b", wantURI: "/a?z=1&a=%2F+b", want: cookieCheck{present: true, issued: 7}},
		{name: "every copy of the marker goes and the first one counts", target: "/?__waitroom_cc=3&__waitroom_cc=9", wantURI: "/", want: cookieCheck{present: true, issued: 3}},
		{name: "a marker that is not a number is present with no time", target: "/?__waitroom_cc=soon", wantURI: "/", want: cookieCheck{present: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			got := takeCookieCheck(r)
			if got != tt.want {
				t.Errorf("check %+v, want %+v", got, tt.want)
			}
			if r.URL.RawQuery != tt.wantQuery || r.RequestURI != tt.wantURI || r.URL.RequestURI() != tt.wantURI {
				t.Errorf("query %q, RequestURI %q, URL %q; want %q and %q", r.URL.RawQuery, r.RequestURI, r.URL.RequestURI(), tt.wantQuery, tt.wantURI)
			}
		})
	}
}

func TestCookieCheckIsCurrentForTheQueuedCookiesLife(t *testing.T) {
	const now = 1_900_000_000
	tests := []struct {
		name string
		cc   cookieCheck
		want bool
	}{
		{name: "issued this second", cc: cookieCheck{present: true, issued: now}, want: true},
		{name: "issued as long ago as a queued cookie lives", cc: cookieCheck{present: true, issued: now - 300}, want: true},
		{name: "issued a second before that", cc: cookieCheck{present: true, issued: now - 301}},
		{name: "issued a minute ahead, by a node whose clock is ahead", cc: cookieCheck{present: true, issued: now + 60}, want: true},
		{name: "issued further ahead", cc: cookieCheck{present: true, issued: now + 61}},
		{name: "unreadable", cc: cookieCheck{present: true}},
		{name: "absent", cc: cookieCheck{issued: now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cc.current(now); got != tt.want {
				t.Errorf("current = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLocalURLIsSafeInAHeaderAndInHTML(t *testing.T) {
	tests := []struct {
		name, target, extra, want string
	}{
		{name: "path and query are kept", target: "/tickets?show=9&seat=a%20b", want: "/tickets?show=9&seat=a%20b"},
		{name: "extra is appended to the query", target: "/tickets?show=9", extra: "k=1", want: "/tickets?show=9&k=1"},
		{name: "extra starts the query when there is none", target: "/", extra: "k=1", want: "/?k=1"},
		{name: "a path starting with two slashes cannot name another host", target: "//evil.example/x", want: "/.//evil.example/x"},
		{name: "raw bytes that must not appear in a URL are escaped", target: "/a?q=\"<b>\"&r='x'", want: "/a?q=%22%3Cb%3E%22&r='x'"},
		{name: "a path with escapes keeps them", target: "/caf%C3%A9/x%2Fy", want: "/caf%C3%A9/x%2Fy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// As the server parses a request's target: "//x" is a path.
			u, err := url.ParseRequestURI(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if got := localURL(u, tt.extra); got != tt.want {
				t.Errorf("localURL = %q, want %q", got, tt.want)
			}
		})
	}
}
