package deliver

import (
	"slices"
	"testing"
)

func TestMemberChangesTellOfASuspectedNodeOnceWhenItBecomesSo(t *testing.T) {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	tests := []struct {
		name                string
		before, now         map[string]bool
		suspBefore, suspNow map[string]bool
		want                []memberChange
	}{
		{name: "a quiet ring tells nothing", before: set("a", "b", "c"), now: set("a", "b", "c")},
		{name: "a member that falls silent is told of as suspected",
			before: set("a", "b", "c"), now: set("a", "b", "c"), suspNow: set("c"),
			want: []memberChange{{"node.suspected", "c"}}},
		{name: "a member still suspected the next round is not told of again",
			before: set("a", "b", "c"), now: set("a", "b", "c"), suspBefore: set("c"), suspNow: set("c")},
		{name: "a suspect that is heard again tells nothing",
			before: set("a", "b", "c"), now: set("a", "b", "c"), suspBefore: set("c")},
		{name: "a suspect declared dead is told of as left only",
			before: set("a", "b", "c"), now: set("a", "b"), suspBefore: set("c"),
			want: []memberChange{{"node.left", "c"}}},
		{name: "joins, suspicions and leaves come sorted by node",
			before: set("a", "c"), now: set("a", "b"), suspNow: set("a"),
			want: []memberChange{{"node.suspected", "a"}, {"node.joined", "b"}, {"node.left", "c"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := memberChanges(tc.before, tc.now, tc.suspBefore, tc.suspNow)
			if !slices.Equal(got, tc.want) {
				t.Errorf("memberChanges = %v, want %v", got, tc.want)
			}
		})
	}
}
