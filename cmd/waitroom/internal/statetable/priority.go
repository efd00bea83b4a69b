package statetable

import (
	"fmt"
	"io"
	"slices"

	"github.com/waitroom/waitroom/edge/api"
)

// writePriorityGroups writes a room's priority groups' figures of the last
// ten minutes, one line per group in name order.
func writePriorityGroups(w io.Writer, groups map[string]api.GroupFigures) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.Sort(names)
	for _, g := range names {
		f := groups[g]
		fmt.Fprintf(w, "  priority group %s\tadmitted %d, code uses %d\n", g, f.Admitted, f.CodeUses)
	}
}
