//go:build !unix

package edge_test

import "time"

// processCPU is not measured here; the throughput figures still are.
func processCPU() time.Duration { return 0 }
