package edge

import (
	"regexp"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// MetricNames lists the names of every metric the node's registry
// describes, whether or not it has a value yet (a vector without labels
// seen, a peer's delay before any peer): what GET /metrics can expose.
// Test-only.
func (s *Server) MetricNames() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		s.metrics.reg.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
