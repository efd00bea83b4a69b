//go:build !unix

package bench

import "time"

// ProcessCPU is not measured on this system (0): the CPU rows stay empty.
func ProcessCPU() time.Duration { return 0 }
