package datadir

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func open(t *testing.T, dir string, keys ...[]byte) *Dir {
	t.Helper()
	d, err := Open(dir, keys)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAFileComesBackAsWritten(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir, key(1))
	data := []byte(`{"rooms":["shop"]}`)
	if err := d.Write("state", data); err != nil {
		t.Fatal(err)
	}
	t.Run("read back, it is the bytes written", func(t *testing.T) {
		got, err := d.Read("state")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	})
	t.Run("only the node's user may read it", func(t *testing.T) {
		st, err := os.Stat(filepath.Join(dir, "state"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
		}
	})
	t.Run("its contents are not in the file in clear", func(t *testing.T) {
		raw, _ := os.ReadFile(filepath.Join(dir, "state"))
		if bytes.Contains(raw, []byte("shop")) {
			t.Fatal("the file holds its contents in clear")
		}
	})
	t.Run("a file sealed before a key rotation still opens after it", func(t *testing.T) {
		rotated := open(t, dir, key(2), key(1))
		if got, err := rotated.Read("state"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %q, %v after the rotation", got, err)
		}
	})
	t.Run("a file that is not there is a first start", func(t *testing.T) {
		if _, err := d.Read("members"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("error %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("nothing but the file is left in the directory", func(t *testing.T) {
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("the directory holds %v", entries)
		}
	})
}

func TestABadFileSaysWhyAndIsSetAside(t *testing.T) {
	d := open(t, t.TempDir(), key(1))
	good, err := d.Seal("state", []byte("the ring's state, several bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	newer := bytes.Clone(good)
	newer[len(magic)] = Version + 1
	flipped := bytes.Clone(good)
	flipped[len(flipped)-5] ^= 1
	otherKey, _ := open(t, t.TempDir(), key(9)).Seal("state", []byte("x"))
	cases := []struct {
		name   string
		file   []byte
		reason string
	}{
		{"an empty file is truncated", nil, BadTruncated},
		{"a file cut inside its magic is truncated", good[:2], BadTruncated},
		{"a file cut inside its header is truncated", good[:headerLen-3], BadTruncated},
		{"a file cut inside its contents does not hold its seal", good[:len(good)-4], BadTampered},
		{"a changed byte breaks the seal", flipped, BadTampered},
		{"a file of a newer version is not guessed at", newer, BadNewer},
		{"a file sealed with another key says so", otherKey, BadWrongKey},
		{"a file of something else is not ours", []byte("node: pop-1\nrooms: []\n"), BadNotOurs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(d.file("state"), c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := d.Read("state")
			var bad *BadFile
			if !errors.As(err, &bad) || bad.Reason != c.reason {
				t.Fatalf("error %v, want a BadFile for %s", err, c.reason)
			}
			to, err := d.SetAside("state", bad.Reason, time.Unix(1_800_000_000, 0))
			if err != nil || !strings.HasSuffix(to, "state."+c.reason+".1800000000") {
				t.Fatalf("set aside as %q, %v", to, err)
			}
			if _, err := d.Read("state"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after setting it aside: %v, want no file", err)
			}
		})
	}
	t.Run("one file cannot stand in for another", func(t *testing.T) {
		if err := os.WriteFile(d.file("members"), good, 0o600); err != nil {
			t.Fatal(err)
		}
		var bad *BadFile
		if _, err := d.Read("members"); !errors.As(err, &bad) || bad.Reason != BadTampered {
			t.Fatalf("the state file read as members: %v", err)
		}
	})
}

func TestAWriteIsWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir, key(1))
	if err := d.Write("state", []byte("old")); err != nil {
		t.Fatal(err)
	}
	t.Run("a write cut short by a crash leaves the old file and a temporary one", func(t *testing.T) {
		// What a crash between the temporary file's write and the rename
		// leaves behind.
		if err := os.WriteFile(filepath.Join(dir, ".state.tmp-123"), []byte("WRDD\x01half"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Read("state"); err != nil || string(got) != "old" {
			t.Fatalf("read %q, %v; want the old file", got, err)
		}
	})
	t.Run("the temporary files of cut writes are cleared, the file kept", func(t *testing.T) {
		if err := d.ClearTemporary("state"); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != "state" {
			t.Fatalf("the directory holds %v", entries)
		}
	})
	t.Run("a directory that cannot be written keeps the old file and says why", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into a read-only directory")
		}
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		if err := d.Write("state", []byte("new")); err == nil {
			t.Fatal("a write into a read-only directory succeeded")
		}
		if got, err := d.Read("state"); err != nil || string(got) != "old" {
			t.Fatalf("read %q, %v; want the old file", got, err)
		}
	})
	t.Run("a directory that is a file fails each write, not the start", func(t *testing.T) {
		f := filepath.Join(dir, "plain")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := Open(f, [][]byte{key(1)})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if err := d.Write("state", []byte("x")); err == nil {
			t.Fatal("a write into a file succeeded")
		}
	})
	t.Run("a short key is refused at open", func(t *testing.T) {
		if _, err := Open(t.TempDir(), [][]byte{[]byte("short")}); err == nil {
			t.Fatal("a 5-byte key was taken")
		}
	})
}

func TestTheSaverWritesWhatChangedAndOnceMoreAtTheEnd(t *testing.T) {
	d := open(t, t.TempDir(), key(1))
	var mu sync.Mutex
	value, writes, failures := "v1", 0, 0
	s := NewSaver(d, "state", func() ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return []byte(value), nil
	}, SaverOptions{Interval: 20 * time.Millisecond, Report: func(_ int, _ time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures++
		} else {
			writes++
		}
	}})
	read := func() string { b, _ := d.Read("state"); return string(b) }
	set := func(v string) { mu.Lock(); value = v; mu.Unlock() }

	set("v2")
	testkit.Eventually(t, testkit.Wait{What: "the change written", Timeout: 5 * time.Second}, func() bool { return read() == "v2" })
	t.Run("nothing is written while nothing changes", func(t *testing.T) {
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		before := writes
		mu.Unlock()
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if writes != before {
			t.Fatalf("%d writes without a change", writes-before)
		}
	})
	t.Run("a failed write is reported and tried again", func(t *testing.T) {
		blocked := filepath.Join(d.Path(), "plain")
		if err := os.WriteFile(blocked, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		bad := NewSaver(&Dir{path: filepath.Join(blocked, "dir"), keys: d.keys}, "state",
			func() ([]byte, error) { return []byte("x"), nil },
			SaverOptions{Interval: time.Millisecond, Report: func(_ int, _ time.Duration, err error) {
				if err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}})
		defer bad.Close()
		testkit.Eventually(t, testkit.Wait{What: "two failed writes reported", Timeout: 5 * time.Second}, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return failures >= 2
		})
	})
	t.Run("a graceful stop writes the last change", func(t *testing.T) {
		s.mu.Lock() // the loop cannot save before the stop
		mu.Lock()
		value = "v3"
		mu.Unlock()
		s.mu.Unlock()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != "v3" {
			t.Fatalf("after the stop the file holds %q, want v3", got)
		}
	})
}
