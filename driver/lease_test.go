package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

// A driver's lease value has no keeper: using it as a harness's lease is a
// programming error that Renew and Release report, without panicking or
// changing the lease.
func TestLeaseWithoutKeeper(t *testing.T) {
	exp := time.Date(2025, 1, 1, 0, 2, 0, 0, time.UTC)
	l := driver.Lease{Writer: driver.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1}, ExpiresAt: exp}
	if _, err := l.Renew(context.Background()); err == nil {
		t.Error("Renew of a lease without a keeper succeeded")
	}
	if err := l.Release(context.Background()); err == nil {
		t.Error("Release of a lease without a keeper succeeded")
	}
	if !l.ExpiresAt.Equal(exp) {
		t.Errorf("ExpiresAt changed to %v", l.ExpiresAt)
	}
}
