package driver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// sentinels lists every contract error with the wire code docs/contract.md gives it.
var sentinels = []struct {
	name string
	err  error
	code string
}{
	{"ErrConflict", driver.ErrConflict, "SANDBOX_SNAPSHOT_STALE_HEAD"},
	{"ErrParentMismatch", driver.ErrParentMismatch, "SANDBOX_SNAPSHOT_PARENT_MISMATCH"},
	{"ErrDuplicateID", driver.ErrDuplicateID, "SANDBOX_SNAPSHOT_DUPLICATE_ID"},
	{"ErrNotHead", driver.ErrNotHead, "SANDBOX_SNAPSHOT_NOT_HEAD"},
	{"ErrWriterConflict", driver.ErrWriterConflict, "SANDBOX_SNAPSHOT_WRITER_CONFLICT"},
	{"ErrWriterLost", driver.ErrWriterLost, "SANDBOX_SNAPSHOT_WRITER_LOST"},
	{"ErrInvalidID", driver.ErrInvalidID, "SANDBOX_SNAPSHOT_INVALID_ID"},
	{"ErrInvalidEntry", driver.ErrInvalidEntry, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
	{"ErrForkSourceNotFound", driver.ErrForkSourceNotFound, "SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND"},
	{"ErrForkSourceThreadMismatch", driver.ErrForkSourceThreadMismatch, "SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH"},
	{"ErrForkDestinationNotEmpty", driver.ErrForkDestinationNotEmpty, "SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY"},
}

func TestCode(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.name, func(t *testing.T) {
			if got := driver.Code(s.err); got != s.code {
				t.Errorf("Code(%s) = %q, want %q", s.name, got, s.code)
			}
			wrapped := fmt.Errorf("%w: thread %q", s.err, "t1")
			if got := driver.Code(wrapped); got != s.code {
				t.Errorf("Code(wrapped %s) = %q, want %q", s.name, got, s.code)
			}
			twice := fmt.Errorf("memstore: append: %w", wrapped)
			if got := driver.Code(twice); got != s.code {
				t.Errorf("Code(twice wrapped %s) = %q, want %q", s.name, got, s.code)
			}
			if !errors.Is(twice, s.err) {
				t.Errorf("errors.Is(twice wrapped %s, %s) = false", s.name, s.name)
			}
			if !strings.HasPrefix(s.err.Error(), "ckptstore: ") {
				t.Errorf("%s.Error() = %q, want the ckptstore: prefix", s.name, s.err)
			}
		})
	}
}

func TestCodeDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, s := range sentinels {
		if prev, dup := seen[s.code]; dup {
			t.Errorf("%s and %s share code %s", prev, s.name, s.code)
		}
		seen[s.code] = s.name
	}
}

func TestCodeOfOtherErrors(t *testing.T) {
	for _, err := range []error{
		nil,
		errors.New("SANDBOX_SNAPSHOT_STALE_HEAD"), // the text is not the error
		context.Canceled,
		fmt.Errorf("wrapped: %w", context.DeadlineExceeded),
		driver.ErrInvalidOptions,
	} {
		if got := driver.Code(err); got != "" {
			t.Errorf("Code(%v) = %q, want \"\"", err, got)
		}
	}
}

// Each sentinel is matched by errors.Is only by itself, so a caller's switch
// over them can never take two branches.
func TestSentinelsMatchOnlyThemselves(t *testing.T) {
	for _, a := range sentinels {
		for _, b := range sentinels {
			wrapped := fmt.Errorf("ctx: %w", a.err)
			if got, want := errors.Is(wrapped, b.err), a.name == b.name; got != want {
				t.Errorf("errors.Is(%s, %s) = %v, want %v", a.name, b.name, got, want)
			}
		}
		for _, other := range []error{driver.ErrInvalidOptions, driver.ErrCorrupt, context.Canceled} {
			if errors.Is(a.err, other) || errors.Is(other, a.err) {
				t.Errorf("%s and %v match each other", a.name, other)
			}
		}
	}
}

func TestErrorForInvertsCode(t *testing.T) {
	for _, code := range []string{
		"SANDBOX_SNAPSHOT_STALE_HEAD", "SANDBOX_SNAPSHOT_PARENT_MISMATCH",
		"SANDBOX_SNAPSHOT_DUPLICATE_ID", "SANDBOX_SNAPSHOT_NOT_HEAD",
		"SANDBOX_SNAPSHOT_WRITER_CONFLICT", "SANDBOX_SNAPSHOT_WRITER_LOST",
		"SANDBOX_SNAPSHOT_INVALID_ID", "SANDBOX_SNAPSHOT_INVALID_ENTRY",
		"SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND",
		"SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH",
		"SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY",
	} {
		err := driver.ErrorFor(code)
		if err == nil || driver.Code(err) != code {
			t.Errorf("ErrorFor(%q) = %v (code %q)", code, err, driver.Code(err))
		}
	}
	for _, code := range []string{"", "STALE_HEAD", "SANDBOX_SNAPSHOT_", "sandbox_snapshot_stale_head"} {
		if err := driver.ErrorFor(code); err != nil {
			t.Errorf("ErrorFor(%q) = %v, want nil", code, err)
		}
	}
}
