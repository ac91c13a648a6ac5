//go:build unix

package blobs

import (
	"os"
	"syscall"
)

// flock takes an exclusive lock on f, held against other processes until
// funlock.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func funlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
