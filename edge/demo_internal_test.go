package edge

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestDemoCrowdFollowsRefreshAsABrowserDoes(t *testing.T) {
	tests := []struct {
		name, refresh string
		wait          time.Duration
		next          string
	}{
		{name: "a plain refresh reloads the page where it is", refresh: "20", wait: 20 * time.Second, next: "http://demo.test/shop?__waitroom_cc=5"},
		{name: "a refresh with a url goes there, resolved against the page", refresh: "17; url=/shop", wait: 17 * time.Second, next: "http://demo.test/shop"},
		{name: "a quoted url is read too", refresh: "3;URL='/a?b=1'", wait: 3 * time.Second, next: "http://demo.test/a?b=1"},
		{name: "a fraction is ignored as a browser ignores it", refresh: "2.7", wait: 2 * time.Second, next: "http://demo.test/shop?__waitroom_cc=5"},
		{name: "a value that is not a refresh means nothing to wait for", refresh: "soon", wait: 0, next: ""},
		{name: "no refresh means nothing to wait for", refresh: "", wait: 0, next: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			here, _ := url.Parse("http://demo.test/shop?__waitroom_cc=5")
			resp := &http.Response{Header: http.Header{}, Request: &http.Request{URL: here}}
			if tt.refresh != "" {
				resp.Header.Set("Refresh", tt.refresh)
			}
			wait, next := followRefresh(resp)
			if wait != tt.wait || next != tt.next {
				t.Errorf("followRefresh(%q) = %v, %q; want %v, %q", tt.refresh, wait, next, tt.wait, tt.next)
			}
		})
	}
}
