package driver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

// TestMessages checks each formatter's sentinel and wording: the wording
// is what every engine reports, so a change shows here first.
func TestMessages(t *testing.T) {
	at := time.Date(2023, 11, 14, 22, 13, 30, 1e6, time.FixedZone("x", 3600))
	cases := []struct {
		err      error
		sentinel error
		want     string
	}{
		{driver.StaleHeadError("t", "h", ""), driver.ErrConflict, `head of thread "t" is "h", expected ""`},
		{driver.ImportHeadError("t", "h", "g"), driver.ErrConflict, `head of thread "t" is "h", not "g"`},
		{driver.ParentMismatchError("", "h"), driver.ErrParentMismatch, `parent "", expected head "h"`},
		{driver.DuplicateIDError("c"), driver.ErrDuplicateID, `"c"`},
		{driver.DuplicateInThreadError("c", "u"), driver.ErrDuplicateID, `checkpoint "c" is stored in thread "u"`},
		{driver.DuplicateContentError("c"), driver.ErrDuplicateID, `checkpoint "c" is stored with other content`},
		{driver.NotHeadError("c", "t"), driver.ErrNotHead, `"c" is not the head of thread "t"`},
		{driver.WriterConflictError("t", at), driver.ErrWriterConflict, `thread "t" is leased until 2023-11-14T21:13:30.001Z`},
		{driver.NoLeaseError("t"), driver.ErrWriterLost, `thread "t" has no lease`},
		{driver.NewerLeaseError("t", 2, 1), driver.ErrWriterLost, `thread "t" has a newer lease (fence 2, writer has 1)`},
		{driver.LeaseExpiredError("t", at), driver.ErrWriterLost, `the lease of thread "t" expired at 2023-11-14T21:13:30.001Z`},
		{driver.WriterThreadError("u", "t"), driver.ErrWriterLost, `writer of thread "u" cannot write thread "t"`},
		{driver.ForkSourceNotFoundError("c"), driver.ErrForkSourceNotFound, `"c"`},
		{driver.ForkSourceThreadError("c", "u", "t"), driver.ErrForkSourceThreadMismatch, `checkpoint "c" is in thread "u", not "t"`},
		{driver.ForkSameThreadError("t"), driver.ErrForkSourceThreadMismatch, `source and destination are both thread "t"`},
		{driver.ForkDestinationCheckpointsError("t"), driver.ErrForkDestinationNotEmpty, `thread "t" has checkpoints`},
		{driver.ForkDestinationTranscriptError("t"), driver.ErrForkDestinationNotEmpty, `thread "t" has a transcript`},
		{driver.ForkDestinationIDError("c"), driver.ErrForkDestinationNotEmpty, `checkpoint id "c" is used`},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.sentinel) {
			t.Errorf("%v does not wrap %v", c.err, c.sentinel)
		}
		if want := c.sentinel.Error() + ": " + c.want; c.err.Error() != want {
			t.Errorf("got %q, want %q", c.err.Error(), want)
		}
	}
}

// TestMessagesQuoteShort checks that every formatter quotes at most the
// first 64 bytes of each id (docs/contract.md, rule 1), however long the
// ids: a message stays small with every id at the id limit.
func TestMessagesQuoteShort(t *testing.T) {
	long := strings.Repeat("x", driver.MaxIDBytes)
	at := time.UnixMilli(1700000010000)
	errs := []error{
		driver.StaleHeadError(long, long, long),
		driver.ImportHeadError(long, long, long),
		driver.ParentMismatchError(long, long),
		driver.DuplicateIDError(long),
		driver.DuplicateInThreadError(long, long),
		driver.DuplicateContentError(long),
		driver.NotHeadError(long, long),
		driver.WriterConflictError(long, at),
		driver.NoLeaseError(long),
		driver.NewerLeaseError(long, 1, 2),
		driver.LeaseExpiredError(long, at),
		driver.WriterThreadError(long, long),
		driver.ForkSourceNotFoundError(long),
		driver.ForkSourceThreadError(long, long, long),
		driver.ForkSameThreadError(long),
		driver.ForkDestinationCheckpointsError(long),
		driver.ForkDestinationTranscriptError(long),
		driver.ForkDestinationIDError(long),
	}
	short := driver.QuoteShort(long)
	if !strings.Contains(short, "(1024 bytes)") || len(short) > 100 {
		t.Fatalf("QuoteShort of a %d-byte id is %q", len(long), short)
	}
	for _, err := range errs {
		msg := err.Error()
		if strings.Contains(msg, strings.Repeat("x", 65)) || !strings.Contains(msg, short) {
			t.Errorf("%.200s… does not quote the id as %s", msg, short)
		}
		if len(msg) > 600 {
			t.Errorf("a message with 1024-byte ids is %d bytes: %.200s…", len(msg), msg)
		}
	}
}
