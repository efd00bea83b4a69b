package config_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/edge/config"
)

func TestPriorityGroupsValidate(t *testing.T) {
	base := func(groups ...config.PriorityGroup) config.Room {
		return config.Room{Name: "shop", TotalActiveUsers: 500, NewUsersPerMinute: 200, PriorityGroups: groups}
	}
	invite := base()
	invite.InviteOnly = true
	tooMany := base()
	for i := range config.MaxPriorityGroups + 1 {
		tooMany.PriorityGroups = append(tooMany.PriorityGroups, config.PriorityGroup{Name: "g" + strings.Repeat("x", i)})
	}
	for _, tc := range []struct {
		name string
		room config.Room
		want string
	}{
		{"groups with names and shares are accepted", base(config.PriorityGroup{Name: "vip", Share: 0.25}, config.PriorityGroup{Name: "partner_1"}), ""},
		{"a group without a name is refused", base(config.PriorityGroup{}), "priority_groups[0].name"},
		{"a group name with a space is refused", base(config.PriorityGroup{Name: "v i p"}), "priority_groups[0].name"},
		{"a group named twice is refused", base(config.PriorityGroup{Name: "vip"}, config.PriorityGroup{Name: "vip"}), `priority_groups[1].name: "vip" appears twice`},
		{"a share above 1 is refused", base(config.PriorityGroup{Name: "vip", Share: 1.5}), "priority_groups[0].share: 1.5 must be above 0 and at most 1"},
		{"a negative cap of its own is refused", base(config.PriorityGroup{Name: "vip", NewUsersPerMinute: -1}), "priority_groups[0].new_users_per_minute: -1 must be 0"},
		{"a negative share is refused", base(config.PriorityGroup{Name: "vip", Share: -0.1}), "priority_groups[0].share"},
		{"more groups than allowed are refused", tooMany, "priority_groups: 9 groups, at most 8 allowed"},
		{"an invite-only room without a group is refused", invite, "invite_only: needs at least one priority group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.room.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("a group's share is 1 when unset", func(t *testing.T) {
		r := base(config.PriorityGroup{Name: "vip"}, config.PriorityGroup{Name: "partner", Share: 0.1})
		g, i, ok := r.PriorityGroup("partner")
		if !ok || i != 1 || g.EffectiveShare() != 0.1 {
			t.Fatalf("PriorityGroup(partner) = %+v, %d, %v", g, i, ok)
		}
		if g, _, _ := r.PriorityGroup("vip"); g.EffectiveShare() != 1 {
			t.Fatalf("vip's share %v, want 1", g.EffectiveShare())
		}
	})
}
