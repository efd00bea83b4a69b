package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoomsCodes(t *testing.T) {
	var got []map[string]any
	var paths []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		got = append(got, body)
		switch r.URL.Path {
		case "/rooms/tickets/codes":
			w.Header().Set("Content-Type", "text/csv")
			_, _ = io.WriteString(w, "code,id,group,uses,expires,link\nabc,0001,vip,1,2030-01-01T00:00:00Z,https://x/?__waitroom_code=abc\n")
		default:
			_ = json.NewEncoder(w).Encode([]map[string]any{{"id": "0001", "group": "vip", "uses": 1, "used": 1, "revoked": true}})
		}
	}))
	defer node.Close()
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(args, "--addr", node.URL))
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}

	t.Run("mint posts the group, count, uses and expiry and writes the node's CSV as it is", func(t *testing.T) {
		out := run(t, "rooms", "codes", "mint", "tickets", "--group", "vip", "--count", "500", "--uses", "1", "--expires", "48h")
		if !strings.HasPrefix(out, "code,id,group,uses,expires,link\nabc,") {
			t.Fatalf("output %q", out)
		}
		b := got[len(got)-1]
		if paths[len(paths)-1] != "POST /rooms/tickets/codes" || b["group"] != "vip" || b["count"] != 500.0 || b["uses"] != 1.0 || b["expires"] != "48h0m0s" {
			t.Fatalf("sent %s %v", paths[len(paths)-1], b)
		}
	})
	t.Run("revoke reads the codes of mint's CSV and shows what the node did", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "codes.csv")
		if err := os.WriteFile(file, []byte("code,id,group,uses,expires,link\nabc,0001,vip,1,x,y\ndef,0002,vip,1,x,y\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out := run(t, "rooms", "codes", "revoke", "tickets", "-f", file)
		b := got[len(got)-1]
		if paths[len(paths)-1] != "POST /rooms/tickets/codes/revoke" || len(b["codes"].([]any)) != 2 || b["codes"].([]any)[1] != "def" {
			t.Fatalf("sent %s %v", paths[len(paths)-1], b)
		}
		if !strings.Contains(out, "0001") || !strings.Contains(out, "true") {
			t.Fatalf("output %q", out)
		}
	})
	t.Run("status sends the codes given as arguments", func(t *testing.T) {
		run(t, "rooms", "codes", "status", "tickets", "abc")
		if b := got[len(got)-1]; paths[len(paths)-1] != "POST /rooms/tickets/codes/status" || b["codes"].([]any)[0] != "abc" {
			t.Fatalf("sent %s %v", paths[len(paths)-1], b)
		}
	})
}
