package config_test

import (
	"testing"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/policy"
)

func TestARoomsCellLimitsAreTheLargestAnyOfItsSettingsAllow(t *testing.T) {
	n := func(v int) *int { return &v }
	base := config.Room{Name: "shop", TotalActiveUsers: 500, NewUsersPerMinute: 200, MaxQueue: 10000, QueueingMethod: "fifo"}
	withEvents := func(es ...config.Event) config.Room {
		r := base
		r.Events = es
		return r
	}
	tests := []struct {
		name string
		room config.Room
		want policy.CellLimits
	}{
		{"a room without events has its own limits", base,
			policy.CellLimits{TotalActiveUsers: 500, NewUsersPerMinute: 200, MaxQueue: 10000}},
		{"an event's higher limits raise them", withEvents(config.Event{TotalActiveUsers: n(2000), NewUsersPerMinute: n(800)}),
			policy.CellLimits{TotalActiveUsers: 2000, NewUsersPerMinute: 800, MaxQueue: 10000}},
		{"an event's lower limits do not lower them", withEvents(config.Event{TotalActiveUsers: n(50), NewUsersPerMinute: n(10)}),
			policy.CellLimits{TotalActiveUsers: 500, NewUsersPerMinute: 200, MaxQueue: 10000}},
		{"the largest of several events counts", withEvents(config.Event{TotalActiveUsers: n(900)}, config.Event{TotalActiveUsers: n(700), NewUsersPerMinute: n(300)}),
			policy.CellLimits{TotalActiveUsers: 900, NewUsersPerMinute: 300, MaxQueue: 10000}},
		{"an event that lets everyone through leaves the counts unbounded", withEvents(config.Event{QueueingMethod: "passthrough"}),
			policy.CellLimits{TotalActiveUsers: 500, NewUsersPerMinute: 200, MaxQueue: 10000, Unbounded: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.room.CellLimits(); got != tc.want {
				t.Errorf("CellLimits = %+v, want %+v", got, tc.want)
			}
		})
	}
	passthrough := base
	passthrough.QueueingMethod = "passthrough"
	if !passthrough.CellLimits().Unbounded {
		t.Error("a passthrough room's counts are bounded")
	}
}
