package testkit

import (
	"os"
	"strings"
)

// LoadAverage is the machine's 1-minute load average as /proc/loadavg
// gives it ("?" where there is none). Measurements print it beside their
// figures: the processes measured share the CPUs with whatever else runs.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
