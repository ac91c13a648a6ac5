package ckptstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
)

// sentinels lists every contract error with the wire code docs/contract.md gives it.
var sentinels = []struct {
	name string
	err  error
	code string
}{
	{"ErrConflict", ckptstore.ErrConflict, "SANDBOX_SNAPSHOT_STALE_HEAD"},
	{"ErrParentMismatch", ckptstore.ErrParentMismatch, "SANDBOX_SNAPSHOT_PARENT_MISMATCH"},
	{"ErrDuplicateID", ckptstore.ErrDuplicateID, "SANDBOX_SNAPSHOT_DUPLICATE_ID"},
	{"ErrNotHead", ckptstore.ErrNotHead, "SANDBOX_SNAPSHOT_NOT_HEAD"},
	{"ErrWriterConflict", ckptstore.ErrWriterConflict, "SANDBOX_SNAPSHOT_WRITER_CONFLICT"},
	{"ErrWriterLost", ckptstore.ErrWriterLost, "SANDBOX_SNAPSHOT_WRITER_LOST"},
	{"ErrInvalidID", ckptstore.ErrInvalidID, "SANDBOX_SNAPSHOT_INVALID_ID"},
	{"ErrInvalidEntry", ckptstore.ErrInvalidEntry, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
	{"ErrForkSourceNotFound", ckptstore.ErrForkSourceNotFound, "SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND"},
	{"ErrForkSourceThreadMismatch", ckptstore.ErrForkSourceThreadMismatch, "SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH"},
	{"ErrForkDestinationNotEmpty", ckptstore.ErrForkDestinationNotEmpty, "SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY"},
}

func TestCode(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.name, func(t *testing.T) {
			if got := ckptstore.Code(s.err); got != s.code {
				t.Errorf("Code(%s) = %q, want %q", s.name, got, s.code)
			}
			wrapped := fmt.Errorf("%w: thread %q", s.err, "t1")
			if got := ckptstore.Code(wrapped); got != s.code {
				t.Errorf("Code(wrapped %s) = %q, want %q", s.name, got, s.code)
			}
			twice := fmt.Errorf("memstore: append: %w", wrapped)
			if got := ckptstore.Code(twice); got != s.code {
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
		ckptstore.ErrInvalidOptions,
		ckptstore.ErrPruneUnsupported,
	} {
		if got := ckptstore.Code(err); got != "" {
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
		for _, other := range []error{ckptstore.ErrInvalidOptions, ckptstore.ErrPruneUnsupported, context.Canceled} {
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
		err := ckptstore.ErrorFor(code)
		if err == nil || ckptstore.Code(err) != code {
			t.Errorf("ErrorFor(%q) = %v (code %q)", code, err, ckptstore.Code(err))
		}
	}
	for _, code := range []string{"", "STALE_HEAD", "SANDBOX_SNAPSHOT_", "sandbox_snapshot_stale_head"} {
		if err := ckptstore.ErrorFor(code); err != nil {
			t.Errorf("ErrorFor(%q) = %v, want nil", code, err)
		}
	}
}
