package cookie

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Priority codes let a visitor skip a room's line. A code is self-validating:
// it carries its group, expiry and number of uses, and a MAC over them and
// the room, keyed with a secret every node derives from the cookie key file
// (Keyring.Derive), so no node needs a list of the codes minted. Which codes
// have been used is the ring's replicated state, not the code's.
//
// Layout before encoding (big-endian):
//
//	version (1) | id (8, random) | expires (4, unix seconds) | uses (2) |
//	group length (1) | group | MAC (16: HMAC-SHA-256 over "waitroom code",
//	the room and everything before it, truncated)
//
// encoded as lower-case base32 without padding, so it survives a URL, an
// e-mail and a reader typing it. The 128-bit MAC is what makes guessing
// useless: a forged code is accepted with probability 2^-128 per attempt.

// CodeLabel is the label under which the code secret is derived from the
// sealing key: rotating the sealing key retires every code minted before.
const CodeLabel = "waitroom priority codes v1"

const (
	codeVersion  = 1
	codeMACLen   = 16
	codeFixedLen = 1 + 8 + 4 + 2 + 1
	// MaxCodeGroup is the longest group name a code can carry.
	MaxCodeGroup = 32
	// MaxCodeUses is the largest number of uses one code may allow.
	MaxCodeUses = 10000
	// MaxCodeLen is the longest code text Verify looks at; longer input is
	// refused before any work.
	MaxCodeLen = (codeFixedLen + MaxCodeGroup + codeMACLen + 4) * 8 / 5
)

var codeEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Errors of VerifyCode. ErrCodeInvalid covers every way a code can be
// malformed or forged, so that a prober learns nothing from which it was.
var (
	ErrCodeInvalid = errors.New("priority code invalid")
	ErrCodeExpired = errors.New("priority code expired")
)

// Code is what a priority code carries.
type Code struct {
	ID      uint64 // random, unique per code: names its uses in the ring's state
	Group   string // the room's priority group it admits to
	Expires int64  // unix seconds after which it is refused
	Uses    uint16 // how many visitors it admits in all, 1 for a single-use code
}

// IDString is the code's id as 16 hex digits, as operators see it and as its
// uses are named.
func (c Code) IDString() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], c.ID)
	return hex.EncodeToString(b[:])
}

// CodeSigner mints and verifies the priority codes of every room under one
// secret.
type CodeSigner struct {
	secret []byte
}

// NewCodeSigner returns a signer keyed by the keyring's code secret.
func NewCodeSigner(k *Keyring) *CodeSigner {
	return &CodeSigner{secret: k.Derive(CodeLabel)}
}

func (s *CodeSigner) mac(room string, body []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("waitroom code\x00"))
	m.Write([]byte(room))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:codeMACLen]
}

// Mint returns a new code for room with c's group, expiry and uses and an id
// drawn from r (crypto/rand.Reader outside tests); c.ID is ignored. It
// fails on a group that is empty or too long, an expiry that does not fit,
// or uses outside 1..MaxCodeUses.
func (s *CodeSigner) Mint(r io.Reader, room string, c Code) (string, Code, error) {
	if c.Group == "" || len(c.Group) > MaxCodeGroup {
		return "", Code{}, fmt.Errorf("priority code group %q: want 1 to %d bytes", c.Group, MaxCodeGroup)
	}
	if c.Expires <= 0 || c.Expires > int64(^uint32(0)) {
		return "", Code{}, fmt.Errorf("priority code expiry %d: want a unix second up to %d", c.Expires, ^uint32(0))
	}
	if c.Uses < 1 || c.Uses > MaxCodeUses {
		return "", Code{}, fmt.Errorf("priority code uses %d: want 1 to %d", c.Uses, MaxCodeUses)
	}
	var id [8]byte
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return "", Code{}, fmt.Errorf("draw priority code id: %w", err)
	}
	c.ID = binary.BigEndian.Uint64(id[:])
	b := make([]byte, 0, codeFixedLen+len(c.Group)+codeMACLen)
	b = append(b, codeVersion)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(c.Expires))
	b = binary.BigEndian.AppendUint16(b, c.Uses)
	b = append(b, byte(len(c.Group)))
	b = append(b, c.Group...)
	b = append(b, s.mac(room, b)...)
	return codeEncoding.EncodeToString(b), c, nil
}

// Verify checks a code presented for room at now and returns what it
// carries. Case, spaces and dashes a reader may add are ignored. A code
// that is malformed, forged or minted for another room is ErrCodeInvalid;
// a genuine one past its expiry is ErrCodeExpired.
func (s *CodeSigner) Verify(text, room string, now time.Time) (Code, error) {
	if len(text) > 2*MaxCodeLen {
		return Code{}, ErrCodeInvalid
	}
	text = strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return r
	}, text)
	if len(text) > MaxCodeLen {
		return Code{}, ErrCodeInvalid
	}
	b, err := codeEncoding.DecodeString(text)
	if err != nil || len(b) < codeFixedLen+codeMACLen || b[0] != codeVersion {
		return Code{}, ErrCodeInvalid
	}
	n := len(b) - codeMACLen
	if !hmac.Equal(s.mac(room, b[:n]), b[n:]) {
		return Code{}, ErrCodeInvalid
	}
	g := int(b[codeFixedLen-1])
	if g == 0 || g > MaxCodeGroup || codeFixedLen+g != n {
		return Code{}, ErrCodeInvalid
	}
	c := Code{
		ID:      binary.BigEndian.Uint64(b[1:9]),
		Expires: int64(binary.BigEndian.Uint32(b[9:13])),
		Uses:    binary.BigEndian.Uint16(b[13:15]),
		Group:   string(b[codeFixedLen:n]),
	}
	if c.Uses < 1 || c.Uses > MaxCodeUses {
		return Code{}, ErrCodeInvalid
	}
	if now.Unix() >= c.Expires {
		return c, ErrCodeExpired
	}
	return c, nil
}
