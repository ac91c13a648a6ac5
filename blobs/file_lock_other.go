//go:build !unix

package blobs

import "os"

// flock is a no-op where flock(2) does not exist: the lock then holds
// only within one process (its mutex), so two processes must not sweep
// and capture into one file bucket at the same time there.
func flock(*os.File) error { return nil }

func funlock(*os.File) {}

// tryFlock always succeeds where flock(2) does not exist: a part's age
// alone then decides whether it is debris.
func tryFlock(*os.File) (bool, error) { return true, nil }

// partLocked: flock is a no-op here, so a Put closes its part before the rename.
const partLocked = false
