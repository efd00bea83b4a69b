package config

import "github.com/waitroom/waitroom/policy"

// CellLimits are the largest limits room c has in force at any time, its
// events' included, as policy.CellLimits bounds a peer's counts by them:
// a count above what any of its settings make possible is refused before
// it merges.
func (c *Room) CellLimits() policy.CellLimits {
	l := policy.CellLimits{
		TotalActiveUsers:  c.TotalActiveUsers,
		NewUsersPerMinute: c.NewUsersPerMinute,
		MaxQueue:          c.MaxQueue,
		Unbounded:         c.QueueingMethod == string(policy.Passthrough),
	}
	for _, e := range c.Events {
		if e.TotalActiveUsers != nil {
			l.TotalActiveUsers = max(l.TotalActiveUsers, *e.TotalActiveUsers)
		}
		if e.NewUsersPerMinute != nil {
			l.NewUsersPerMinute = max(l.NewUsersPerMinute, *e.NewUsersPerMinute)
		}
		l.Unbounded = l.Unbounded || e.QueueingMethod == string(policy.Passthrough)
	}
	return l
}
