package edgetest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// Siteverify is a fake Turnstile/hCaptcha siteverify endpoint: "human"
// passes, "bot" fails, "slow" outlasts the timeout the verdict tests set
// for it, "garbage" gets a malformed answer.
type Siteverify struct {
	*httptest.Server
	// Calls counts the verdicts asked of it.
	Calls atomic.Int64
}

// NewSiteverify starts a fake siteverify endpoint that knows secret,
// closed when the test ends.
func NewSiteverify(tb testing.TB, secret string) *Siteverify {
	sv := &Siteverify{}
	sv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sv.Calls.Add(1)
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("secret") != secret {
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-secret"]}`))
			return
		}
		switch r.PostForm.Get("response") {
		case "human":
			_, _ = w.Write([]byte(`{"success":true,"hostname":"shop.test"}`))
		case "slow":
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			_, _ = w.Write([]byte(`{"success":true}`))
		case "garbage":
			_, _ = w.Write([]byte(`<html>oops`))
		default:
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-response"]}`))
		}
	}))
	tb.Cleanup(sv.Close)
	return sv
}

// ChallengedRoom is a full room (one slot, taken) with an invisible
// challenge and the given action, verified against sv.
func ChallengedRoom(sv *Siteverify, action, onError string) config.Room {
	rc := Room("shop", 1, 1)
	rc.TurnstileMode = "invisible"
	rc.TurnstileAction = action
	rc.TurnstileSiteKey = "0x4AAAAAAA-site-key"
	rc.TurnstileSecret = "the-secret"
	rc.TurnstileVerifyURL = sv.URL
	// Generous: the verifier answers on loopback, but a busy machine under
	// the race detector can take longer than a real verifier's timeout to
	// serve it, and a verdict lost to the timeout fails open (or closed)
	// instead of counting as solved. The tests of the timeout shorten it.
	rc.TurnstileTimeout = config.Duration(10 * time.Second)
	rc.TurnstileOnError = onError
	rc.EnabledOriginCommands = []string{"revoke"}
	return rc
}
