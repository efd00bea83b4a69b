package cookie_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
)

var codeNow = time.Unix(1_800_000_000, 0)

func mintCode(t *testing.T, s *cookie.CodeSigner, room string, c cookie.Code) (string, cookie.Code) {
	t.Helper()
	text, minted, err := s.Mint(rand.Reader, room, c)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return text, minted
}

func TestPriorityCodes(t *testing.T) {
	signer := cookie.NewCodeSigner(mustRing(t, keyNew, keyOld))
	vip := cookie.Code{Group: "vip", Expires: codeNow.Add(48 * time.Hour).Unix(), Uses: 1}
	text, minted := mintCode(t, signer, "tickets", vip)

	t.Run("a minted code verifies for its room and carries what it was minted with", func(t *testing.T) {
		got, err := signer.Verify(text, "tickets", codeNow)
		if err != nil || got != minted || got.Group != "vip" || got.Uses != 1 || got.Expires != vip.Expires {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, minted)
		}
		if len(minted.IDString()) != 16 {
			t.Fatalf("IDString %q is not 16 hex digits", minted.IDString())
		}
	})

	t.Run("a reader's spaces, dashes and capitals do not matter", func(t *testing.T) {
		typed := strings.ToUpper(text[:10]) + "-" + text[10:20] + " " + text[20:]
		if got, err := signer.Verify(typed, "tickets", codeNow); err != nil || got != minted {
			t.Fatalf("Verify(%q) = %+v, %v", typed, got, err)
		}
	})

	t.Run("a code is refused as expired from its expiry on", func(t *testing.T) {
		if _, err := signer.Verify(text, "tickets", time.Unix(vip.Expires, 0)); !errors.Is(err, cookie.ErrCodeExpired) {
			t.Fatalf("Verify at expiry: %v, want ErrCodeExpired", err)
		}
	})

	other := cookie.NewCodeSigner(mustRing(t, keyOld))
	for _, tc := range []struct {
		name, text, room string
		signer           *cookie.CodeSigner
	}{
		{"a code is refused in another room", text, "vaccine", signer},
		{"a code is refused by nodes holding another sealing key", text, "tickets", other},
		{"a code with one character changed is refused", flip(text, 5), "tickets", signer},
		{"a code with its MAC changed is refused", flip(text, len(text)-2), "tickets", signer},
		{"a truncated code is refused", text[:len(text)-3], "tickets", signer},
		{"an empty code is refused", "", "tickets", signer},
		{"a code of megabytes is refused", strings.Repeat("a", 1<<20), "tickets", signer},
		{"a code with letters outside its alphabet is refused", text[:4] + "0" + text[5:], "tickets", signer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := tc.signer.Verify(tc.text, tc.room, codeNow); !errors.Is(err, cookie.ErrCodeInvalid) || got != (cookie.Code{}) {
				t.Fatalf("Verify = %+v, %v; want ErrCodeInvalid and nothing", got, err)
			}
		})
	}

	t.Run("minting refuses a group, expiry or uses out of range", func(t *testing.T) {
		for _, c := range []cookie.Code{
			{Group: "", Expires: vip.Expires, Uses: 1},
			{Group: strings.Repeat("g", cookie.MaxCodeGroup+1), Expires: vip.Expires, Uses: 1},
			{Group: "vip", Expires: 0, Uses: 1},
			{Group: "vip", Expires: 1 << 40, Uses: 1},
			{Group: "vip", Expires: vip.Expires, Uses: 0},
			{Group: "vip", Expires: vip.Expires, Uses: cookie.MaxCodeUses + 1},
		} {
			if _, _, err := signer.Mint(rand.Reader, "tickets", c); err == nil {
				t.Errorf("Mint(%+v) succeeded", c)
			}
		}
	})

	t.Run("two codes minted alike differ and both verify", func(t *testing.T) {
		a, ca := mintCode(t, signer, "tickets", vip)
		b, cb := mintCode(t, signer, "tickets", vip)
		if a == b || ca.ID == cb.ID {
			t.Fatalf("two mints gave %q and %q", a, b)
		}
		if len(a) > cookie.MaxCodeLen {
			t.Fatalf("a code of %d characters exceeds MaxCodeLen %d", len(a), cookie.MaxCodeLen)
		}
	})
}

// flip changes the character at i to another of the code alphabet.
func flip(s string, i int) string {
	c := byte('a')
	if s[i] == 'a' {
		c = 'b'
	}
	return s[:i] + string(c) + s[i+1:]
}

// FuzzVerifyCode feeds arbitrary text to Verify: it must never panic, and
// what it accepts re-mints (same id drawn) to the same code.
//
//	go test -run '^$' -fuzz '^FuzzVerifyCode$' -fuzztime 30s ./cookie/
func FuzzVerifyCode(f *testing.F) {
	signer := cookie.NewCodeSigner(mustRing(f, keyNew))
	text, _, err := signer.Mint(rand.Reader, "tickets", cookie.Code{Group: "vip", Expires: codeNow.Add(time.Hour).Unix(), Uses: 200})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(text)
	f.Add(strings.ToUpper(text))
	f.Add("")
	f.Add("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := signer.Verify(s, "tickets", codeNow)
		if err != nil {
			if errors.Is(err, cookie.ErrCodeInvalid) && c != (cookie.Code{}) {
				t.Fatalf("refused as invalid but returned %+v", c)
			}
			return
		}
		var id [8]byte
		for i := range id {
			id[i] = byte(c.ID >> (56 - 8*i))
		}
		again, c2, err := signer.Mint(bytes.NewReader(id[:]), "tickets", c)
		if err != nil || c2 != c {
			t.Fatalf("re-mint of %+v: %+v, %v", c, c2, err)
		}
		if again2, _ := signer.Verify(again, "tickets", codeNow); again2 != c {
			t.Fatalf("re-minted code verifies to %+v, want %+v", again2, c)
		}
	})
}
