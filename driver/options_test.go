package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

func TestOptionsResolve(t *testing.T) {
	tests := []struct {
		name              string
		in                driver.Options
		wantLease, wantRA time.Duration
	}{
		{"zero value", driver.Options{}, 120 * time.Second, 45 * time.Second},
		{"only lease", driver.Options{LeaseDuration: 80 * time.Second}, 80 * time.Second, 30 * time.Second},
		{"only lease, not divisible by 8", driver.Options{LeaseDuration: 100 * time.Millisecond}, 100 * time.Millisecond, 37500 * time.Microsecond},
		{"only lease, 1ns", driver.Options{LeaseDuration: 1}, 1, 0},
		{"only lease, largest (3·lease overflows)", driver.Options{LeaseDuration: 1<<63 - 1}, 1<<63 - 1, (1<<63-1)/8*3 + 2}, // ⌊3(8q+7)/8⌋ = 3q+2
		{"only renewAfter", driver.Options{RenewAfter: 10 * time.Second}, 120 * time.Second, 10 * time.Second},
		{"only renewAfter, just below default lease", driver.Options{RenewAfter: 120*time.Second - 1}, 120 * time.Second, 120*time.Second - 1},
		{"both", driver.Options{LeaseDuration: 100 * time.Millisecond, RenewAfter: 25 * time.Millisecond}, 100 * time.Millisecond, 25 * time.Millisecond},
		{"renewAfter one below lease", driver.Options{LeaseDuration: time.Second, RenewAfter: time.Second - 1}, time.Second, time.Second - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Resolve()
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got.LeaseDuration != tt.wantLease || got.RenewAfter != tt.wantRA {
				t.Fatalf("Resolve = lease %v, renewAfter %v; want %v, %v", got.LeaseDuration, got.RenewAfter, tt.wantLease, tt.wantRA)
			}
			if got.Now == nil {
				t.Fatal("Resolve left Now nil")
			}
			if got.RenewAfter < 0 || got.RenewAfter >= got.LeaseDuration {
				t.Fatalf("resolved options break RenewAfter < LeaseDuration: %v, %v", got.RenewAfter, got.LeaseDuration)
			}
		})
	}
}

func TestOptionsResolveKeepsClock(t *testing.T) {
	fixed := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
	got, err := driver.Options{Now: func() time.Time { return fixed }}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Now().Equal(fixed) {
		t.Fatalf("Now() = %v, want the given clock's %v", got.Now(), fixed)
	}
}

func TestOptionsResolveInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   driver.Options
	}{
		{"negative lease", driver.Options{LeaseDuration: -time.Second}},
		{"negative renewAfter", driver.Options{RenewAfter: -1}},
		{"negative renewAfter with lease", driver.Options{LeaseDuration: time.Second, RenewAfter: -1}},
		{"renewAfter equals lease", driver.Options{LeaseDuration: time.Second, RenewAfter: time.Second}},
		{"renewAfter above lease", driver.Options{LeaseDuration: time.Second, RenewAfter: 2 * time.Second}},
		{"only renewAfter, equals default lease", driver.Options{RenewAfter: 120 * time.Second}},
		{"only renewAfter, above default lease", driver.Options{RenewAfter: time.Hour}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Resolve()
			if !errors.Is(err, driver.ErrInvalidOptions) {
				t.Fatalf("Resolve error = %v, want ErrInvalidOptions", err)
			}
			if code := driver.Code(err); code != "" {
				t.Fatalf("Code(invalid options) = %q, want \"\": not a contract error", code)
			}
		})
	}
}
