package main

// The shipped deployment files (docs/deploy), checked against the binary:
// every argument must parse with serve's real flags, every port, probe and
// environment variable must be one the node really uses, so that a renamed
// flag or a moved port fails here and not in an operator's cluster.

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
)

const deployDir = "../../docs/deploy"

// leaveAllowance is the most a node's leave takes after its requests in
// flight: the hand-over to its peers (one TCP timeout, 10s on LAN timings,
// for a peer that died unnoticed), the wait for its broadcasts (three
// gossip rounds) and memberlist's leave (2s).
const leaveAllowance = 13 * time.Second

// serveFlags parses args (after the "serve" word) with the serve command's
// real flag set, and returns the command so its flags can be read.
func serveFlags(t *testing.T, args []string) *cobra.Command {
	t.Helper()
	serve, rest, err := newRoot().Find(args)
	if err != nil || serve.Name() != "serve" {
		t.Fatalf("%v is not the serve command: %v", args, err)
	}
	if err := serve.ParseFlags(rest); err != nil {
		t.Fatalf("serve %v: %v", rest, err)
	}
	if pos := serve.Flags().Args(); len(pos) > 0 {
		t.Fatalf("serve takes no arguments, got %v", pos)
	}
	return serve
}

// flagPort is the port of an address flag: the flag's value when given,
// else what the config file or the default says.
func flagPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return n
}

// nodeConfig is the config a node of a deployment runs with: the config
// file (read from where the deployment keeps it) with the flags applied, as
// serve does, so it is validated as serve validates it.
func nodeConfig(t *testing.T, serve *cobra.Command, file []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(file)
	if err != nil {
		t.Fatalf("config file: %v", err)
	}
	o := overridesOf(t, serve)
	o.Set = func(name string) bool { return serve.Flags().Changed(name) }
	if err := o.Apply(cfg); err != nil {
		t.Fatalf("config with the flags: %v", err)
	}
	return cfg
}

// overridesOf reads back the flag values serve parsed, by the flags'
// names, into the Overrides serve would apply.
func overridesOf(t *testing.T, serve *cobra.Command) config.Overrides {
	t.Helper()
	f := serve.Flags()
	str := func(n string) string {
		v, err := f.GetString(n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dur := func(n string) time.Duration {
		v, err := f.GetDuration(n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seeds, err := f.GetStringArray("seed")
	if err != nil {
		t.Fatal(err)
	}
	return config.Overrides{
		Node: str("node"), Listen: str("listen"), Admin: str("admin"), Gossip: str("gossip"),
		Advertise: str("advertise"), Seeds: seeds, GossipProfile: str("gossip-profile"),
		GossipKeyFile: str("gossip-key-file"), CookieKeyFile: str("cookie-key-file"),
		LogLevel: str("log-level"), LogFormat: str("log-format"),
		ShutdownTimeout: dur("shutdown-timeout"), ReadyAloneAfter: dur("ready-alone-after"),
	}
}

// adminPaths answers whether the admin endpoint serves each path to an
// unauthenticated probe (anything but 404, 401 and 421 counts), asked of a
// real node's admin handler.
func adminServes(t *testing.T, paths ...string) map[string]bool {
	t.Helper()
	cfg := &config.Config{Node: "probe", Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Gossip: "127.0.0.1:0", GossipProfile: "local"}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := agent.New(cfg, agent.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.AdminHandler()
	out := map[string]bool{}
	for _, p := range paths {
		rec := httptest.NewRecorder()
		// A probe comes from outside, with the pod's address as Host.
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://10.1.2.3:9090"+p, nil))
		out[p] = rec.Code == http.StatusOK || rec.Code == http.StatusServiceUnavailable
	}
	return out
}

var envRef = regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)

// Kubernetes objects, as far as the test reads them.
type (
	k8sMeta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	k8sPort struct {
		Name          string `yaml:"name"`
		Port          int    `yaml:"port"`
		ContainerPort int    `yaml:"containerPort"`
		TargetPort    string `yaml:"targetPort"`
		Protocol      string `yaml:"protocol"`
	}
	k8sProbe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	k8sEnv struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	k8sContainer struct {
		Image          string    `yaml:"image"`
		Args           []string  `yaml:"args"`
		Command        []string  `yaml:"command"`
		Env            []k8sEnv  `yaml:"env"`
		Ports          []k8sPort `yaml:"ports"`
		ReadinessProbe k8sProbe  `yaml:"readinessProbe"`
		LivenessProbe  k8sProbe  `yaml:"livenessProbe"`
		Lifecycle      struct {
			PreStop struct {
				Sleep struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
		SecurityContext struct {
			ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
	}
	k8sObject struct {
		Kind     string            `yaml:"kind"`
		Metadata k8sMeta           `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
		Spec     struct {
			// Service
			ClusterIP                string `yaml:"clusterIP"`
			PublishNotReadyAddresses bool   `yaml:"publishNotReadyAddresses"`
			// A Service's selector is its labels; a StatefulSet's and a
			// budget's hold them under matchLabels (see labelsOf).
			Selector map[string]any `yaml:"selector"`
			Ports    []k8sPort      `yaml:"ports"`
			// StatefulSet
			Replicas            int    `yaml:"replicas"`
			ServiceName         string `yaml:"serviceName"`
			PodManagementPolicy string `yaml:"podManagementPolicy"`
			// PodDisruptionBudget
			MaxUnavailable int `yaml:"maxUnavailable"`
			Template       struct {
				Metadata k8sMeta `yaml:"metadata"`
				Spec     struct {
					TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
					SecurityContext               struct {
						RunAsNonRoot bool `yaml:"runAsNonRoot"`
						RunAsUser    int  `yaml:"runAsUser"`
					} `yaml:"securityContext"`
					Containers []k8sContainer `yaml:"containers"`
					Volumes    []struct {
						Name      string `yaml:"name"`
						ConfigMap *struct {
							Name string `yaml:"name"`
						} `yaml:"configMap"`
						Secret *struct {
							SecretName string `yaml:"secretName"`
						} `yaml:"secret"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
)

// loadKubernetes reads every manifest the kustomization lists, by kind and
// name.
func loadKubernetes(t *testing.T) map[string]k8sObject {
	t.Helper()
	dir := filepath.Join(deployDir, "kubernetes")
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, filepath.Join(dir, "kustomization.yaml"), &kust)
	objs := map[string]k8sObject{}
	for _, r := range kust.Resources {
		var o k8sObject
		readYAML(t, filepath.Join(dir, r), &o)
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	return objs
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(false)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestKubernetesManifests(t *testing.T) {
	checkRing(t, loadKubernetes(t))
}

// only returns the one object of kind among objs.
func only(t *testing.T, objs map[string]k8sObject, kind string) k8sObject {
	t.Helper()
	var found []k8sObject
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s among %v, want one", len(found), kind, keysOf(objs))
	}
	return found[0]
}

// checkRing holds a ring's Kubernetes objects (the kustomize manifests, or
// what the Helm chart renders) to the binary: the StatefulSet's arguments
// parse with serve's real flags, the config file it mounts is valid, and
// the ports, probes, environment, Services, budget and grace period are
// the ones the node really uses.
func checkRing(t *testing.T, objs map[string]k8sObject) {
	t.Helper()
	get := func(key string) k8sObject {
		o, ok := objs[key]
		if !ok {
			t.Fatalf("no %s among the manifests (have %v)", key, keysOf(objs))
		}
		return o
	}
	sts := only(t, objs, "StatefulSet")
	pod := sts.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	env := map[string]k8sEnv{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	// Kubernetes substitutes $(NAME) in args from the container's env.
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = envRef.ReplaceAllStringFunc(a, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			if _, ok := env[name]; !ok {
				t.Errorf("argument %q refers to $(%s), which the container does not define", a, name)
			}
			return map[string]string{"POD_IP": "10.1.2.3", "POD_NAMESPACE": "default"}[name]
		})
	}
	if len(c.Command) > 0 {
		t.Errorf("command %v replaces the image's entrypoint; give args only", c.Command)
	}
	serve := serveFlags(t, args)

	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	configPath, _ := serve.Flags().GetString("config")
	var configFile []byte
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			if dir, ok := mounts[v.Name]; ok && filepath.Dir(configPath) == dir {
				configFile = []byte(get("ConfigMap/" + v.ConfigMap.Name).Data[filepath.Base(configPath)])
			}
		}
	}
	if configFile == nil {
		t.Fatalf("--config=%s is not a file of a ConfigMap as mounted", configPath)
	}
	cfg := nodeConfig(t, serve, configFile)

	t.Run("every environment variable is one the node reads or the arguments use", func(t *testing.T) {
		for name, e := range env {
			used := slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "$("+name+")") })
			switch {
			case name == agent.CookieKeysEnv || name == agent.GossipKeyEnv:
				if e.ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s must come from a Secret", name)
				}
			case !used:
				t.Errorf("env %s is neither read by the node nor used in the arguments", name)
			}
		}
		for name, file := range map[string]string{agent.CookieKeysEnv: cfg.CookieKeyFile, agent.GossipKeyEnv: cfg.GossipKeyFile} {
			if _, ok := env[name]; !ok && file == "" {
				t.Errorf("neither %s nor a key file: a ring needs the same keys on every node", name)
			}
		}
	})

	ports := map[string]k8sPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	t.Run("the container ports are the node's listeners", func(t *testing.T) {
		for _, want := range []struct {
			name, proto, addr string
		}{
			{"public", "TCP", cfg.Listen},
			{"admin", "TCP", cfg.Admin},
			{"gossip-tcp", "TCP", cfg.Gossip},
			{"gossip-udp", "UDP", cfg.Gossip},
		} {
			p, ok := ports[want.name]
			if !ok || p.ContainerPort != flagPort(t, want.addr) || p.Protocol != want.proto {
				t.Errorf("container port %s = %+v, want %s %d (from %q)", want.name, p, want.proto, flagPort(t, want.addr), want.addr)
			}
		}
		if h, _, _ := net.SplitHostPort(cfg.Admin); h != "" && h != "0.0.0.0" && h != "::" {
			t.Errorf("admin listens on %q: the kubelet's probes cannot reach it", cfg.Admin)
		}
	})

	t.Run("the probes ask the admin listener's open health endpoints", func(t *testing.T) {
		served := adminServes(t, "/healthz", "/readyz")
		for what, pr := range map[string]k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if pr.HTTPGet.Port != "admin" {
				t.Errorf("%s probe on port %q, want the admin port", what, pr.HTTPGet.Port)
			}
			if !served[pr.HTTPGet.Path] {
				t.Errorf("%s probe path %q is not one the admin endpoint answers without a token", what, pr.HTTPGet.Path)
			}
		}
		if c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("readiness on %q, want /readyz (which waits for the ring and turns not ready on shutdown)", c.ReadinessProbe.HTTPGet.Path)
		}
	})

	t.Run("every node's seed is the headless Service, which lists pods before they are ready", func(t *testing.T) {
		gs := get("Service/" + sts.Spec.ServiceName)
		if gs.Spec.ClusterIP != "None" || !gs.Spec.PublishNotReadyAddresses {
			t.Errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v; want a headless Service that publishes not-ready pods", gs.Metadata.Name, gs.Spec.ClusterIP, gs.Spec.PublishNotReadyAddresses)
		}
		if len(cfg.Seeds) != 1 {
			t.Fatalf("seeds %v, want the one headless Service name", cfg.Seeds)
		}
		host, port, _ := net.SplitHostPort(cfg.Seeds[0])
		if first, _, _ := strings.Cut(host, "."); first != gs.Metadata.Name {
			t.Errorf("seed %q is not the Service %s", cfg.Seeds[0], gs.Metadata.Name)
		}
		if port != strconv.Itoa(flagPort(t, cfg.Gossip)) {
			t.Errorf("seed port %s, gossip listens on %s", port, cfg.Gossip)
		}
		for _, p := range gs.Spec.Ports {
			if cp, ok := ports[p.TargetPort]; !ok || p.Port != cp.ContainerPort || p.Protocol != cp.Protocol {
				t.Errorf("Service port %+v does not match the container port %q", p, p.TargetPort)
			}
		}
		if !matches(labelsOf(gs.Spec.Selector), pod.Metadata.Labels) {
			t.Errorf("Service selector %v misses the pods %v", gs.Spec.Selector, pod.Metadata.Labels)
		}
		if sts.Spec.PodManagementPolicy != "Parallel" {
			t.Errorf("podManagementPolicy %q: pods started in order would wait for each other (a node is ready once it met a peer)", sts.Spec.PodManagementPolicy)
		}
	})

	t.Run("the visitors' Service sends to the public port", func(t *testing.T) {
		n := 0
		for _, o := range objs {
			if o.Kind != "Service" || o.Metadata.Name == sts.Spec.ServiceName {
				continue
			}
			n++
			for _, p := range o.Spec.Ports {
				if p.TargetPort != "public" {
					t.Errorf("Service %s port %+v does not target the public port", o.Metadata.Name, p)
				}
			}
			if !matches(labelsOf(o.Spec.Selector), pod.Metadata.Labels) {
				t.Errorf("Service %s selector %v misses the pods %v", o.Metadata.Name, o.Spec.Selector, pod.Metadata.Labels)
			}
		}
		if n != 1 {
			t.Errorf("%d Services for visitors besides the gossip one, want 1", n)
		}
	})

	t.Run("the grace period covers the pre-stop pause, the drain and the leave", func(t *testing.T) {
		drain := time.Duration(cfg.ShutdownTimeout)
		if drain == 0 {
			drain = config.DefaultShutdownTimeout
		}
		need := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second + drain + leaveAllowance
		if got := time.Duration(pod.Spec.TerminationGracePeriodSeconds) * time.Second; got < need {
			t.Errorf("terminationGracePeriodSeconds %v < pre-stop %ds + shutdown_timeout %v + leave %v", got, c.Lifecycle.PreStop.Sleep.Seconds, drain, leaveAllowance)
		}
	})

	t.Run("a disruption budget keeps all but one node", func(t *testing.T) {
		pdb := only(t, objs, "PodDisruptionBudget")
		if pdb.Spec.MaxUnavailable != 1 || !matches(labelsOf(pdb.Spec.Selector), pod.Metadata.Labels) {
			t.Errorf("budget maxUnavailable %d selecting %v; want 1, selecting the pods %v", pdb.Spec.MaxUnavailable, pdb.Spec.Selector, pod.Metadata.Labels)
		}
	})

	t.Run("the pods run as a non-root user on a read-only root", func(t *testing.T) {
		sc := pod.Spec.SecurityContext
		if !sc.RunAsNonRoot || sc.RunAsUser == 0 || !c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("security context %+v, read-only root %v", sc, c.SecurityContext.ReadOnlyRootFilesystem)
		}
		if cfg.AdminTokenFile == "" || !slices.Contains(mountPaths(mounts), filepath.Dir(cfg.AdminTokenFile)) {
			t.Errorf("admin_token_file %q is not in a mounted Secret (mounts %v)", cfg.AdminTokenFile, mounts)
		}
	})
}

func mountPaths(m map[string]string) []string {
	var out []string
	for _, p := range m {
		out = append(out, p)
	}
	return out
}

// labelsOf is the labels a selector asks for: a Service's flat map, or
// the matchLabels of a label selector.
func labelsOf(sel map[string]any) map[string]string {
	if ml, ok := sel["matchLabels"].(map[string]any); ok {
		sel = ml
	}
	out := map[string]string{}
	for k, v := range sel {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestComposeFile(t *testing.T) {
	dir := filepath.Join(deployDir, "compose")
	var compose struct {
		Services map[string]struct {
			Image           string   `yaml:"image"`
			Hostname        string   `yaml:"hostname"`
			Command         []string `yaml:"command"`
			Secrets         []string `yaml:"secrets"`
			Volumes         []string `yaml:"volumes"`
			StopGracePeriod string   `yaml:"stop_grace_period"`
		} `yaml:"services"`
		Secrets map[string]struct {
			File string `yaml:"file"`
		} `yaml:"secrets"`
	}
	readYAML(t, filepath.Join(dir, "compose.yaml"), &compose)
	nginx, err := os.ReadFile(filepath.Join(dir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for name, s := range compose.Services {
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			continue
		}
		nodes = append(nodes, name)
	}
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Fatalf("waitroom nodes %v, want three", nodes)
	}
	for _, name := range nodes {
		s := compose.Services[name]
		t.Run(name+" runs with the binary's flags, its keys from secrets", func(t *testing.T) {
			serve := serveFlags(t, s.Command)
			configPath, _ := serve.Flags().GetString("config")
			var file []byte
			for _, v := range s.Volumes {
				src, dst, _ := strings.Cut(v, ":")
				dst, _, _ = strings.Cut(dst, ":")
				if dst == configPath {
					if file, err = os.ReadFile(filepath.Join(dir, src)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if file == nil {
				t.Fatalf("--config=%s is not a mounted file", configPath)
			}
			cfg := nodeConfig(t, serve, file)
			for field, path := range map[string]string{"cookie key": cfg.CookieKeyFile, "gossip key": cfg.GossipKeyFile} {
				secret, ok := strings.CutPrefix(path, "/run/secrets/")
				if !ok || !slices.Contains(s.Secrets, secret) || compose.Secrets[secret].File == "" {
					t.Errorf("%s file %q is not one of the service's secrets %v", field, path, s.Secrets)
				}
			}
			for _, seed := range cfg.Seeds {
				host, port, _ := net.SplitHostPort(seed)
				if _, ok := compose.Services[host]; !ok || host == name || port != strconv.Itoa(flagPort(t, cfg.Gossip)) {
					t.Errorf("seed %q is not another node's gossip address", seed)
				}
			}
			if len(cfg.Seeds) != len(nodes)-1 {
				t.Errorf("seeds %v, want the other %d nodes", cfg.Seeds, len(nodes)-1)
			}
			upstream := fmt.Sprintf("server %s:%d", name, flagPort(t, cfg.Listen))
			if !strings.Contains(string(nginx), upstream) {
				t.Errorf("nginx.conf has no %q", upstream)
			}
			grace, err := time.ParseDuration(s.StopGracePeriod)
			drain := time.Duration(cfg.ShutdownTimeout)
			if err != nil || grace < drain+leaveAllowance {
				t.Errorf("stop_grace_period %q < shutdown_timeout %v + leave %v", s.StopGracePeriod, drain, leaveAllowance)
			}
		})
	}
}
