package difftest_test

// The calls a sequence is made of, as step builders over the portable
// layers. A step that takes a writer lease names it; the lease is kept per
// engine (its owner token differs) and later steps use it by that name.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/persist"
)

// maxSafe is 2^53−1, the largest safe integer; 2^53 is the first unsafe.
const maxSafe = 1<<53 - 1

// fileKey is a valid content-addressed blob key of files.
func fileKey(n int) string {
	return fmt.Sprintf("sandbox-files/sha256/%064x", n)
}

// artifactKey is a valid content-addressed blob key of artifacts.
func artifactKey(n int) string {
	return fmt.Sprintf("sandbox-artifacts/sha256/%064x", n)
}

// ckpt is a valid checkpoint of thread with one file and a conversation.
func ckpt(id, thread, parent string, at float64) *ckptstore.Checkpoint {
	return &ckptstore.Checkpoint{
		ID: id, ThreadID: thread, ParentCheckpointID: parent, CreatedAt: at,
		Reason: ckptstore.ReasonAutomatic,
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/a.txt", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: 3},
		},
		Conversation: json.RawMessage(`[{"role":"user","content":"hi"}]`),
	}
}

// writer is the writer of the lease named name in e, or a writer no store
// ever granted (thread "never", fence 0) when e has none by that name: the
// step that took it failed, and every engine must then refuse the same way.
func (e *env) writer(name string) ckptstore.Writer {
	if l, ok := e.leases[name]; ok {
		return l.Writer
	}
	return ckptstore.Writer{ThreadID: "never", OwnerToken: "never", Fence: 1}
}

// acquire takes thread's writer lease and keeps it as name.
func acquire(name, thread string) step {
	return step{name: "acquire/" + name, call: func(ctx context.Context, e *env) (any, error) {
		l, err := e.cp.AcquireWriter(ctx, thread)
		if err == nil {
			e.leases[name] = l
		}
		return l, err
	}}
}

// appendCP appends cp under the lease named lease.
func appendCP(name, lease, expectedHead string, cp *ckptstore.Checkpoint) step {
	return step{name: "append/" + name, call: func(ctx context.Context, e *env) (any, error) {
		return nil, e.cp.Append(ctx, cp.Clone(), expectedHead, e.writer(lease))
	}}
}

// renew renews the lease named lease.
func renew(name, lease string) step {
	return step{name: "renew/" + name, call: func(ctx context.Context, e *env) (any, error) {
		exp, err := e.cp.Renew(ctx, e.writer(lease))
		return exp.UnixMilli(), err
	}}
}

// release releases the lease named lease.
func release(name, lease string) step {
	return step{name: "release/" + name, call: func(ctx context.Context, e *env) (any, error) {
		return nil, e.cp.Release(ctx, e.writer(lease))
	}}
}

// advance moves every engine's clock by d.
func advance(d time.Duration) step {
	return step{name: "clock/advance-" + d.String(), call: func(_ context.Context, e *env) (any, error) {
		e.clk.advance(d)
		return e.clk.now().UnixMilli(), nil
	}}
}

// call is a step of any call on the stores.
func call(name string, f func(ctx context.Context, e *env) (any, error)) step {
	return step{name: name, call: f}
}

// call0 is a step of a call that returns only an error.
func call0(name string, f func(ctx context.Context, e *env) error) step {
	return step{name: name, call: func(ctx context.Context, e *env) (any, error) { return nil, f(ctx, e) }}
}

// page is a page of checkpoints with the next cursor, as one result.
type page struct {
	Checkpoints []*ckptstore.Checkpoint `json:"checkpoints"`
	Next        string                  `json:"next"`
}

// listPage reads one page of thread's checkpoints.
func listPage(name, thread string, opt ckptstore.ListOptions) step {
	return call(name, func(ctx context.Context, e *env) (any, error) {
		cps, next, err := e.cp.ListPage(ctx, thread, opt)
		return page{cps, next}, err
	})
}

// walkPages reads every page of thread with limit, following the cursors
// the engine gives (which differ in form, so they are not compared:
// the pages are).
func walkPages(name, thread string, limit int, reverse bool) step {
	return call(name, func(ctx context.Context, e *env) (any, error) {
		var ids [][]string
		after := ""
		for range 100 {
			cps, next, err := e.cp.ListPage(ctx, thread, ckptstore.ListOptions{After: after, Limit: limit, Reverse: reverse})
			if err != nil {
				return ids, err
			}
			var p []string
			for _, cp := range cps {
				p = append(p, cp.ID)
			}
			ids = append(ids, p)
			if next == "" {
				return ids, nil
			}
			after = next
		}
		return ids, errors.New("more than 100 pages")
	})
}

// walkThreads reads every page of the thread listing with limit.
func walkThreads(name string, limit int) step {
	return call(name, func(ctx context.Context, e *env) (any, error) {
		var pages [][]string
		after := ""
		for range 100 {
			ts, next, err := e.cp.Threads(ctx, after, limit)
			if err != nil {
				return pages, err
			}
			// Ids are shown by length beyond 64 bytes, so that a page of
			// long ids stays readable in a report.
			var p []string
			for _, id := range ts {
				if len(id) > 64 {
					id = fmt.Sprintf("%s…(%d bytes)", id[:16], len(id))
				}
				p = append(p, id)
			}
			pages = append(pages, p)
			if next == "" {
				return pages, nil
			}
			after = next
		}
		return pages, errors.New("more than 100 pages")
	})
}

// lockStep makes one lock step: acquire (without waiting), renew or
// release of key for token.
func lockStep(name, op, key, token string) step {
	return call("lock/"+name, func(ctx context.Context, e *env) (any, error) {
		locks, ok := e.ps.Locks.(*persist.Locks)
		if !ok {
			return nil, fmt.Errorf("the lock store is a %T, not *persist.Locks", e.ps.Locks)
		}
		s := locks.Steps()
		switch op {
		case "acquire":
			return s.Acquire(ctx, key, token, 0)
		case "renew":
			return s.Renew(ctx, key, token)
		case "release":
			// N5: Release's contract is Held alone (persist.LockSteps); the
			// HTTP route answers only it.
			st, err := s.Release(ctx, key, token)
			return struct {
				Held bool `json:"held"`
			}{st.Held}, err
		}
		return nil, fmt.Errorf("no lock op %q", op)
	})
}

// withLock runs WithLock on key with a critical section that returns ret
// and reports the fence it ran under.
func withLock(name, key string, ret error) step {
	return call("lock/"+name, func(ctx context.Context, e *env) (any, error) {
		var fence int64 = -1
		err := e.ps.Locks.WithLock(ctx, key, func(ctx context.Context) error {
			if f, ok := persist.LockFence(ctx); ok {
				fence = f
			}
			return ret
		})
		return fence, err
	})
}

// repeat is s repeated to n bytes.
func repeat(s string, n int) string {
	return strings.Repeat(s, n/len(s)) + s[:n%len(s)]
}

// ptr is a pointer to v.
func ptr[T any](v T) *T { return &v }

// dropThread deletes thread (its checkpoints and transcript) under a lease
// of its own: the cleanup after calls whose outcome differs by design
// (N4), so that later listings compare equal.
func dropThread(name, thread string) step {
	return call("cleanup/"+name, func(ctx context.Context, e *env) (any, error) {
		l, err := e.cp.AcquireWriter(ctx, thread)
		if err != nil {
			return nil, err
		}
		return e.cp.DeleteThread(ctx, thread, l.Writer)
	})
}
