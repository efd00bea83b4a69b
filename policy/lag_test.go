package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy"
)

func TestAssumedLag(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name              string
		delay, configured time.Duration
		want              time.Duration
	}{
		{"a measured delay is doubled, with time for the allocation to follow", 100 * ms, 2 * time.Second, 250 * ms},
		{"a ring faster than the floor assumes the floor", 20 * ms, 2 * time.Second, policy.LagFloor},
		{"a slow ring assumes no more than the configured bound", 800 * ms, time.Second, time.Second},
		{"a configured bound below the floor wins", 10 * ms, 100 * ms, 100 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.AssumedLag(tc.delay, tc.configured); got != tc.want {
				t.Fatalf("AssumedLag(%v, %v) = %v, want %v", tc.delay, tc.configured, got, tc.want)
			}
		})
	}
}
