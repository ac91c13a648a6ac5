//go:build !unix

package fdbstore_test

import "time"

// cpuTime is unknown here: the benchmarks leave cpu-ns/op out.
func cpuTime() (time.Duration, bool) { return 0, false }
