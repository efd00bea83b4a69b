package policy_test

import (
	"testing"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestCellCeiling(t *testing.T) {
	room := policy.CellLimits{TotalActiveUsers: 100, NewUsersPerMinute: 50}
	tests := []struct {
		name   string
		l      policy.CellLimits
		k      crdt.Kind
		want   uint64
		bounds bool
	}{
		{"admissions are bounded by ten times new users per minute, and some", room, crdt.Admitted, 50*policy.CellHeadroom + policy.CellSlack, true},
		{"a session cell is bounded by the active sessions there can be", room, crdt.SessionPlus, 100*policy.CellHeadroom + policy.CellSlack, true},
		{"a session's move out of a cell likewise", room, crdt.SessionMinus, 100*policy.CellHeadroom + policy.CellSlack, true},
		{"arrivals are real traffic, bounded by no limit", room, crdt.Arrivals, 0, false},
		{"the queue is unbounded without max_queue", room, crdt.WaitingPlus, 0, false},
		{"with max_queue a waiting cell is bounded by it", policy.CellLimits{TotalActiveUsers: 100, NewUsersPerMinute: 50, MaxQueue: 200}, crdt.WaitingPlus, 200*policy.CellHeadroom + policy.CellSlack, true},
		{"passthrough admits with the traffic", policy.CellLimits{TotalActiveUsers: 100, NewUsersPerMinute: 50, Unbounded: true}, crdt.Admitted, 0, false},
		{"a limit near the largest is capped at the absolute bound", policy.CellLimits{TotalActiveUsers: 2147483647, NewUsersPerMinute: 2147483647}, crdt.Admitted, crdt.MaxEntryValue, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.l.Ceiling(tc.k)
			if got != tc.want || ok != tc.bounds {
				t.Errorf("Ceiling(%d) = %d, %v; want %d, %v", tc.k, got, ok, tc.want, tc.bounds)
			}
		})
	}
}
