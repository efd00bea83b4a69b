package agent_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func b64(n int, fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
}

func TestLoadGossipKeys(t *testing.T) {
	t.Run("the test key file loads three keys in order", func(t *testing.T) {
		keys, err := agent.LoadGossipKeys(filepath.Join("testdata", "keys", "gossip.keys"))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 3 || len(keys[0]) != 32 || keys[0][1] != 1 || len(keys[1]) != 16 || len(keys[2]) != 24 {
			t.Errorf("keys of %d, %d, %d bytes", len(keys[0]), len(keys[1]), len(keys[2]))
		}
	})
	for _, tc := range []struct {
		name, body string
		n          int      // keys, when accepted
		want       []string // error parts, when refused
	}{
		{"keys of 16, 24 and 32 bytes are accepted", b64(16, 1) + "\n" + b64(24, 2) + "\n" + b64(32, 3) + "\n", 3, nil},
		{"comments, blank lines and CRLF are ignored", "# keys\r\n\r\n  " + b64(32, 1) + "  # newest\r\n", 1, nil},
		{"URL-safe unpadded base64 is accepted", strings.TrimRight(base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 16)), "="), 1, nil},
		{"a key of 20 bytes is refused naming the line and the sizes", "# c\n" + b64(32, 1) + "\n" + b64(20, 2) + "\n", 0,
			[]string{"line 3: key is 20 bytes; it must be 16, 24 or 32 bytes"}},
		{"a line that is not base64 is refused naming the line", b64(32, 1) + "\nnot*base64\n", 0,
			[]string{"line 2: key is not base64"}},
		{"two keys on a line are refused", b64(16, 1) + " " + b64(16, 2) + "\n", 0,
			[]string{"line 1: want one base64 key"}},
		{"the same key twice is refused", b64(16, 1) + "\n" + b64(16, 1) + "\n", 0,
			[]string{"line 2: the same key as line 1"}},
		{"a file of only comments is refused", "# nothing here\n", 0, []string{"no keys"}},
		{"an empty file is refused", "", 0, []string{"no keys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			keys, err := agent.LoadGossipKeys(path)
			if tc.want == nil {
				if err != nil || len(keys) != tc.n {
					t.Fatalf("%d keys, error %v", len(keys), err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("a missing file is an error naming the path", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope")
		if _, err := agent.LoadGossipKeys(path); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("an error never shows the key", func(t *testing.T) {
		secret := b64(20, 0x5a)
		_, err := agent.LoadGossipKeys(writeFile(t, secret+"\n"))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("got %v", err)
		}
	})
}

func TestGossipKeysFromEnv(t *testing.T) {
	t.Run("an unset variable gives no keys and no error", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, "")
		keys, err := agent.GossipKeysFromEnv()
		if keys != nil || err != nil {
			t.Errorf("%v %v", keys, err)
		}
	})
	t.Run("comma-separated keys are read in order", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, b64(32, 1)+", "+b64(16, 2))
		keys, err := agent.GossipKeysFromEnv()
		if err != nil || len(keys) != 2 || len(keys[0]) != 32 || len(keys[1]) != 16 {
			t.Errorf("%d keys, error %v", len(keys), err)
		}
	})
	t.Run("a bad key is refused naming the variable and its place", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, b64(32, 1)+","+b64(8, 2))
		_, err := agent.GossipKeysFromEnv()
		if err == nil || !strings.Contains(err.Error(), "WAITROOM_GOSSIP_KEY: key 2: key is 8 bytes; it must be 16, 24 or 32 bytes") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("the config's key file wins over the variable", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, b64(16, 9))
		c := &config.Config{GossipKeyFile: writeFile(t, b64(32, 1)+"\n")}
		keys, err := agent.GossipKeysOf(c)
		if err != nil || len(keys) != 1 || len(keys[0]) != 32 {
			t.Errorf("%v %v", keys, err)
		}
	})
	t.Run("the variable is used without a key file", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, b64(16, 9))
		keys, err := agent.GossipKeysOf(&config.Config{})
		if err != nil || len(keys) != 1 || len(keys[0]) != 16 {
			t.Errorf("%v %v", keys, err)
		}
	})
	t.Run("with neither gossip is not encrypted", func(t *testing.T) {
		t.Setenv(agent.GossipKeyEnv, "")
		keys, err := agent.GossipKeysOf(&config.Config{})
		if keys != nil || err != nil {
			t.Errorf("%v %v", keys, err)
		}
	})
}

// roundTrip checks that ring seals a token that ring opens.
func roundTrip(t *testing.T, ring *cookie.Keyring) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	v := ring.Seal("shop", cookie.Token{Bucket: 28_333_333, ExpiresAt: now.Unix() + 300})
	if _, err := ring.Open(v, "shop", now); err != nil {
		t.Errorf("a sealed token does not open: %v", err)
	}
}

func TestLoadCookieKeys(t *testing.T) {
	t.Run("the test key file loads and its first key seals", func(t *testing.T) {
		ring, err := agent.LoadCookieKeys(filepath.Join("testdata", "keys", "cookie.keys"))
		if err != nil {
			t.Fatal(err)
		}
		if ring.SealKeyID() != 2 {
			t.Errorf("sealing key %d, want 2", ring.SealKeyID())
		}
		roundTrip(t, ring)
	})
	t.Run("a bad key file is refused naming the path and line", func(t *testing.T) {
		path := writeFile(t, "1 "+b64(32, 1)+"\n2 "+b64(16, 2)+"\n")
		_, err := agent.LoadCookieKeys(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a missing file is an error naming the path", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope")
		if _, err := agent.LoadCookieKeys(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("got %v", err)
		}
	})
}

func TestCookieKeysFromEnv(t *testing.T) {
	t.Run("an unset variable gives no keyring and no error", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "")
		ring, err := agent.CookieKeysFromEnv()
		if ring != nil || err != nil {
			t.Errorf("%v %v", ring, err)
		}
	})
	t.Run("keys separated by semicolons are read in order", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "7 "+b64(32, 1)+"; 3 "+b64(32, 2))
		ring, err := agent.CookieKeysFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		if ring.SealKeyID() != 7 {
			t.Errorf("sealing key %d, want 7", ring.SealKeyID())
		}
		roundTrip(t, ring)
	})
	t.Run("keys separated by newlines are read", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "# rotated\n7 "+b64(32, 1)+"\n3 "+b64(32, 2)+"\n")
		if _, err := agent.CookieKeysFromEnv(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a bad key is refused naming the variable without showing it", func(t *testing.T) {
		secret := b64(31, 0x42)
		t.Setenv(agent.CookieKeysEnv, "1 "+secret)
		_, err := agent.CookieKeysFromEnv()
		if err == nil || !strings.Contains(err.Error(), "WAITROOM_COOKIE_KEYS") || strings.Contains(err.Error(), secret) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("the config's key file wins over the variable", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "9 "+b64(32, 9))
		c := &config.Config{CookieKeyFile: filepath.Join("testdata", "keys", "cookie.keys")}
		ring, err := agent.CookieKeysOf(c)
		if err != nil || ring.SealKeyID() != 2 {
			t.Errorf("%v %v", ring, err)
		}
	})
	t.Run("the variable is used without a key file", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "9 "+b64(32, 9))
		ring, err := agent.CookieKeysOf(&config.Config{})
		if err != nil || ring.SealKeyID() != 9 {
			t.Errorf("%v %v", ring, err)
		}
	})
	t.Run("with neither it is an error saying where keys go", func(t *testing.T) {
		t.Setenv(agent.CookieKeysEnv, "")
		_, err := agent.CookieKeysOf(&config.Config{})
		if err == nil || !strings.Contains(err.Error(), "cookie_key_file") || !strings.Contains(err.Error(), "WAITROOM_COOKIE_KEYS") {
			t.Errorf("got %v", err)
		}
	})
}

func TestKeyFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not say who can read a file on Windows")
	}
	data, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a key file written by keygen is readable by its owner only", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cookie.key")
		if err := agent.WriteKeyFile(path, data); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
		}
		if _, err := agent.LoadCookieKeys(path); err != nil {
			t.Errorf("the written file does not load: %v", err)
		}
	})
	t.Run("an existing key file is never replaced", func(t *testing.T) {
		path := writeFile(t, "old")
		err := agent.WriteKeyFile(path, data)
		if got, _ := os.ReadFile(path); err == nil || !strings.Contains(err.Error(), "exists") || string(got) != "old" {
			t.Errorf("err %v, file now %q", err, got)
		}
	})
	t.Run("standard output redirected to a file is made private", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "redirected.key")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Chmod(0o644); err != nil { // whatever the umask made of it
			t.Fatal(err)
		}
		ok, err := agent.ProtectKeyOutput(f)
		st, _ := os.Stat(path)
		if !ok || err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("protected %v, %v, mode %v; want 0600", ok, err, st.Mode().Perm())
		}
	})
	t.Run("a pipe is left alone", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		if ok, err := agent.ProtectKeyOutput(w); ok || err != nil {
			t.Errorf("protected %v, %v; want a pipe left alone", ok, err)
		}
	})
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{
		{"a cookie key file readable by others is named in a warning with its mode", 0o644, true},
		{"a cookie key file readable by its group is named in a warning", 0o640, true},
		{"a private cookie key file gives no warning", 0o600, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cookie.key")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			cfg := edgetest.NodeConfig("modes", path, "http://127.0.0.1:1", edgetest.Room("shop", 10, 5))
			cfg.ApplyDefaults()
			srv, err := agent.New(cfg, agent.Options{Log: zerolog.New(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var warned bool
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "readable by other users") {
					warned = true
					wantMode := fmt.Sprintf(`"mode":"%04o"`, tc.mode)
					if !strings.Contains(line, `"level":"warn"`) || !strings.Contains(line, `"file":"`+path+`"`) || !strings.Contains(line, wantMode) {
						t.Errorf("warning %s lacks the level, the file or %s", line, wantMode)
					}
				}
			}
			if warned != tc.warn {
				t.Errorf("warned = %v, want %v; log:\n%s", warned, tc.warn, logs.String())
			}
		})
	}
	t.Run("a TLS key file readable by others is named in a warning", func(t *testing.T) {
		dir := t.TempDir()
		certPath, keyPath := agent.NewTestCA(t).WritePair(t, dir, 1, "shop.waitroom.test")
		if err := os.Chmod(keyPath, 0o644); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		cfg := edgetest.NodeConfig("modes", edgetest.KeyFile(t, dir), "http://127.0.0.1:1", edgetest.Room("shop", 10, 5))
		cfg.TLS = config.TLSConfig{CertFile: certPath, KeyFile: keyPath}
		cfg.ApplyDefaults()
		srv, err := agent.New(cfg, agent.Options{Log: zerolog.New(&logs)})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if !strings.Contains(logs.String(), `"field":"tls.key_file"`) {
			t.Errorf("no warning naming tls.key_file; log:\n%s", logs.String())
		}
	})
}
