package cookie_test

import (
	"bytes"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/cookie"
)

// shuffleLabel is the label the edge derives its shuffle secret with.
const shuffleLabel = "waitroom shuffle"

func TestDerive(t *testing.T) {
	t.Run("keyrings built from the same keys derive the same secret", func(t *testing.T) {
		a := mustRing(t, keyNew, keyOld).Derive(shuffleLabel)
		b := mustRing(t, keyNew, keyOld).Derive(shuffleLabel)
		if !bytes.Equal(a, b) {
			t.Errorf("Derive = %x and %x, want them equal", a, b)
		}
	})
	t.Run("one keyring derives the same secret every time", func(t *testing.T) {
		ring := mustRing(t, keyNew)
		if a, b := ring.Derive(shuffleLabel), ring.Derive(shuffleLabel); !bytes.Equal(a, b) {
			t.Errorf("Derive = %x, then %x", a, b)
		}
	})
	t.Run("different labels derive different secrets", func(t *testing.T) {
		ring := mustRing(t, keyNew)
		labels := []string{shuffleLabel, "waitroom shuffle ", "Waitroom shuffle", "other", "", "\x00"}
		seen := map[string]string{}
		for _, label := range labels {
			s := string(ring.Derive(label))
			if prev, dup := seen[s]; dup {
				t.Errorf("labels %q and %q derive the same secret", prev, label)
			}
			seen[s] = label
		}
	})
	t.Run("a different sealing key derives a different secret", func(t *testing.T) {
		a := mustRing(t, keyNew).Derive(shuffleLabel)
		for _, k := range []cookie.Key{keyOld, keyImpostor} { // keyImpostor shares keyNew's id
			if b := mustRing(t, k).Derive(shuffleLabel); bytes.Equal(a, b) {
				t.Errorf("keys %v and %v derive the same secret", keyNew, k)
			}
		}
	})
	t.Run("keyrings sharing the sealing key but not the opening keys derive the same secret", func(t *testing.T) {
		want := mustRing(t, keyNew).Derive(shuffleLabel)
		extra := cookie.Key{ID: 9, Secret: bytes.Repeat([]byte{0x99}, cookie.SecretLen)}
		for _, keys := range [][]cookie.Key{{keyNew, keyOld}, {keyNew, extra}, {keyNew, extra, keyOld}} {
			if got := mustRing(t, keys...).Derive(shuffleLabel); !bytes.Equal(got, want) {
				t.Errorf("ring %v derives %x, want %x (the sealing key's alone)", keys, got, want)
			}
		}
	})
	t.Run("swapping which key seals changes the secret", func(t *testing.T) {
		a := mustRing(t, keyNew, keyOld).Derive(shuffleLabel)
		b := mustRing(t, keyOld, keyNew).Derive(shuffleLabel)
		if bytes.Equal(a, b) {
			t.Errorf("rings [new old] and [old new] derive the same secret %x", a)
		}
	})
	t.Run("the secret is 32 bytes and does not contain the key", func(t *testing.T) {
		key, err := cookie.GenerateKey(nil, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []cookie.Key{keyNew, key} {
			got := mustRing(t, k).Derive(shuffleLabel)
			if len(got) != 32 {
				t.Fatalf("Derive returned %d bytes, want 32", len(got))
			}
			// No 8-byte run of the secret (a random key's runs all differ)
			// appears in the derived secret.
			for i := 0; i+8 <= len(k.Secret); i++ {
				if bytes.Contains(got, k.Secret[i:i+8]) {
					t.Fatalf("Derive = %x holds bytes %d to %d of the key's secret", got, i, i+8)
				}
			}
		}
	})
	t.Run("changing a returned secret does not change the next one", func(t *testing.T) {
		ring := mustRing(t, keyNew)
		first := ring.Derive(shuffleLabel)
		want := bytes.Clone(first)
		clear(first)
		if got := ring.Derive(shuffleLabel); !bytes.Equal(got, want) {
			t.Errorf("after clearing a returned secret, Derive = %x, want %x", got, want)
		}
		if got := ring.Derive(shuffleLabel); &got[0] == &first[0] {
			t.Error("Derive returned the same backing array twice")
		}
	})
	t.Run("changing the key's secret after building the ring does not change the secret", func(t *testing.T) {
		k := cookie.Key{ID: 9, Secret: bytes.Clone(keyNew.Secret)}
		ring := mustRing(t, k)
		clear(k.Secret)
		if got, want := ring.Derive(shuffleLabel), mustRing(t, keyNew).Derive(shuffleLabel); !bytes.Equal(got, want) {
			t.Errorf("Derive = %x, want %x", got, want)
		}
	})
	t.Run("the derivation does not change between versions", func(t *testing.T) {
		// During a rolling upgrade old and new nodes must agree, or they
		// would order a shuffled pre-queue differently. The expected value is
		// HMAC-SHA-256(HMAC-SHA-256(secret, "waitroom derive"), label).
		const want = "05da59d8be2874bfd1cf36343033e468903e77c5938131271e40d540b2bf0cee"
		if got := hex.EncodeToString(mustRing(t, keyNew, keyOld).Derive(shuffleLabel)); got != want {
			t.Errorf("Derive(%q) under keyNew = %s, want %s", shuffleLabel, got, want)
		}
	})
	t.Run("Derive is safe for concurrent use", func(t *testing.T) {
		ring := mustRing(t, keyNew)
		want := ring.Derive(shuffleLabel)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 {
					if got := ring.Derive(shuffleLabel); !bytes.Equal(got, want) {
						t.Errorf("Derive = %x, want %x", got, want)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

func TestDeriveEach(t *testing.T) {
	const label = "waitroom data directory"
	t.Run("the first secret is the one Derive returns", func(t *testing.T) {
		ring := mustRing(t, keyNew, keyOld)
		if got, want := ring.DeriveEach(label)[0], ring.Derive(label); !bytes.Equal(got, want) {
			t.Errorf("DeriveEach[0] = %x, want Derive's %x", got, want)
		}
	})
	t.Run("after a rotation the old sealing key's secret is still among them", func(t *testing.T) {
		before := mustRing(t, keyOld).Derive(label)
		each := mustRing(t, keyNew, keyOld).DeriveEach(label)
		if len(each) != 2 || !bytes.Equal(each[1], before) {
			t.Errorf("DeriveEach = %x, want the old ring's secret %x second", each, before)
		}
	})
	t.Run("each key's secret differs from the others'", func(t *testing.T) {
		each := mustRing(t, keyNew, keyOld).DeriveEach(label)
		if bytes.Equal(each[0], each[1]) {
			t.Errorf("both keys derive %x", each[0])
		}
	})
}
