package memdriver_test

import (
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/memdriver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

func TestConformance(t *testing.T) {
	persisttest.Run(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return memdriver.New(memdriver.Options{Now: now})
	})
}

// TestRealTimeLocks runs the real-time lock cases too, so that both
// variants are proven on the reference driver.
func TestRealTimeLocks(t *testing.T) {
	persisttest.RunRealTimeLocks(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return memdriver.New(memdriver.Options{Now: now})
	})
}
