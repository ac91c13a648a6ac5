package driver

import "encoding/json"

// Page limits of ListPage and Threads.
const (
	// DefaultPageLimit is the page size when a limit of 0 is asked for.
	DefaultPageLimit = 100
	// MaxPageLimit is the largest page a caller may ask for.
	MaxPageLimit = 1000
)

// ListOptions page through a thread's checkpoints in List order.
type ListOptions struct {
	// After is the cursor a previous page returned as next; "" starts at
	// the beginning (the end, when Reverse is set).
	After string
	// Limit is the most checkpoints one page returns: 1 to MaxPageLimit,
	// 0 for DefaultPageLimit.
	Limit int
	// Reverse pages from the newest checkpoint to the oldest.
	Reverse bool
}

// ImportBatch is one batch of a thread that Import writes exactly as given,
// for migrations between stores.
type ImportBatch struct {
	// ThreadID is the thread every checkpoint of the batch belongs to.
	ThreadID string
	// Checkpoints are stored as given: ids, parents, createdAt bits and
	// reasons kept, no chain checks. A checkpoint already stored in this
	// thread with equal content (EqualCheckpoints) is skipped.
	Checkpoints []*Checkpoint
	// SetHead makes Head the thread's head once the batch is stored. Head
	// may be "" or name a checkpoint that does not exist (as after pruning).
	SetHead bool
	Head    string
	// Transcript, when not nil, replaces the thread's transcript (stores
	// without transcripts refuse a non-nil one with ErrInvalidEntry).
	Transcript json.RawMessage
	// Writer is the thread's live lease.
	Writer Writer
}

// Page is a checked ListPage request.
type Page struct {
	// After is the position the page starts strictly after; nil = the
	// start (the end when Reverse).
	After   *Position
	Limit   int // 1…MaxPageLimit
	Reverse bool
}

// Includes reports whether cp belongs on the far side of the page's cursor.
func (p Page) Includes(cp *Checkpoint) bool {
	if p.After == nil {
		return true
	}
	c := ComparePosition(cp, *p.After)
	if p.Reverse {
		return c < 0
	}
	return c > 0
}

// Next is the cursor to return after page: the position of its last
// checkpoint when more follow, "" otherwise. Stores learn more by reading
// Limit+1 checkpoints and returning Limit.
func (p Page) Next(page []*Checkpoint, more bool) string {
	if !more || len(page) == 0 {
		return ""
	}
	return EncodeCursor(PositionOf(page[len(page)-1]))
}

// ThreadPage is a checked Threads request.
type ThreadPage struct {
	After string // thread ids strictly after this one; "" = from the start
	Limit int    // 1…MaxPageLimit
}

// Next is the cursor to return after page: its last id when more follow,
// "" otherwise.
func (p ThreadPage) Next(page []string, more bool) string {
	if !more || len(page) == 0 {
		return ""
	}
	return EncodeThreadCursor(page[len(page)-1])
}
