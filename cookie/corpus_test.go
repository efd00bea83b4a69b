package cookie_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/waitroom/waitroom/cookie"
)

// The committed FuzzOpen seed corpus (testdata/fuzz/FuzzOpen) is described by
// corpusSeeds and written by TestWriteFuzzCorpus. When the token layout or
// the test keys change, TestFuzzCorpus fails; seal the corpus again with
//
//	WAITROOM_WRITE_CORPUS=1 go test -run FuzzCorpus ./cookie/
//
// which writes every file, then checks them. Nonces come from a fixed
// seed, so writing twice with one Go version gives the same files.

// corpusDir holds the FuzzOpen seeds.
var corpusDir = filepath.Join("testdata", "fuzz", "FuzzOpen")

// corpusBase is the valid seed the failing ones are derived from, so that
// they fail for their own reason and would otherwise open.
const corpusBase = "valid_queued_new_key"

// corpusSeed is one (value, room, now) file of the FuzzOpen corpus.
type corpusSeed struct {
	name string
	room string
	now  int64
	// A valid_* seed is token sealed under key (or derived, by a later
	// version's layout), and must open to it.
	key   cookie.Key
	token cookie.Token
	// Any other seed must fail with want. Its value is derive applied to
	// the base seed's value, or value if derive is nil.
	want   error
	derive func(base string) string
	value  string
}

var (
	// until2100 is admitted for a session that outlives the tests.
	until2100 = cookie.Token{
		Bucket:          testNow.Unix()/60 - 3,
		AcceptedAt:      testNow.Unix() - 100,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 600,
		CountedMinute:   testNow.Unix() / 60,
		ExpiresAt:       farFuture,
		ID:              0x5851f42d4c957f2d,
	}
	// bot is flagged for the infinite queue; its ID is the smallest.
	bot = cookie.Token{
		Bucket:          testNow.Unix() / 60,
		LastCheckIn:     testNow.Unix(),
		RefreshInterval: 20,
		ExpiresAt:       farFuture,
		Infinite:        true,
	}
	// largeID has an ID above 2^63, past what an int64 decoder reads.
	largeID = func() cookie.Token { t := queued; t.ID = 0xfedcba9876543210; return t }()
)

var corpusSeeds = []corpusSeed{
	{name: corpusBase, room: "shop", now: fuzzNow, key: keyNew, token: queued},
	{name: "valid_admitted_old_key", room: "shop", now: fuzzNow, key: keyOld, token: admitted},
	{name: "valid_admitted_until_2100", room: "shop", now: fuzzNow, key: keyNew, token: until2100},
	{name: "valid_unicode_room", room: "salle-d'attente-☕", now: fuzzNow, key: keyNew, token: until2100},
	{name: "valid_infinite_queue_empty_room", room: "", now: fuzzNow, key: keyNew, token: bot},
	{name: "valid_large_id", room: "shop", now: fuzzNow, key: keyNew, token: largeID},
	{name: "valid_verified", room: "shop", now: fuzzNow, key: keyNew, token: verified},
	{name: "valid_arrived_in_minute", room: "shop", now: fuzzNow, key: keyNew, token: arrivedLate},

	{name: "expired", room: "shop", now: queued.ExpiresAt + 1, want: cookie.ErrExpired, derive: func(v string) string { return v }},
	{name: "wrong_room", room: "other-shop", now: fuzzNow, want: cookie.ErrAuth, derive: func(v string) string { return v }},
	{name: "tampered", room: "shop", now: fuzzNow, want: cookie.ErrAuth, derive: onWire(func(w []byte) []byte { w[20] ^= 0x80; return w })}, // a payload bit
	{name: "truncated", room: "shop", now: fuzzNow, want: cookie.ErrAuth, derive: onWire(func(w []byte) []byte { return w[:len(w)-4] })},
	{name: "unknown_key", room: "shop", now: fuzzNow, want: cookie.ErrUnknownKey, derive: onWire(func(w []byte) []byte { w[1] = 200; return w })},
	{name: "bad_version", room: "shop", now: fuzzNow, want: cookie.ErrMalformed, derive: onWire(func(w []byte) []byte { w[0] = 2; return w })},
	{name: "padded", room: "shop", now: fuzzNow, want: cookie.ErrMalformed, derive: func(v string) string { return v + "=" }},
	// The base token in the layout before Verified, sealed as the previous
	// version did: it authenticates, then fails to decode.
	{name: "eight_fields", room: "shop", now: fuzzNow, want: cookie.ErrMalformed, derive: onWire(func(w []byte) []byte {
		old, _ := base64.RawURLEncoding.DecodeString(sealPayload(keyNew, "shop", w[2:14], eightFields(queued)))
		return old
	})},
	// A later version's token with a twelfth element: it opens, the
	// element skipped.
	{name: "valid_later_version_twelve_fields", room: "shop", now: fuzzNow, token: grouped, derive: onWire(func(w []byte) []byte {
		next, _ := base64.RawURLEncoding.DecodeString(sealPayload(keyNew, "shop", w[2:14], withExtraFields(grouped, 1, 0x05)))
		return next
	})},

	{name: "empty", room: "shop", now: fuzzNow, want: cookie.ErrMalformed, value: ""},
	{name: "not_base64", room: "shop", now: fuzzNow, want: cookie.ErrMalformed, value: "hello, world!"},
	{name: "too_large", room: "shop", now: fuzzNow, want: cookie.ErrTooLarge, value: strings.Repeat("A", cookie.MaxValueLen+1)},
}

// onWire derives a value by changing its decoded bytes.
func onWire(f func(w []byte) []byte) func(string) string {
	return func(v string) string {
		w, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return "cannot derive from " + v
		}
		return base64.RawURLEncoding.EncodeToString(f(w))
	}
}

// TestWriteFuzzCorpus writes the corpus; see above. It runs only on request.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("WAITROOM_WRITE_CORPUS") != "1" {
		t.Skip("set WAITROOM_WRITE_CORPUS=1 to seal the FuzzOpen corpus again")
	}
	cryptotest.SetGlobalRandom(t, 1)
	if err := os.MkdirAll(corpusDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var base string
	for _, s := range corpusSeeds { // the base comes first
		value := s.value
		switch {
		case s.derive != nil:
			value = s.derive(base)
		case s.want == nil:
			value = mustRing(t, s.key).Seal(s.room, s.token)
			if s.name == corpusBase {
				base = value
			}
		}
		data := fmt.Sprintf("go test fuzz v1\nstring(%q)\nstring(%q)\nint64(%d)\n", value, s.room, s.now)
		if err := os.WriteFile(filepath.Join(corpusDir, s.name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFuzzCorpus keeps the committed FuzzOpen seeds honest: the valid_ ones
// must open to their token (so the fuzzer starts from tokens that get past
// the AEAD), the others must be what corpusSeeds derives and fail for the
// reason their name gives.
func TestFuzzCorpus(t *testing.T) {
	const regenerate = "; seal the corpus again (see corpus_test.go)"
	ring := mustRing(t, keyNew, keyOld)
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no FuzzOpen corpus: %v", err)
	}
	for _, path := range paths {
		name := filepath.Base(path)
		if !slices.ContainsFunc(corpusSeeds, func(s corpusSeed) bool { return s.name == name }) {
			t.Errorf("corpus file %s is not described in corpusSeeds", name)
		}
	}
	base, _, _ := readOpenSeed(t, filepath.Join(corpusDir, corpusBase))
	for _, s := range corpusSeeds {
		sentence := "the seed " + s.name + " opens to its token"
		if s.want != nil {
			sentence = "the seed " + s.name + " fails as " + s.want.Error()
		}
		t.Run(sentence, func(t *testing.T) {
			value, room, now := readOpenSeed(t, filepath.Join(corpusDir, s.name))
			if room != s.room || now != s.now {
				t.Fatalf("room %q and now %d, want %q and %d%s", room, now, s.room, s.now, regenerate)
			}
			if s.derive != nil && value != s.derive(base) {
				t.Fatalf("value is not derived from %s's value%s", corpusBase, regenerate)
			}
			if s.derive == nil && s.want != nil && value != s.value {
				t.Fatalf("value is %q, want %q%s", value, s.value, regenerate)
			}
			got, err := ring.Open(value, room, time.Unix(now, 0))
			if s.want == nil && (err != nil || got != s.token) {
				t.Fatalf("Open = %+v, %v; want %+v%s", got, err, s.token, regenerate)
			}
			if s.want != nil && !errors.Is(err, s.want) {
				t.Fatalf("Open error = %v, want %v%s", err, s.want, regenerate)
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
