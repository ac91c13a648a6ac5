package redisstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// TestScriptFailure checks that a failure reply's fields become the
// driver's formatted error, as memstore and fdbstore word it, and that a
// reply the scripts never send is no contract error.
func TestScriptFailure(t *testing.T) {
	w := ckptstore.Writer{ThreadID: "t", OwnerToken: "o", Fence: 1}
	threadErr := driver.WriterThreadError("u", "t")
	c := scriptCall{thread: "t", writer: w, id: "c", expected: "e", parent: "p", sourceThread: "s", destID: "d", writerThreadErr: threadErr}
	imp := scriptCall{thread: "t", writer: w, importHead: true, head: "g"}
	cases := []struct {
		call scriptCall
		res  []any
		want error
	}{
		{c, []any{"WRITER_LOST", "none"}, driver.NoLeaseError("t")},
		{c, []any{"WRITER_LOST", "fence", "2"}, driver.NewerLeaseError("t", 2, 1)},
		{c, []any{"WRITER_LOST", "expired", "1700000010000"}, driver.LeaseExpiredError("t", time.UnixMilli(1700000010000))},
		{c, []any{"WRITER_LOST", "thread"}, threadErr},
		{c, []any{"WRITER_CONFLICT", int64(1700000010000)}, driver.WriterConflictError("t", time.UnixMilli(1700000010000))},
		{c, []any{"STALE_HEAD", "h"}, driver.StaleHeadError("t", "h", "e")},
		{imp, []any{"STALE_HEAD", "h"}, driver.ImportHeadError("t", "h", "g")},
		{c, []any{"PARENT_MISMATCH"}, driver.ParentMismatchError("p", "e")},
		{c, []any{"DUPLICATE_ID"}, driver.DuplicateIDError("c")},
		{imp, []any{"DUPLICATE_ID", "x", "u"}, driver.DuplicateInThreadError("x", "u")},
		{c, []any{"NOT_HEAD", "h"}, driver.NotHeadError("c", "t")},
		{c, []any{"FORK_SOURCE_NOT_FOUND"}, driver.ForkSourceNotFoundError("c")},
		{c, []any{"FORK_SOURCE_THREAD_MISMATCH", "u"}, driver.ForkSourceThreadError("c", "u", "s")},
		{c, []any{"FORK_DESTINATION_NOT_EMPTY", "checkpoints"}, driver.ForkDestinationCheckpointsError("t")},
		{c, []any{"FORK_DESTINATION_NOT_EMPTY", "transcript"}, driver.ForkDestinationTranscriptError("t")},
		{c, []any{"FORK_DESTINATION_NOT_EMPTY", "id"}, driver.ForkDestinationIDError("d")},
	}
	for _, tc := range cases {
		got := tc.call.failure(tc.res)
		if got == nil || got.Error() != tc.want.Error() || ckptstore.Code(got) != ckptstore.Code(tc.want) || ckptstore.Code(got) == "" {
			t.Errorf("failure(%q) = %v, want %v", tc.res, got, tc.want)
		}
	}
	for _, res := range [][]any{
		nil, {"NOPE"}, {"WRITER_LOST", "why"}, {"FORK_DESTINATION_NOT_EMPTY", "x"},
		{"WRITER_LOST", "thread"}, // with no precomputed writer-thread error
	} {
		if got := (scriptCall{thread: "t"}).failure(res); got == nil || ckptstore.Code(got) != "" {
			t.Errorf("failure(%q) = %v, want an error with no contract code", res, got)
		}
	}
	for _, res := range [][]any{{"WRITER_LOST", "fence", ""}, {"WRITER_LOST", "expired", "x"}, {"WRITER_CONFLICT"}} {
		if got := c.failure(res); !errors.Is(got, ErrCorrupt) || !strings.Contains(got.Error(), "stored data is corrupt") {
			t.Errorf("failure(%q) = %v, want ErrCorrupt", res, got)
		}
	}
}
