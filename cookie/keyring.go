package cookie

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Wire constants; see the package documentation.
const (
	// Version is the wire version byte this package writes and reads.
	Version = 1
	// SecretLen is the length of a key's secret: AES-256.
	SecretLen = 32
	// MaxValueLen is the longest cookie value Open will look at. Sealed
	// values are far shorter (at most 120 characters).
	MaxValueLen = 512

	headerLen  = 2 // version, key id
	nonceLen   = 12
	tagLen     = 16
	overhead   = headerLen + nonceLen + tagLen
	maxWireLen = MaxValueLen * 3 / 4 // longest decoding of a MaxValueLen value
)

// b64 is the cookie value encoding. Strict makes it canonical: a value has
// exactly one spelling, so no character can change without changing the bytes.
var b64 = base64.RawURLEncoding.Strict()

// Key is one sealing key: the id written into each token and a 32-byte
// secret. Its String and GoString methods never print the secret.
type Key struct {
	ID     uint8
	Secret []byte // SecretLen bytes
}

// String names the key by id only, so that a logged Key leaks nothing.
func (k Key) String() string { return "cookie.Key(" + strconv.Itoa(int(k.ID)) + ")" }

// GoString is like String, for %#v.
func (k Key) GoString() string {
	return "cookie.Key{ID: " + strconv.Itoa(int(k.ID)) + ", Secret: <redacted>}"
}

// Keyring seals tokens under its first key and opens tokens sealed under any
// of its keys. It is safe for concurrent use. Make one with [NewKeyring].
type Keyring struct {
	seal *ringKey
	byID [256]*ringKey
	// derive is a one-way function of the sealing key, the root of Derive;
	// the secret itself is not kept. roots holds the same function of every
	// key, in the keyring's order (roots[0] is derive), for DeriveEach.
	derive []byte
	roots  [][]byte
}

type ringKey struct {
	id   uint8
	aead cipher.AEAD // cached: building an AES key schedule per token costs more than sealing it
}

// NewKeyring returns a keyring whose first key seals and whose keys all open.
// It fails if there are no keys, a secret is not SecretLen bytes, or two keys
// share an id. The secrets are not retained; later changes to them have no effect.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("cookie: keyring needs at least one key")
	}
	k := &Keyring{}
	for i, key := range keys {
		if len(key.Secret) != SecretLen {
			return nil, fmt.Errorf("cookie: key %d (id %d): secret is %d bytes, want %d", i+1, key.ID, len(key.Secret), SecretLen)
		}
		if k.byID[key.ID] != nil {
			return nil, fmt.Errorf("cookie: key %d: duplicate key id %d", i+1, key.ID)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, fmt.Errorf("cookie: key %d (id %d): %w", i+1, key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("cookie: key %d (id %d): %w", i+1, key.ID, err)
		}
		rk := &ringKey{id: key.ID, aead: aead}
		k.byID[key.ID] = rk
		m := hmac.New(sha256.New, key.Secret)
		m.Write([]byte("waitroom derive"))
		k.roots = append(k.roots, m.Sum(nil))
		if i == 0 {
			k.seal = rk
			k.derive = k.roots[0]
		}
	}
	return k, nil
}

// SealKeyID returns the id of the key that seals.
func (k *Keyring) SealKeyID() uint8 { return k.seal.id }

// scratch is a pooled working buffer. Handing a stack buffer to the AEAD (an
// interface) would move it to the heap on every call; the pool makes Open and
// AppendSeal allocation-free.
type scratch struct {
	wire [maxWireLen]byte
	ad   []byte
}

var scratchPool = sync.Pool{New: func() any { return &scratch{ad: make([]byte, 0, 64)} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.ad) > 1024 { // do not let one absurd room name pin memory
		s.ad = make([]byte, 0, 64)
	}
	scratchPool.Put(s)
}

// additionalData binds version, key id and room.
func (s *scratch) additionalData(id uint8, room string) []byte {
	s.ad = append(append(s.ad[:0], Version, id), room...)
	return s.ad
}

// Seal returns the cookie value for t in room: the URL-safe base64 (no
// padding) of the sealed token. Each call uses a fresh random nonce, so
// sealing the same token twice gives different values. Seal never fails.
func (k *Keyring) Seal(room string, t Token) string {
	s := getScratch()
	wire := k.sealWire(s, room, &t)
	var out [(maxWireLen*4 + 2) / 3]byte
	n := b64.EncodedLen(len(wire))
	b64.Encode(out[:n], wire)
	putScratch(s)
	return string(out[:n])
}

// AppendSeal appends the cookie value for t in room to dst, like Seal. With
// room in dst (120 bytes is always enough) it does not allocate.
func (k *Keyring) AppendSeal(dst []byte, room string, t Token) []byte {
	s := getScratch()
	dst = b64.AppendEncode(dst, k.sealWire(s, room, &t))
	putScratch(s)
	return dst
}

// sealWire writes the sealed binary token into s.wire and returns it.
func (k *Keyring) sealWire(s *scratch, room string, t *Token) []byte {
	rk := k.seal
	w := s.wire[:0]
	w = append(w, Version, rk.id)
	rand.Read(w[headerLen : headerLen+nonceLen]) // never fails since Go 1.24
	w = w[:headerLen+nonceLen]
	w = t.appendPayload(w)
	return rk.aead.Seal(w[:headerLen+nonceLen], w[headerLen:headerLen+nonceLen], w[headerLen+nonceLen:], s.additionalData(rk.id, room))
}

// Open errors that carry no detail are built once so that rejecting garbage
// costs no allocation.
var (
	errTooLarge   = fmt.Errorf("cookie: value longer than %d bytes: %w", MaxValueLen, ErrTooLarge)
	errBase64     = fmt.Errorf("cookie: value is not unpadded URL-safe base64: %w", ErrMalformed)
	errTruncated  = fmt.Errorf("cookie: value too short for a token: %w", ErrMalformed)
	errVersion    = fmt.Errorf("cookie: unsupported token version: %w", ErrMalformed)
	errAuthFailed = fmt.Errorf("cookie: cannot open token (tampered, wrong room or wrong secret): %w", ErrAuth)
	errExpired    = fmt.Errorf("cookie: token past its ExpiresAt: %w", ErrExpired)
)

// Open authenticates and decodes a cookie value sealed for room. It returns
// the token, or the zero Token and an error wrapping exactly one of
// [ErrTooLarge], [ErrMalformed], [ErrUnknownKey], [ErrAuth] or [ErrExpired]
// (expired means now is after ExpiresAt). It never panics, whatever value
// holds, and does not allocate unless it fails with ErrUnknownKey.
func (k *Keyring) Open(value, room string, now time.Time) (Token, error) {
	if len(value) > MaxValueLen {
		return Token{}, errTooLarge
	}
	s := getScratch()
	t, err := k.open(s, value, room, now.Unix())
	putScratch(s)
	return t, err
}

func (k *Keyring) open(s *scratch, value, room string, now int64) (Token, error) {
	// Decode from a stack copy: converting the string would allocate.
	var src [MaxValueLen]byte
	n := copy(src[:], value)
	if bytes.IndexByte(src[:n], '\n') >= 0 || bytes.IndexByte(src[:n], '\r') >= 0 {
		return Token{}, errBase64 // the decoder would skip them: one token, many spellings
	}
	wl, err := b64.Decode(s.wire[:], src[:n])
	if err != nil {
		return Token{}, errBase64
	}
	w := s.wire[:wl]
	if len(w) < overhead {
		return Token{}, errTruncated
	}
	if w[0] != Version {
		return Token{}, errVersion
	}
	rk := k.byID[w[1]]
	if rk == nil {
		return Token{}, fmt.Errorf("cookie: key id %d not in keyring: %w", w[1], ErrUnknownKey)
	}
	nonce := w[headerLen : headerLen+nonceLen]
	ct := w[headerLen+nonceLen:]
	pt, err := rk.aead.Open(ct[:0], nonce, ct, s.additionalData(rk.id, room))
	if err != nil {
		return Token{}, errAuthFailed
	}
	t, err := decodePayload(pt)
	if err != nil {
		return Token{}, err
	}
	if now > t.ExpiresAt {
		return Token{}, errExpired
	}
	return t, nil
}

// GenerateKey returns a key with the given id and a secret read from r
// (crypto/rand.Reader if r is nil).
func GenerateKey(r io.Reader, id uint8) (Key, error) {
	if r == nil {
		r = rand.Reader
	}
	secret := make([]byte, SecretLen)
	if _, err := io.ReadFull(r, secret); err != nil {
		return Key{}, fmt.Errorf("cookie: reading key secret: %w", err)
	}
	return Key{ID: id, Secret: secret}, nil
}

// GenerateKeyFile returns a fresh key file holding one key, id 1, whose
// secret is read from r (crypto/rand.Reader if r is nil).
func GenerateKeyFile(r io.Reader) ([]byte, error) {
	key, err := GenerateKey(r, 1)
	if err != nil {
		return nil, err
	}
	return FormatKeyFile(key), nil
}

// keyFileHeader explains the format to whoever opens the file.
const keyFileHeader = `# waitroom cookie keys: one "ID BASE64" per line, ID 0-255, BASE64 a 32-byte secret.
# The first key seals new cookies; the keys below it only open old ones.
# To rotate: add a new key with a new id at the top, remove the old one after the
# longest session duration. Keep this file secret and the same on every node.
`

// FormatKeyFile returns a key file holding keys in order, the first being the
// one that seals. It does not validate the keys; [ParseKeys] and
// [NewKeyring] do.
func FormatKeyFile(keys ...Key) []byte {
	b := []byte(keyFileHeader)
	for _, k := range keys {
		b = strconv.AppendUint(b, uint64(k.ID), 10)
		b = append(b, ' ')
		b = base64.StdEncoding.AppendEncode(b, k.Secret)
		b = append(b, '\n')
	}
	return b
}

// ParseKeys reads a key file (see the package documentation) and returns its
// keys in order, the sealing key first. Errors name the line; they never
// contain secret material.
func ParseKeys(data []byte) ([]Key, error) {
	var keys []Key
	seen := map[uint8]int{} // id → line
	line := 0
	for raw := range bytes.Lines(data) {
		line++
		text := string(raw)
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("cookie: key file line %d: want \"ID BASE64\", found %d fields", line, len(fields))
		}
		id, err := strconv.ParseUint(fields[0], 10, 8)
		if err != nil {
			return nil, fmt.Errorf("cookie: key file line %d: key id %q is not a number from 0 to 255", line, fields[0])
		}
		secret, ok := DecodeSecret(fields[1])
		if !ok {
			return nil, fmt.Errorf("cookie: key file line %d: secret is not base64", line)
		}
		if len(secret) != SecretLen {
			return nil, fmt.Errorf("cookie: key file line %d: secret is %d bytes, want %d", line, len(secret), SecretLen)
		}
		if prev, dup := seen[uint8(id)]; dup {
			return nil, fmt.Errorf("cookie: key file line %d: key id %d already used on line %d", line, id, prev)
		}
		seen[uint8(id)] = line
		keys = append(keys, Key{ID: uint8(id), Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("cookie: key file holds no keys")
	}
	return keys, nil
}

// DecodeSecret decodes a secret as key files write it: standard or URL-safe
// base64, padded or not. The edge reads its gossip keys the same way.
func DecodeSecret(s string) ([]byte, bool) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b, err := enc.Strict().DecodeString(s)
	return b, err == nil
}

// Derive returns a 32-byte secret for another purpose, named by label: an
// HMAC-SHA-256 over label, keyed with a one-way function of the sealing key
// computed by NewKeyring. Every node holding the same key file derives the
// same secret; it reveals nothing about the key, and the keys after the
// first do not affect it, but rotating the sealing key changes it. Each call
// returns a new slice, which the caller may modify.
func (k *Keyring) Derive(label string) []byte { return deriveFrom(k.derive, label) }

// DeriveEach returns, for every key of the keyring in its order, the
// secret Derive would return were that key the sealing one: the first is
// Derive's. What was sealed with a derived secret before a rotation (when
// a key now second was first) still opens with one of them after it.
// Each call returns new slices.
func (k *Keyring) DeriveEach(label string) [][]byte {
	out := make([][]byte, len(k.roots))
	for i, root := range k.roots {
		out[i] = deriveFrom(root, label)
	}
	return out
}

func deriveFrom(root []byte, label string) []byte {
	m := hmac.New(sha256.New, root)
	m.Write([]byte(label))
	return m.Sum(nil)
}
