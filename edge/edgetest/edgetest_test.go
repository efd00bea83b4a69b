package edgetest_test

import (
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// get sends a GET with the given header to u and returns the body.
func get(t *testing.T, u string, hdr http.Header) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hdr != nil {
		req.Header = hdr
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheOriginLogsWhatItServed(t *testing.T) {
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "site") })
	cases := []struct {
		name     string
		opts     []edgetest.Option
		body     string   // what GET /a?b=1 answers
		uris     []string // what the origin logs
		visitors []string // the visitor of each logged request
	}{
		{"its own page, each request logged", nil, "origin: /a", []string{"/a?b=1"}, []string{""}},
		{"the visitor named by the header it was given", []edgetest.Option{edgetest.VisitorHeader("X-Visitor")}, "origin: /a", []string{"/a?b=1"}, []string{"v1"}},
		{"another site's answer, still logged", []edgetest.Option{edgetest.Serving(site)}, "site", []string{"/a?b=1"}, []string{""}},
		{"nothing logged when unrecorded", []edgetest.Option{edgetest.Unrecorded(), edgetest.Serving(site)}, "site", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := edgetest.NewOrigin(t, c.opts...)
			before := time.Now()
			if got := get(t, o.URL+"/a?b=1", http.Header{"X-Visitor": {"v1"}}); got != c.body {
				t.Errorf("answered %q; want %q", got, c.body)
			}
			if got := o.URIs(); !slices.Equal(got, c.uris) {
				t.Errorf("URIs %q; want %q", got, c.uris)
			}
			if o.Hits() != len(c.uris) {
				t.Errorf("%d hits; want %d", o.Hits(), len(c.uris))
			}
			var visitors []string
			for _, h := range o.Log() {
				visitors = append(visitors, h.Visitor)
				if h.At.Before(before) || h.At.After(time.Now()) {
					t.Errorf("a request logged at %v, outside the test's request", h.At)
				}
			}
			if !slices.Equal(visitors, c.visitors) {
				t.Errorf("visitors %q; want %q", visitors, c.visitors)
			}
		})
	}
}

func TestAToolsClusterServesARingAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ring of two nodes")
	}
	c, err := edgetest.OpenCluster(edgetest.ClusterOptions{
		Rooms:     []config.Room{edgetest.Room("shop", 1000, 1000)},
		WallClock: true,
		Serve:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c.Close()
		}
	})
	if err := c.Grow(2); err != nil {
		t.Fatal(err)
	}
	t.Run("its nodes form one ring and let visitors through to its own origin", func(t *testing.T) {
		for _, n := range c.Nodes {
			if got := n.Members(); got != 2 {
				t.Errorf("%s sees %d members; want 2", n.Name, got)
			}
			if got := get(t, n.URL()+"/", nil); got != "origin: /" {
				t.Errorf("%s answered %q; want the origin's page", n.Name, got)
			}
		}
		if got := c.Origin.Hits(); got != 2 {
			t.Errorf("the origin served %d requests; want 2", got)
		}
	})
	t.Run("Close stops every node and removes what the cluster made", func(t *testing.T) {
		key := c.KeyFile
		closed = true
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			if n.Up {
				t.Errorf("%s is still up", n.Name)
			}
		}
		if _, err := os.Stat(key); !os.IsNotExist(err) {
			t.Errorf("the cookie key file is still there: %v", err)
		}
	})
}
