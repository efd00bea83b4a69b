package edge_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// The monitoring files shipped in docs/monitoring: the Prometheus alert
// rules and the Grafana dashboard.
const (
	alertRulesFile = "../docs/monitoring/alerts.yml"
	grafanaFile    = "../docs/monitoring/grafana-dashboard.json"
)

// promMetricName finds the node's metrics in a PromQL expression.
var promMetricName = regexp.MustCompile(`\bwaitroom_[a-z0-9_]+`)

// prometheusOwn are the series Prometheus makes itself for each target.
var prometheusOwn = map[string]bool{"up": true}

// TestMonitoringNamesOnlyMetricsTheNodeExports: every metric the alert
// rules and the Grafana dashboard query is one the node's registry
// describes, so that a renamed metric cannot silently leave an alert that
// never fires or a panel that stays empty.
func TestMonitoringNamesOnlyMetricsTheNodeExports(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, clusterOpts{})
	have := c.Nodes[0].Server.MetricNames()
	if !slices.Contains(have, "waitroom_room_active_users") {
		t.Fatalf("the registry describes %v: the room metrics are missing, so the check below would mean nothing", have)
	}

	files := map[string][]string{
		alertRulesFile: alertExpressions(t),
		grafanaFile:    grafanaExpressions(t),
	}
	for file, exprs := range files {
		t.Run(file+" names only exported metrics", func(t *testing.T) {
			if len(exprs) < 5 {
				t.Fatalf("%d expressions in %s, want the file's queries", len(exprs), file)
			}
			named := 0
			for _, e := range exprs {
				for _, name := range promMetricName.FindAllString(e, -1) {
					named++
					if !slices.Contains(have, name) {
						t.Errorf("%s queries %s, which the node does not export (expression %q)", file, name, e)
					}
				}
			}
			if named == 0 {
				t.Errorf("%s names no waitroom metric", file)
			}
		})
	}
	t.Run("the alert rules name only Prometheus's own series besides the node's", func(t *testing.T) {
		ident := regexp.MustCompile(`(?:^|[^a-z_{,])([a-z_][a-z0-9_]*)\{`)
		for _, e := range files[alertRulesFile] {
			for _, m := range ident.FindAllStringSubmatch(e, -1) {
				if name := m[1]; !promMetricName.MatchString(name) && !prometheusOwn[name] {
					t.Errorf("alert expression %q selects %s, neither a node metric nor a Prometheus series", e, name)
				}
			}
		}
	})
}

// TestAlertRulesPassPromtool: promtool, Prometheus's own checker, accepts
// the alert rules (YAML, PromQL and templates). Skipped when promtool is
// missing unless WAITROOM_REQUIRE_PROMTOOL is set, as CI does (Debian's
// prometheus package ships it).
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("WAITROOM_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool not found and WAITROOM_REQUIRE_PROMTOOL is set: %v", err)
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	out, err := exec.Command(bin, "check", "rules", alertRulesFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", alertRulesFile, err, out)
	}
	t.Logf("promtool: %s", out)
}

// alertExpressions reads every rule's expression from the alert rules.
func alertExpressions(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	var out []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

// grafanaExpressions reads every panel query and template variable query
// from the Grafana dashboard.
func grafanaExpressions(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	var out []string
	for _, p := range doc.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", grafanaFile, p.Title)
		}
		for _, q := range p.Targets {
			out = append(out, q.Expr)
		}
	}
	for _, v := range doc.Templating.List {
		out = append(out, v.Query)
	}
	return out
}
