package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// helmChart is the shipped Helm chart.
var helmChart = filepath.Join(deployDir, "helm", "waitroom")

// helmBin finds helm, or skips the test (fails it under
// WAITROOM_REQUIRE_HELM, as CI sets once it has installed helm).
func helmBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("WAITROOM_REQUIRE_HELM") != "" {
			t.Fatalf("helm not found and WAITROOM_REQUIRE_HELM is set: %v", err)
		}
		t.Skip("helm not installed (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	}
	return bin
}

// helmRun runs helm with args and returns what it printed.
func helmRun(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var out, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.Bytes()
}

// decodeObjects reads a stream of YAML documents into objects by kind and
// name.
func decodeObjects(t *testing.T, data []byte) map[string]k8sObject {
	t.Helper()
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered chart: %v", err)
		}
		if o.Kind != "" {
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objs
}

// serviceMonitor is a Prometheus Operator ServiceMonitor, as far as the
// test reads it.
type serviceMonitor struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port          string `yaml:"port"`
			Path          string `yaml:"path"`
			Authorization struct {
				Credentials struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"credentials"`
			} `yaml:"authorization"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

// decodeMonitors reads the ServiceMonitors of a stream of YAML documents.
func decodeMonitors(t *testing.T, data []byte) []serviceMonitor {
	t.Helper()
	var out []serviceMonitor
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var m serviceMonitor
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("rendered chart: %v", err)
		}
		if m.Kind == "ServiceMonitor" {
			out = append(out, m)
		}
	}
}

// TestHelmChart lints the chart and renders it with its default values and
// with others, and holds each rendering to the binary as the kustomize
// manifests are held (checkRing).
func TestHelmChart(t *testing.T) {
	bin := helmBin(t)
	cases := []struct {
		name string
		set  []string
		want func(t *testing.T, objs map[string]k8sObject, monitors []serviceMonitor)
	}{
		{
			name: "the default values render a ring of three the node accepts",
			want: func(t *testing.T, objs map[string]k8sObject, _ []serviceMonitor) {
				if n := only(t, objs, "StatefulSet").Spec.Replicas; n != 3 {
					t.Errorf("%d replicas, want 3", n)
				}
				for key := range objs {
					if strings.HasPrefix(key, "ServiceMonitor/") || strings.HasSuffix(key, "-dashboard") {
						t.Errorf("%s rendered though it is off by default", key)
					}
				}
			},
		},
		{
			name: "other ports, replicas, timings and settings render a ring the node accepts",
			set: []string{
				"replicas=5", "ports.public=8000", "ports.admin=9191", "ports.gossip=7000",
				"shutdownTimeoutSeconds=30", "preStopSeconds=0", "extraConfig.stale_state=closed",
				"logLevel=debug", "serviceMonitor.enabled=true", "grafanaDashboard.enabled=true",
				"rooms[0].name=tickets", "rooms[0].total_active_users=50", "rooms[0].new_users_per_minute=10",
			},
			want: func(t *testing.T, objs map[string]k8sObject, monitors []serviceMonitor) {
				if n := only(t, objs, "StatefulSet").Spec.Replicas; n != 5 {
					t.Errorf("%d replicas, want 5", n)
				}
				if len(monitors) != 1 {
					t.Fatalf("%d ServiceMonitors, want 1", len(monitors))
				}
				var dash k8sObject
				for _, o := range objs {
					if o.Kind == "ConfigMap" && strings.HasSuffix(o.Metadata.Name, "-dashboard") {
						dash = o
					}
				}
				want, err := os.ReadFile(filepath.Join(deployDir, "..", "monitoring", "grafana-dashboard.json"))
				if err != nil {
					t.Fatal(err)
				}
				if strings.TrimSpace(dash.Data["waitroom.json"]) != strings.TrimSpace(string(want)) {
					t.Errorf("the chart's dashboard is not docs/monitoring/grafana-dashboard.json (copy it into %s/dashboards/waitroom.json)", helmChart)
				}
				sm := monitors[0]
				gossip := objs["Service/"+only(t, objs, "StatefulSet").Spec.ServiceName]
				if !matches(sm.Spec.Selector.MatchLabels, gossip.Metadata.Labels) || !slices.ContainsFunc(gossip.Spec.Ports, func(p k8sPort) bool { return p.Name == sm.Spec.Endpoints[0].Port }) {
					t.Errorf("the ServiceMonitor scrapes port %q of Services %v, which the gossip Service %s (ports %v) is not", sm.Spec.Endpoints[0].Port, sm.Spec.Selector.MatchLabels, gossip.Metadata.Name, gossip.Spec.Ports)
				}
				if ep := sm.Spec.Endpoints[0]; ep.Path != "/metrics" || ep.Authorization.Credentials.Name != "waitroom-admin" {
					t.Errorf("the ServiceMonitor scrapes %q with the token of %q, want /metrics with the admin token's Secret", ep.Path, ep.Authorization.Credentials.Name)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			helmRun(t, bin, append([]string{"lint", "--strict", helmChart}, args...)...)
			out := helmRun(t, bin, append([]string{"template", "shop", helmChart}, args...)...)
			objs := decodeObjects(t, out)
			checkRing(t, objs)
			c.want(t, objs, decodeMonitors(t, out))
		})
	}
}
