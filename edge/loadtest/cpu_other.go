//go:build !unix

package loadtest

import "time"

// processCPU is not measured on this system: the CPU rows stay empty.
func processCPU() time.Duration { return 0 }
