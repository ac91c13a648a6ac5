package httpstore

import (
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// TestNewKey: a write's Idempotency-Key (and so a lease's owner token) is
// an op token, and keys from many goroutines do not repeat.
func TestNewKey(t *testing.T) {
	const goroutines, each = 8, 2000
	keys := make(chan string, goroutines*each)
	done := make(chan struct{})
	for range goroutines {
		go func() {
			for range each {
				keys <- newKey()
			}
			done <- struct{}{}
		}()
	}
	for range goroutines {
		<-done
	}
	close(keys)
	seen := map[string]bool{}
	for k := range keys {
		if !driver.ValidOpToken(k) || len(k) != 26 {
			t.Fatalf("key %q is not a 26-character op token", k)
		}
		if seen[k] {
			t.Fatalf("key %q repeats", k)
		}
		seen[k] = true
	}
}
