package cookie_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/cookie"
)

// sentinels are all the reasons Open may give.
var sentinels = []error{cookie.ErrMalformed, cookie.ErrUnknownKey, cookie.ErrAuth, cookie.ErrExpired, cookie.ErrTooLarge}

// wrapsExactlyOne reports whether err wraps exactly one sentinel.
func wrapsExactlyOne(err error) bool {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}

func TestSealOpen(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	extreme := cookie.Token{
		Bucket: math.MinInt64, AcceptedAt: math.MaxInt64, LastCheckIn: -1,
		RefreshInterval: math.MaxUint16, CountedMinute: math.MinInt64, ExpiresAt: math.MaxInt64,
		Infinite: true, ID: math.MaxUint64, Verified: true,
	}
	tests := []struct {
		name  string
		room  string
		token cookie.Token
	}{
		{"a queued visitor's token round trips", "shop", queued},
		{"an admitted visitor's token round trips", "shop", admitted},
		{"a verified visitor's token round trips", "shop", verified},
		{"an infinite-queue token round trips", "shop", cookie.Token{Bucket: 1, ExpiresAt: farFuture, Infinite: true}},
		{"a verified token that is otherwise zero round trips", "shop", cookie.Token{ExpiresAt: farFuture, Verified: true}},
		{"a token with extreme values round trips", "shop", extreme},
		{"the longest token round trips", "shop", longest},
		{"a token with ID 0 round trips", "shop", cookie.Token{ExpiresAt: farFuture}},
		{"a token with ID 2^63-1 round trips", "shop", cookie.Token{ExpiresAt: farFuture, ID: math.MaxInt64}},
		{"a token with ID 2^63 round trips", "shop", cookie.Token{ExpiresAt: farFuture, ID: math.MaxInt64 + 1}},
		{"a token sealed for an empty room name round trips", "", queued},
		{"a token sealed for a long unicode room name round trips", strings.Repeat("salle d'attente ☕ ", 200), admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value := ring.Seal(tt.room, tt.token)
			if len(value) > maxSealedLen {
				t.Errorf("sealed value is %d characters, want at most %d", len(value), maxSealedLen)
			}
			got, err := ring.Open(value, tt.room, testNow)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got != tt.token {
				t.Errorf("Open = %+v, want %+v", got, tt.token)
			}
			appended := ring.AppendSeal([]byte("prefix="), tt.room, tt.token)
			rest, ok := bytes.CutPrefix(appended, []byte("prefix="))
			if !ok {
				t.Fatalf("AppendSeal lost the prefix: %q", appended)
			}
			if got, err := ring.Open(string(rest), tt.room, testNow); err != nil || got != tt.token {
				t.Errorf("Open(AppendSeal) = %+v, %v; want %+v", got, err, tt.token)
			}
		})
	}
}

func TestSealedLength(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	t.Run("the bound is the base64 length of header, nonce, longest payload and tag", func(t *testing.T) {
		payload, _ := longest.MarshalMsgpack()
		if len(payload) != 97 {
			t.Errorf("the longest payload is %d bytes, want 1 + 5*9 + 3 + 1 + 9 + 1 + 3 + 2 + 32 = 97", len(payload))
		}
		if n := base64.RawURLEncoding.EncodedLen(2 + 12 + len(payload) + 16); n != maxSealedLen {
			t.Errorf("the longest token encodes to %d characters, want %d", n, maxSealedLen)
		}
	})
	t.Run("the longest token seals to exactly the bound", func(t *testing.T) {
		if n := len(ring.Seal("shop", longest)); n != maxSealedLen {
			t.Errorf("sealed value is %d characters, want %d", n, maxSealedLen)
		}
	})
}

func TestSealIsRandomized(t *testing.T) {
	ring := mustRing(t, keyNew)
	seen := map[string]bool{}
	for range 100 {
		v := ring.Seal("shop", queued)
		if seen[v] {
			t.Fatalf("the same token sealed twice gave the same value %q: nonce reused", v)
		}
		seen[v] = true
	}
}

func TestSealedValueIsCookieSafe(t *testing.T) {
	ring := mustRing(t, keyNew)
	v := ring.Seal("shop", admitted)
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			t.Fatalf("value %q holds %q, which is not URL-safe base64 without padding", v, c)
		}
	}
}

func TestOpenRejects(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	good := ring.Seal("shop", queued)
	wire, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	withVersion := func(v byte) string {
		w := bytes.Clone(wire)
		w[0] = v
		return enc(w)
	}
	tests := []struct {
		name  string
		value string
		room  string
		now   time.Time
		want  error
	}{
		{"a token from another room fails authentication", good, "other-shop", testNow, cookie.ErrAuth},
		{"a token for a room whose name differs only in case fails", good, "Shop", testNow, cookie.ErrAuth},
		{"a token for a room whose name has a suffix fails", good, "shop2", testNow, cookie.ErrAuth},
		{"a token one second past its expiry is expired", good, "shop", time.Unix(queued.ExpiresAt+1, 0), cookie.ErrExpired},
		{"a token at its expiry second still opens", good, "shop", time.Unix(queued.ExpiresAt, 0), nil},
		{"a value longer than 512 characters is too large", strings.Repeat("A", cookie.MaxValueLen+1), "shop", testNow, cookie.ErrTooLarge},
		{"a valid token padded past 512 characters is too large", good + strings.Repeat("A", cookie.MaxValueLen), "shop", testNow, cookie.ErrTooLarge},
		{"a value of exactly 512 characters is looked at", strings.Repeat("A", cookie.MaxValueLen), "shop", testNow, cookie.ErrMalformed},
		{"an empty value is malformed", "", "shop", testNow, cookie.ErrMalformed},
		{"a value with standard base64 characters is malformed", strings.Replace(good, good[5:6], "+", 1), "shop", testNow, cookie.ErrMalformed},
		{"a value with padding is malformed", good + "=", "shop", testNow, cookie.ErrMalformed},
		{"a value with a newline inside is malformed", good[:10] + "\n" + good[10:], "shop", testNow, cookie.ErrMalformed},
		{"a value with a carriage return inside is malformed", good[:10] + "\r" + good[10:], "shop", testNow, cookie.ErrMalformed},
		{"a value with spaces is malformed", " " + good, "shop", testNow, cookie.ErrMalformed},
		{"a value that is only a header is malformed", enc([]byte{cookie.Version, 2}), "shop", testNow, cookie.ErrMalformed},
		{"a value one byte short of nonce and tag is malformed", enc(wire[:2+12+15]), "shop", testNow, cookie.ErrMalformed},
		{"a value with nonce and tag but no ciphertext fails authentication", enc(wire[:2+12+16]), "shop", testNow, cookie.ErrAuth},
		{"a value of version 0 is malformed", withVersion(0), "shop", testNow, cookie.ErrMalformed},
		{"a value of version 2 is malformed", withVersion(2), "shop", testNow, cookie.ErrMalformed},
		{"a value naming a key id the ring lacks is an unknown key", enc(append([]byte{cookie.Version, 200}, wire[2:]...)), "shop", testNow, cookie.ErrUnknownKey},
		{"a value naming the other key of the ring fails authentication", enc(append([]byte{cookie.Version, keyOld.ID}, wire[2:]...)), "shop", testNow, cookie.ErrAuth},
		{"a token sealed in the layout before Verified is malformed", sealPayload(keyNew, "shop", wire[2:14], eightFields(queued)), "shop", testNow, cookie.ErrMalformed},
		{"a hand-sealed token in the current layout opens", sealPayload(keyNew, "shop", wire[2:14], mustMarshal(t, queued)), "shop", testNow, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ring.Open(tt.value, tt.room, tt.now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open error = %v, want one wrapping %v", err, tt.want)
			}
			if !wrapsExactlyOne(err) {
				t.Errorf("Open error %v wraps more than one sentinel", err)
			}
			if got != (cookie.Token{}) {
				t.Errorf("Open returned %+v with its error, want the zero Token", got)
			}
		})
	}
}

func TestOpenRejectsEveryTamperedByte(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	value := ring.Seal("shop", admitted)
	wire, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("flipping any bit of any byte of the sealed token makes it fail", func(t *testing.T) {
		for i := range wire {
			for bit := range 8 {
				w := bytes.Clone(wire)
				w[i] ^= 1 << bit
				_, err := ring.Open(base64.RawURLEncoding.EncodeToString(w), "shop", testNow)
				if err == nil || !wrapsExactlyOne(err) {
					t.Fatalf("byte %d bit %d flipped: Open error = %v, want a sentinel", i, bit, err)
				}
			}
		}
	})
	t.Run("changing any character of the value to any other makes it fail", func(t *testing.T) {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=. \n"
		for i := range value {
			for _, c := range alphabet {
				if byte(c) == value[i] {
					continue
				}
				v := value[:i] + string(c) + value[i+1:]
				if _, err := ring.Open(v, "shop", testNow); err == nil {
					t.Fatalf("character %d changed to %q: Open succeeded", i, c)
				}
			}
		}
	})
	t.Run("every truncation of the value fails", func(t *testing.T) {
		for n := range len(value) {
			_, err := ring.Open(value[:n], "shop", testNow)
			if !errors.Is(err, cookie.ErrMalformed) && !errors.Is(err, cookie.ErrAuth) {
				t.Fatalf("value cut to %d characters: Open error = %v, want malformed or auth", n, err)
			}
		}
	})
	t.Run("every truncation of the sealed bytes fails", func(t *testing.T) {
		for n := range len(wire) {
			_, err := ring.Open(base64.RawURLEncoding.EncodeToString(wire[:n]), "shop", testNow)
			if !errors.Is(err, cookie.ErrMalformed) && !errors.Is(err, cookie.ErrAuth) {
				t.Fatalf("sealed bytes cut to %d: Open error = %v, want malformed or auth", n, err)
			}
		}
	})
	t.Run("an extra byte after the tag makes it fail", func(t *testing.T) {
		w := append(bytes.Clone(wire), 0)
		if _, err := ring.Open(base64.RawURLEncoding.EncodeToString(w), "shop", testNow); !errors.Is(err, cookie.ErrAuth) {
			t.Fatalf("Open error = %v, want ErrAuth", err)
		}
	})
}

func TestRotation(t *testing.T) {
	oldRing := mustRing(t, keyOld)
	rotated := mustRing(t, keyNew, keyOld)
	newOnly := mustRing(t, keyNew)
	impostor := mustRing(t, keyImpostor)
	sealedOld := oldRing.Seal("shop", admitted)
	sealedNew := rotated.Seal("shop", admitted)

	tests := []struct {
		name  string
		ring  *cookie.Keyring
		value string
		want  error
	}{
		{"a token sealed with the old key opens in a ring with the new key first and the old second", rotated, sealedOld, nil},
		{"a ring with the new key first seals with the new key", newOnly, sealedNew, nil},
		{"a token sealed with the old key is an unknown key to a ring without it", newOnly, sealedOld, cookie.ErrUnknownKey},
		{"a token sealed with the new key is an unknown key to a ring of only the old one", oldRing, sealedNew, cookie.ErrUnknownKey},
		{"a token sealed under a reused id with another secret fails authentication", impostor, sealedNew, cookie.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ring.Open(tt.value, "shop", testNow)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Open error = %v, want %v", err, tt.want)
			}
			if tt.want == nil && got != admitted {
				t.Errorf("Open = %+v, want %+v", got, admitted)
			}
		})
	}
	t.Run("the sealing key id is the first key's", func(t *testing.T) {
		if id := rotated.SealKeyID(); id != keyNew.ID {
			t.Errorf("SealKeyID = %d, want %d", id, keyNew.ID)
		}
	})
}

func TestNewKeyring(t *testing.T) {
	tests := []struct {
		name    string
		keys    []cookie.Key
		wantErr string
	}{
		{"one key is enough", []cookie.Key{keyNew}, ""},
		{"all 256 ids may be used", allIDs(), ""},
		{"no keys is an error", nil, "at least one key"},
		{"a 16-byte secret is an error", []cookie.Key{{ID: 1, Secret: make([]byte, 16)}}, "16 bytes, want 32"},
		{"a 33-byte secret is an error", []cookie.Key{keyNew, {ID: 5, Secret: make([]byte, 33)}}, "key 2 (id 5): secret is 33 bytes"},
		{"a nil secret is an error", []cookie.Key{{ID: 1}}, "0 bytes"},
		{"two keys with one id is an error", []cookie.Key{keyNew, keyImpostor}, "duplicate key id 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring, err := cookie.NewKeyring(tt.keys...)
			if tt.wantErr == "" {
				if err != nil || ring == nil {
					t.Fatalf("NewKeyring = %v, %v", ring, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewKeyring error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	t.Run("changing a secret after building the ring changes nothing", func(t *testing.T) {
		k := cookie.Key{ID: 9, Secret: bytes.Clone(keyNew.Secret)}
		ring := mustRing(t, k)
		v := ring.Seal("shop", queued)
		clear(k.Secret)
		if _, err := mustRing(t, cookie.Key{ID: 9, Secret: keyNew.Secret}).Open(v, "shop", testNow); err != nil {
			t.Fatalf("Open with the original secret: %v", err)
		}
	})
}

func allIDs() []cookie.Key {
	keys := make([]cookie.Key, 256)
	for i := range keys {
		keys[i] = cookie.Key{ID: uint8(i), Secret: bytes.Repeat([]byte{byte(i)}, cookie.SecretLen)}
	}
	return keys
}

// TestWireLayout opens sealed values by hand, with only the standard
// library and the msgpack library, following the package documentation.
func TestWireLayout(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	for _, tt := range []namedToken{{"an admitted token", admitted}, {"a verified token", verified}} {
		value := ring.Seal("shop", tt.token)
		wire, err := base64.RawURLEncoding.DecodeString(value)
		if err != nil {
			t.Fatalf("the value is not unpadded URL-safe base64: %v", err)
		}
		t.Run(tt.name+": the first byte is the version", func(t *testing.T) {
			if wire[0] != cookie.Version || cookie.Version != 1 {
				t.Errorf("version byte = %d, want 1", wire[0])
			}
		})
		t.Run(tt.name+": the second byte is the sealing key id", func(t *testing.T) {
			if wire[1] != keyNew.ID {
				t.Errorf("key id byte = %d, want %d", wire[1], keyNew.ID)
			}
		})
		block, _ := aes.NewCipher(keyNew.Secret)
		gcm, _ := cipher.NewGCM(block)
		ad := append([]byte{wire[0], wire[1]}, "shop"...)
		pt, err := gcm.Open(nil, wire[2:14], wire[14:], ad)
		t.Run(tt.name+": the rest is a 12-byte nonce and AES-256-GCM over version, key id and room", func(t *testing.T) {
			if err != nil {
				t.Fatalf("AES-GCM open by hand: %v", err)
			}
		})
		if err != nil {
			continue
		}
		t.Run(tt.name+": the plaintext decodes with msgpack into a nine-element array in field order", func(t *testing.T) {
			tok := tt.token
			var got []any
			if err := msgpack.Unmarshal(pt, &got); err != nil {
				t.Fatalf("msgpack.Unmarshal: %v", err)
			}
			want := []int64{tok.Bucket, tok.AcceptedAt, tok.LastCheckIn, int64(tok.RefreshInterval), tok.CountedMinute, tok.ExpiresAt}
			if len(got) != 9 {
				t.Fatalf("array has %d elements, want 9: %v", len(got), got)
			}
			for i, w := range want {
				if n, ok := asInt64(got[i]); !ok || n != w {
					t.Errorf("element %d = %v (%T), want %d", i, got[i], got[i], w)
				}
			}
			if got[6] != tok.Infinite {
				t.Errorf("element 6 = %v, want %v", got[6], tok.Infinite)
			}
			if got[7] != tok.ID { // above 2^63, so only a uint64 holds it
				t.Errorf("element 7 = %v (%T), want uint64 %d", got[7], got[7], tok.ID)
			}
			if got[8] != tok.Verified {
				t.Errorf("element 8 = %v (%T), want bool %v", got[8], got[8], tok.Verified)
			}
		})
		t.Run(tt.name+": Verified is the last plaintext byte, a MessagePack boolean", func(t *testing.T) {
			want := byte(0xc2)
			if tt.token.Verified {
				want = 0xc3
			}
			if last := pt[len(pt)-1]; last != want {
				t.Errorf("last plaintext byte = %#x, want %#x", last, want)
			}
		})
	}
}

// mustMarshal returns tok's payload.
func mustMarshal(tb testing.TB, tok cookie.Token) []byte {
	tb.Helper()
	b, err := tok.MarshalMsgpack()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestOpenAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	ring := mustRing(t, keyNew, keyOld)
	value := ring.Seal("shop", admitted)
	garbage := strings.Repeat("x", 200)
	buf := make([]byte, 0, 256)
	tests := []struct {
		name string
		max  float64
		f    func()
	}{
		{"opening a good token does not allocate", 0, func() { ring.Open(value, "shop", testNow) }},
		{"rejecting garbage does not allocate", 0, func() { ring.Open(garbage, "shop", testNow) }},
		{"rejecting a token for another room does not allocate", 0, func() { ring.Open(value, "elsewhere", testNow) }},
		{"appending a seal to a roomy buffer does not allocate", 0, func() { buf = ring.AppendSeal(buf[:0], "shop", admitted) }},
		{"sealing allocates only the string", 1, func() { _ = ring.Seal("shop", admitted) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(200, tt.f); n > tt.max {
				t.Errorf("%v allocations per run, want at most %v", n, tt.max)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	ring := mustRing(t, keyNew, keyOld)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tok := admitted
				tok.Bucket += int64(g*1000 + i)
				room := fmt.Sprintf("room-%d", g%3)
				got, err := ring.Open(ring.Seal(room, tok), room, testNow)
				if err != nil || got != tok {
					errs <- fmt.Errorf("goroutine %d iteration %d: %+v, %v", g, i, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestKeyNeverPrintsItsSecret(t *testing.T) {
	k := cookie.Key{ID: 7, Secret: []byte("0123456789abcdef0123456789abcdef")}
	for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
		t.Run("formatting a key with "+verb+" hides the secret", func(t *testing.T) {
			out := fmt.Sprintf(verb, k)
			if strings.Contains(out, "0123") || strings.Contains(out, "48") {
				t.Errorf("Sprintf(%q) = %q leaks the secret", verb, out)
			}
			if !strings.Contains(out, "7") {
				t.Errorf("Sprintf(%q) = %q does not name the id", verb, out)
			}
		})
	}
}
