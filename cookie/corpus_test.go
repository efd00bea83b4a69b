package cookie_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
)

// TestFuzzCorpus keeps the committed FuzzOpen seeds honest: the valid_ ones
// must still open (so the fuzzer starts from tokens that get past the AEAD),
// the others must fail for the reason their name gives. If the test keys
// change, this fails and the corpus must be sealed again.
func TestFuzzCorpus(t *testing.T) {
	want := map[string]error{
		"expired":     cookie.ErrExpired,
		"wrong_room":  cookie.ErrAuth,
		"tampered":    cookie.ErrAuth,
		"truncated":   cookie.ErrAuth,
		"unknown_key": cookie.ErrUnknownKey,
		"bad_version": cookie.ErrMalformed,
		"not_base64":  cookie.ErrMalformed,
		"padded":      cookie.ErrMalformed,
		"empty":       cookie.ErrMalformed,
		"too_large":   cookie.ErrTooLarge,
	}
	ring := mustRing(t, keyNew, keyOld)
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzOpen", "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no FuzzOpen corpus: %v", err)
	}
	for _, path := range paths {
		name := filepath.Base(path)
		valid := strings.HasPrefix(name, "valid_")
		wantErr, known := want[name]
		if !valid && !known {
			t.Errorf("corpus file %s: name it valid_* or add its expected error here", name)
			continue
		}
		var sentence string
		if valid {
			sentence = "the seed " + name + " opens"
		} else {
			sentence = "the seed " + name + " fails as " + wantErr.Error()
		}
		t.Run(sentence, func(t *testing.T) {
			value, room, now := readOpenSeed(t, path)
			_, err := ring.Open(value, room, time.Unix(now, 0))
			if valid && err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !valid && !errors.Is(err, wantErr) {
				t.Fatalf("Open error = %v, want %v", err, wantErr)
			}
		})
	}
}

// readOpenSeed parses a "go test fuzz v1" file of (string, string, int64).
func readOpenSeed(t *testing.T, path string) (value, room string, now int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s is not a (string, string, int64) corpus file", path)
	}
	unwrap := func(line, typ string) string {
		inner, ok := strings.CutPrefix(line, typ+"(")
		if !ok || !strings.HasSuffix(inner, ")") {
			t.Fatalf("%s: %q is not %s(...)", path, line, typ)
		}
		return strings.TrimSuffix(inner, ")")
	}
	if value, err = strconv.Unquote(unwrap(lines[1], "string")); err != nil {
		t.Fatalf("%s: value: %v", path, err)
	}
	if room, err = strconv.Unquote(unwrap(lines[2], "string")); err != nil {
		t.Fatalf("%s: room: %v", path, err)
	}
	if now, err = strconv.ParseInt(unwrap(lines[3], "int64"), 10, 64); err != nil {
		t.Fatalf("%s: now: %v", path, err)
	}
	return value, room, now
}
