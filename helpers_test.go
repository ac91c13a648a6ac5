package ckptstore_test

// Fixtures shared by the root package's tests: a valid blob key and a
// clock the tests move by hand.

import (
	"time"

	"github.com/ckptstore/ckptstore/internal/testkit"
)

// fileKey returns a distinct valid blob key for n.
var fileKey = testkit.FileKey

// clock is a time source that only moves when a test moves it.
type clock = testkit.Clock

func newClock() *clock { return testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }
