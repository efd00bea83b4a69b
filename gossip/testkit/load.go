package testkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

// ProcessCPU is the CPU time (user and system) process pid has used, from
// /proc/PID/stat; false where there is no such file or it does not parse.
// A measurement takes two readings and the difference.
func ProcessCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on every Linux Go runs on
	return time.Duration(ut+st) * tick, true
}
