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
