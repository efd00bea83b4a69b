package webhook_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/webhook"
)

func TestSignatureVerifies(t *testing.T) {
	secret := []byte("whsec-test")
	body := []byte(`{"type":"room.queueing_started"}`)
	at := time.Unix(1767225600, 0)
	h := webhook.Sign(secret, at, body)
	if !strings.HasPrefix(h, "t=1767225600,v1=") {
		t.Fatalf("header %q", h)
	}
	for _, c := range []struct {
		name   string
		secret []byte
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"the signed body verifies", secret, h, body, at.Add(time.Minute), nil},
		{"a second v1 for a new secret verifies too", secret, h + ",v1=" + strings.Repeat("00", 32), body, at, nil},
		{"a changed body is refused", secret, h, append(body, ' '), at, webhook.ErrMismatch},
		{"another secret is refused", []byte("other"), h, body, at, webhook.ErrMismatch},
		{"an old signature is refused", secret, h, body, at.Add(10 * time.Minute), webhook.ErrTooOld},
		{"a header without v1 is malformed", secret, "t=1767225600", body, at, webhook.ErrMalformed},
		{"a short v1 is malformed", secret, "t=1,v1=abcd", body, at, webhook.ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := webhook.Verify(c.secret, c.header, c.body, c.now, webhook.DefaultTolerance); !errors.Is(err, c.want) {
				t.Errorf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

func FuzzParseSignature(f *testing.F) {
	f.Add("t=1,v1=" + strings.Repeat("ab", 32))
	f.Add("t=,v1=")
	f.Add("v0=1,t=2,v1=zz")
	f.Fuzz(func(t *testing.T, h string) {
		ts, sigs, err := webhook.Parse(h)
		if err == nil && len(sigs) == 0 {
			t.Errorf("Parse(%q) = %d, no signatures, no error", h, ts)
		}
	})
}
