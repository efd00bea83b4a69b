package edge

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/waitroom/waitroom/edge/canon"
)

func TestCanonicaliseRewritesTheRequest(t *testing.T) {
	tests := []struct {
		name, target, host string
		wantURI, wantHost  string
		wantKey            string
	}{
		{name: "dot segments and slashes are resolved in what the proxy sends", target: "//static/./a/../x.css?v=1", host: "VIP.example.com.",
			wantURI: "/static/x.css?v=1", wantHost: "vip.example.com", wantKey: "/static/x.css"},
		{name: "escapes keep their meaning in what the proxy sends", target: "/caf%c3%a9/a%3Fb", host: "vip.example.com:8080",
			wantURI: "/caf%C3%A9/a%3Fb", wantHost: "vip.example.com:8080", wantKey: "/caf%C3%A9/a%3Fb"},
		{name: "parameters reach the origin but not the key", target: "/shop;jsessionid=1/x", host: "[::1]",
			wantURI: "/shop;jsessionid=1/x", wantHost: "[::1]", wantKey: "/shop/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			r.Host = tt.host
			key, err := canonicalise(r)
			if err != nil {
				t.Fatal(err)
			}
			if key != tt.wantKey || r.URL.RequestURI() != tt.wantURI || r.RequestURI != tt.wantURI || r.Host != tt.wantHost {
				t.Errorf("key %q, URL %q, RequestURI %q, host %q; want %q, %q, %q", key, r.URL.RequestURI(), r.RequestURI, r.Host, tt.wantKey, tt.wantURI, tt.wantHost)
			}
			if dec, _ := url.PathUnescape(r.URL.EscapedPath()); dec != r.URL.Path {
				t.Errorf("Path %q does not decode from %q", r.URL.Path, r.URL.EscapedPath())
			}
		})
	}
	t.Run("a request without a single meaning is left as it was", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/static/..%2Fshop/", nil)
		r.Host = "VIP.example.com"
		if _, err := canonicalise(r); !errors.Is(err, canon.ErrPathSeparator) {
			t.Fatalf("err %v, want an encoded slash refused", err)
		}
		if r.Host != "VIP.example.com" || r.URL.RawPath != "/static/..%2Fshop/" {
			t.Errorf("the request was changed: host %q, path %q", r.Host, r.URL.RawPath)
		}
	})
}

func TestRouteMatches(t *testing.T) {
	tests := []struct {
		name, key, path string
		want            bool
	}{
		{"a path covers itself", "/shop/", "/shop/", true},
		{"a path covers what is below it", "/shop/x", "/shop/", true},
		{"a path ending in a slash covers itself without it", "/shop", "/shop/", true},
		{"a path covers its implied wildcard", "/shopping", "/shop", true},
		{"a longer name is not below a path ending in a slash", "/shopping", "/shop/", false},
		{"the root covers everything", "/x", "/", true},
		{"case differs", "/SHOP/", "/shop/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routeMatches(tt.key, tt.path); got != tt.want {
				t.Errorf("routeMatches(%q, %q) = %v, want %v", tt.key, tt.path, got, tt.want)
			}
		})
	}
}

func TestCanonicalRequestsDoNotAllocate(t *testing.T) {
	r := httptest.NewRequest("GET", "/shop/item?x=1", nil)
	r.Host = "vip.example.com:8080"
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := canonicalise(r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("canonicalising a canonical request allocates %v times", allocs)
	}
}
