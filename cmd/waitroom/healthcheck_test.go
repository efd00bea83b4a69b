package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable) // draining
		default:
			http.NotFound(w, r)
		}
	}))
	defer node.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name string
		args []string
		env  string // WAITROOM_ADDR
		ok   bool
	}{
		{"a live node passes", []string{"healthcheck", "--addr", node.URL}, "", true},
		{"a node not ready fails --ready", []string{"healthcheck", "--ready", "--addr", node.URL}, "", false},
		{"a node that does not answer fails", []string{"healthcheck", "--addr", closed.URL}, "", false},
		{"the node is found by WAITROOM_ADDR without a flag", []string{"healthcheck"}, node.URL, true},
		{"a bare host and port is an address", []string{"healthcheck", "--addr", strings.TrimPrefix(node.URL, "http://")}, "", true},
		{"the flag wins over WAITROOM_ADDR", []string{"healthcheck", "--addr", node.URL}, closed.URL, true},
		{"the old --admin flag is still taken", []string{"healthcheck", "--admin", node.URL}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WAITROOM_ADDR", tc.env)
			root := newRoot()
			root.SetErr(io.Discard)
			root.SetArgs(tc.args)
			err := root.ExecuteContext(context.Background())
			if (err == nil) != tc.ok {
				t.Errorf("error %v; want ok = %v", err, tc.ok)
			}
		})
	}
	t.Run("the Containerfile's HEALTHCHECK is a command the binary accepts", func(t *testing.T) {
		b, err := os.ReadFile("../../Containerfile")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^HEALTHCHECK .*CMD (\[.*\])$`).FindSubmatch(b)
		if m == nil {
			t.Fatal("no HEALTHCHECK ... CMD [...] line in the Containerfile")
		}
		var args []string
		if err := json.Unmarshal(m[1], &args); err != nil || len(args) < 2 || args[0] != "/waitroom" {
			t.Fatalf("HEALTHCHECK CMD %s: want [\"/waitroom\", \"healthcheck\", ...] (%v)", m[1], err)
		}
		cmd, rest, err := newRoot().Find(args[1:])
		if err != nil || cmd.Name() != "healthcheck" {
			t.Fatalf("%v is not the healthcheck command: %v", args[1:], err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("healthcheck %v: %v", rest, err)
		}
	})
}
