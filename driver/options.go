package driver

import (
	"fmt"
	"time"
)

// Default lease timing, as in @tanstack/ai-sandbox's in-memory store.
const (
	DefaultLeaseDuration = 120 * time.Second
	DefaultRenewAfter    = 45 * time.Second
)

// Options are the lease settings and clock shared by every store. The zero
// value is valid: the system clock, a 120 s lease, renew after 45 s.
type Options struct {
	// Now is the clock for every lease decision; nil means time.Now. Tests
	// pass their own clock to move time without sleeping.
	Now func() time.Time
	// LeaseDuration is how long a lease lives after it is taken or
	// renewed; 0 means 120 s. Stores keep lease times at millisecond
	// resolution, as the wire contract does.
	LeaseDuration time.Duration
	// RenewAfter is how long a holder may wait before renewing; it must be
	// less than LeaseDuration. 0 means 45 s when LeaseDuration is 0 too,
	// and 3/8 of LeaseDuration when only LeaseDuration is set.
	RenewAfter time.Duration
}

// Resolve returns o with its defaults filled in, or an error wrapping
// ErrInvalidOptions when a duration is negative or RenewAfter is not less
// than LeaseDuration.
func (o Options) Resolve() (Options, error) {
	if o.LeaseDuration < 0 || o.RenewAfter < 0 {
		return o, fmt.Errorf("%w: LeaseDuration %v and RenewAfter %v must not be negative", ErrInvalidOptions, o.LeaseDuration, o.RenewAfter)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.LeaseDuration == 0 && o.RenewAfter == 0:
		o.LeaseDuration, o.RenewAfter = DefaultLeaseDuration, DefaultRenewAfter
	case o.LeaseDuration == 0:
		o.LeaseDuration = DefaultLeaseDuration
	case o.RenewAfter == 0:
		// 3/8 without the overflow of LeaseDuration*3 for leases over ~97 years.
		o.RenewAfter = o.LeaseDuration/8*3 + o.LeaseDuration%8*3/8
	}
	if o.RenewAfter >= o.LeaseDuration {
		return o, fmt.Errorf("%w: RenewAfter %v must be less than LeaseDuration %v", ErrInvalidOptions, o.RenewAfter, o.LeaseDuration)
	}
	return o, nil
}
