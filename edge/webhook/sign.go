// Package webhook signs the notices a waitroom ring sends to the operator's
// webhooks, and checks such a signature: what a receiver written in Go needs
// to trust a notice. The scheme is the one the big payment platforms use:
// the header
//
//	Waitroom-Signature: t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
//
// carries the unix second the notice was signed at (t) and the hex
// HMAC-SHA256, under the webhook's secret, of that second, a '.', and the
// request body exactly as sent (v1). A receiver recomputes the HMAC over the
// raw body, compares it in constant time, and refuses a t too far from its
// own clock, so that a captured notice cannot be replayed later. More than
// one v1 may appear while a secret is being replaced; any one matching is
// enough.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the request header that carries the signature; EventHeader
// carries the notice's id, the same on every attempt and from every node,
// by which a receiver drops a repeat; SenderHeader names the node that sent
// it.
const (
	Header       = "Waitroom-Signature"
	EventHeader  = "Waitroom-Event-Id"
	SenderHeader = "Waitroom-Sender"
)

// DefaultTolerance is how far a signature's time may be from the receiver's
// clock.
const DefaultTolerance = 5 * time.Minute

// Sign returns the header value for body signed with secret at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac(secret, t.Unix(), body)))
}

func mac(secret []byte, t int64, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors Verify returns.
var (
	ErrMalformed = errors.New("webhook signature header malformed")
	ErrTooOld    = errors.New("webhook signature outside the time tolerance")
	ErrMismatch  = errors.New("webhook signature does not match")
)

// Parse reads a signature header: its time and its v1 signatures. Unknown
// fields (later schemes) are skipped.
func Parse(header string) (t int64, sigs [][]byte, err error) {
	seenT := false
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, nil, fmt.Errorf("%w: %q is not key=value", ErrMalformed, part)
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || seenT {
				return 0, nil, fmt.Errorf("%w: t=%q", ErrMalformed, v)
			}
			t, seenT = n, true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return 0, nil, fmt.Errorf("%w: v1 is not 64 hex digits", ErrMalformed)
			}
			sigs = append(sigs, b)
		}
	}
	if !seenT || len(sigs) == 0 {
		return 0, nil, fmt.Errorf("%w: want both t and v1", ErrMalformed)
	}
	return t, sigs, nil
}

// Verify checks a signature header against body and secret, refusing a
// time more than tolerance from now.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	t, sigs, err := Parse(header)
	if err != nil {
		return err
	}
	if d := now.Unix() - t; d > int64(tolerance/time.Second) || -d > int64(tolerance/time.Second) {
		return fmt.Errorf("%w: signed %d s from now", ErrTooOld, d)
	}
	want := mac(secret, t, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrMismatch
}
