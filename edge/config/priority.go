package config

import (
	"fmt"
	"regexp"
)

// PriorityGroup is one of a room's priority groups: visitors holding a
// valid code minted for the group go in ahead of the FIFO line, within the
// room's limits (a priority admission is an admission like any other, and
// counts against total_active_users and new_users_per_minute).
//
//   - name: letters, digits, '-' and '_', 1 to 32 characters, unique in the
//     room; codes name their group.
//   - share: the most of the room's admission slots the group may take ahead
//     of the line in any minute, above 0 and at most 1 (default 1: every
//     slot, if enough code holders come). Beyond its share a holder waits
//     in the line like everyone else.
//   - new_users_per_minute: the group's own cap: once the ring has admitted
//     this many of the group's holders in a minute, its holders wait in the
//     line like everyone else until the next (0, the default: no cap of its
//     own). Like the room's, it is held to within what the nodes admit
//     before they hear of each other's admissions.
type PriorityGroup struct {
	Name              string  `yaml:"name" json:"name"`
	Share             float64 `yaml:"share" json:"share,omitempty"`
	NewUsersPerMinute int     `yaml:"new_users_per_minute" json:"new_users_per_minute,omitempty"`
}

// MaxPriorityGroups is the most priority groups a room may have.
const MaxPriorityGroups = 8

var groupName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// EffectiveShare is the group's share, 1 when unset.
func (g PriorityGroup) EffectiveShare() float64 {
	if g.Share == 0 {
		return 1
	}
	return g.Share
}

// PriorityGroup returns the room's group named name, and its index.
func (r *Room) PriorityGroup(name string) (PriorityGroup, int, bool) {
	for i, g := range r.PriorityGroups {
		if g.Name == name {
			return g, i, true
		}
	}
	return PriorityGroup{}, -1, false
}

// validatePriority checks a room's priority groups and invite_only.
func (r *Room) validatePriority(p *problems) {
	if len(r.PriorityGroups) > MaxPriorityGroups {
		p.add("priority_groups", "%d groups, at most %d allowed", len(r.PriorityGroups), MaxPriorityGroups)
	}
	seen := map[string]bool{}
	for i, g := range r.PriorityGroups {
		f := fmt.Sprintf("priority_groups[%d].", i)
		if !groupName.MatchString(g.Name) {
			p.add(f+"name", "%q must be 1 to 32 letters, digits, '-' or '_'", g.Name)
		}
		if seen[g.Name] {
			p.add(f+"name", "%q appears twice", g.Name)
		}
		seen[g.Name] = true
		if g.Share < 0 || g.Share > 1 {
			p.add(f+"share", "%v must be above 0 and at most 1 (0 or unset means 1)", g.Share)
		}
		if g.NewUsersPerMinute < 0 {
			p.add(f+"new_users_per_minute", "%d must be 0 (no cap of its own) or more", g.NewUsersPerMinute)
		}
	}
	if r.InviteOnly && len(r.PriorityGroups) == 0 {
		p.add("invite_only", "needs at least one priority group, whose codes let visitors in")
	}
}
