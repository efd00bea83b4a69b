package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// TestContainerImage builds the Containerfile's image from a binary built
// here (the variant for machines that reach no image registry) with podman,
// and checks what the image promises: a static binary, a numeric non-root
// user, nothing but the binary and CA certificates (no shell), the node's
// ports exposed, and a default command the binary accepts.
func TestContainerImage(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		msg := "podman is not installed (apt-get install podman, as .ci/run does): the container image is not built or checked"
		if os.Getenv("WAITROOM_REQUIRE_PODMAN") != "" {
			t.Fatal(msg + "; but WAITROOM_REQUIRE_PODMAN is set")
		}
		t.Skip(msg)
	}
	certs := "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(certs); err != nil {
		t.Skipf("no CA bundle at %s to put in the image: %v", certs, err)
	}
	ctx := t.TempDir()
	out := filepath.Join(ctx, "out")
	if err := os.MkdirAll(filepath.Join(out, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(out, "waitroom")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	copyFile(t, certs, filepath.Join(out, "ca-certificates.crt"))
	copyFile(t, "../../Containerfile", filepath.Join(ctx, "Containerfile"))

	t.Run("the binary is static", func(t *testing.T) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary asks for a dynamic loader; it would not run on an empty image")
			}
		}
	})

	tag := fmt.Sprintf("localhost/waitroom-test:%d", time.Now().UnixNano())
	run := func(args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(podman, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.Bytes()
	}
	// The docker format keeps the HEALTHCHECK, which the OCI format drops.
	run("build", "--quiet", "--format", "docker", "--build-arg", "BINARY_FROM=host", "-t", tag, ctx)
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })

	var inspect []struct {
		Config struct {
			User         string              `json:"User"`
			ExposedPorts map[string]struct{} `json:"ExposedPorts"`
			Entrypoint   []string            `json:"Entrypoint"`
			Cmd          []string            `json:"Cmd"`
		} `json:"Config"`
		// podman shows the health check beside Config, not in it.
		Healthcheck *struct {
			Test []string `json:"Test"`
		} `json:"Healthcheck"`
	}
	if err := json.Unmarshal(run("image", "inspect", tag), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("podman image inspect: %v", err)
	}
	img, health := inspect[0].Config, inspect[0].Healthcheck

	t.Run("it runs as a numeric user other than root", func(t *testing.T) {
		uid, _, _ := strings.Cut(img.User, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Errorf("USER %q, want a numeric non-root user", img.User)
		}
	})

	t.Run("it exposes the public, admin and gossip ports", func(t *testing.T) {
		for _, want := range []string{
			portOf(t, config.DefaultListen) + "/tcp",
			portOf(t, config.DefaultAdmin) + "/tcp",
			portOf(t, config.DefaultGossip) + "/tcp",
			portOf(t, config.DefaultGossip) + "/udp",
		} {
			if _, ok := img.ExposedPorts[want]; !ok {
				t.Errorf("EXPOSE misses %s (has %v)", want, img.ExposedPorts)
			}
		}
	})

	t.Run("its default command is one the binary accepts", func(t *testing.T) {
		if !slices.Equal(img.Entrypoint, []string{"/waitroom"}) {
			t.Errorf("ENTRYPOINT %v, want [/waitroom]", img.Entrypoint)
		}
		serveFlags(t, img.Cmd)
	})

	t.Run("its health check is the binary's own, needing no shell", func(t *testing.T) {
		if health == nil || !slices.Equal(health.Test, []string{"CMD", "/waitroom", "healthcheck"}) {
			t.Errorf("HEALTHCHECK %+v, want CMD /waitroom healthcheck", health)
		}
	})

	t.Run("it holds the binary and CA certificates, and no shell", func(t *testing.T) {
		id := strings.TrimSpace(string(run("create", tag)))
		t.Cleanup(func() { _ = exec.Command(podman, "rm", "-f", id).Run() })
		files := map[string]bool{}
		dataOwner := -1
		tr := tar.NewReader(bytes.NewReader(run("export", id)))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Trim(h.Name, "/") == "var/lib/waitroom" {
				dataOwner = h.Uid
			}
			if h.Typeflag != tar.TypeDir {
				files[strings.TrimPrefix(h.Name, "/")] = true
			}
		}
		if dataOwner != 65532 {
			t.Errorf("the data directory /var/lib/waitroom is owned by %d (-1: missing), want the image's user 65532", dataOwner)
		}
		want := map[string]bool{"waitroom": true, "etc/ssl/certs/ca-certificates.crt": true}
		for f := range files {
			if !want[f] {
				t.Errorf("unexpected file in the image: %s", f)
			}
		}
		for f := range want {
			if !files[f] {
				t.Errorf("the image lacks %s", f)
			}
		}
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
