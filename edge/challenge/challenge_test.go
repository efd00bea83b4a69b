package challenge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/challenge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

func TestNew(t *testing.T) {
	sv := edgetest.NewSiteverify(t, "the-secret")
	challenged := edgetest.ChallengedRoom(sv, "infinite_queue", "deny")
	tests := []struct {
		name     string
		room     func() config.Room
		none     bool
		wantErr  string
		infinite bool
		failOpen bool
		widget   []string
	}{
		{name: "a room without a challenge has none", room: func() config.Room { return edgetest.Room("shop", 1, 1) }, none: true},
		{name: "an invisible Turnstile widget sends its token back in the challenge's parameter",
			room: func() config.Room { return challenged }, infinite: true,
			widget: []string{"challenges.cloudflare.com/turnstile/v0/api.js", `class="cf-turnstile"`, `data-sitekey="0x4AAAAAAA-site-key"`, `data-size="invisible"`, challenge.Param}},
		{name: "hCaptcha's widget is its own, and log fails open",
			room: func() config.Room {
				rc := challenged
				rc.TurnstileProvider, rc.TurnstileAction, rc.TurnstileOnError, rc.TurnstileMode = "hcaptcha", "log", "allow", "managed"
				return rc
			},
			failOpen: true, widget: []string{"js.hcaptcha.com/1/api.js", `class="h-captcha"`}},
		{name: "a provider the node does not know is refused",
			room:    func() config.Room { rc := challenged; rc.TurnstileProvider = "captcha.example"; return rc },
			wantErr: `turnstile_provider "captcha.example" is not known`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := tt.room()
			ch, err := challenge.New(&rc)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tt.none:
				if ch != nil {
					t.Fatalf("a challenge: %+v", ch)
				}
				return
			}
			if ch.Infinite != tt.infinite || ch.FailOpen != tt.failOpen {
				t.Errorf("infinite %v, fail open %v; want %v, %v", ch.Infinite, ch.FailOpen, tt.infinite, tt.failOpen)
			}
			for _, w := range tt.widget {
				if !strings.Contains(ch.Widget, w) {
					t.Errorf("widget lacks %q:\n%s", w, ch.Widget)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	sv := edgetest.NewSiteverify(t, "the-secret")
	rc := edgetest.ChallengedRoom(sv, "infinite_queue", "deny")
	rc.TurnstileTimeout = config.Duration(time.Second)
	ch, err := challenge.New(&rc)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret := rc
	wrongSecret.TurnstileSecret = "another-secret"
	other, err := challenge.New(&wrongSecret)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		ch       *challenge.Challenge
		response string
		want     challenge.Verdict
		wantErr  bool
	}{
		{"a human's token is solved", ch, "human", challenge.Solved, false},
		{"a bot's token is failed", ch, "bot", challenge.Failed, false},
		{"a token checked with the wrong secret is failed", other, "human", challenge.Failed, false},
		{"a verifier slower than the timeout gives no verdict", ch, "slow", challenge.Unavailable, true},
		{"a malformed answer gives no verdict", ch, "garbage", challenge.Unavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ch.Check(context.Background(), tt.response, "192.0.2.7")
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("verdict %v, %v; want %v, an error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
