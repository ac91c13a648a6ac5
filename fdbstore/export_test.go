package fdbstore

import "time"

// PersistCheck is the persistence's part of Check alone, for the external
// tests of the persistence driver.
var PersistCheck = (*Persistence).check

// SetDumpPage sets how many keys one range read and one transaction of
// Dump take and returns a func that restores them, so that a small
// store's dump crosses pages. Tests that call it must not run in parallel.
func SetDumpPage(n int) (restore func()) {
	old := dumpLimits
	dumpLimits.rangeKeys, dumpLimits.txKeys = n, n
	return func() { dumpLimits = old }
}

// SetStreamsRecheck sets how long a live reader on a database without
// watches waits before it reads again, and returns a func that restores
// it. Tests that call it must not run in parallel.
func SetStreamsRecheck(d time.Duration) (restore func()) {
	old := streamsRecheck
	streamsRecheck = d
	return func() { streamsRecheck = old }
}
