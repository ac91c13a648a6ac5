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

// tryFlock takes an exclusive lock on f if no one holds one: false when
// another open file (of this process or another) holds it.
func tryFlock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch err {
		case nil:
			return true, nil
		case syscall.EWOULDBLOCK:
			return false, nil
		case syscall.EINTR:
			continue
		}
		return false, err
	}
}

// partLocked: a Put holds its part's lock until the part is renamed into place.
const partLocked = true
