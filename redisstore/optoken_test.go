package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// An AcquireWriter repeated with the caller's op token after its lease
// ended reports that lease again (which writes no longer accept) instead
// of taking a second lease with the same owner token; a malformed token is
// refused before anything is written.
func TestAcquireWriterOpTokenAfterRelease(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ckptstore.WithOpToken(context.Background(), "acquire-once")
		s := newStore(t, c, Options{})
		l, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		l.Release(context.Background())
		again, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if again.Writer != l.Writer || !again.ExpiresAt.Equal(l.ExpiresAt) {
			t.Fatalf("the repeat returned %+v, want the first lease %+v", again.Writer, l.Writer)
		}
		if err := s.p().Append(context.Background(), testkit.Checkpoint("t", "a", "", 1), "", again.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
			t.Fatalf("Append with the released lease = %v, want ErrWriterLost", err)
		}
		fresh, err := s.p().AcquireWriter(context.Background(), "t")
		must(t, err)
		if fresh.Fence != l.Fence+1 {
			t.Fatalf("the next lease has fence %d, want %d: the repeat took a lease", fresh.Fence, l.Fence+1)
		}
		before := keyspace(t, c, s)
		bad := ckptstore.WithOpToken(context.Background(), "not a token")
		if _, err := s.p().AcquireWriter(bad, "u"); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Fatalf("AcquireWriter with a malformed op token = %v, want ErrInvalidEntry", err)
		}
		if err := s.p().Append(bad, testkit.Checkpoint("t", "a", "", 1), "", fresh.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Fatalf("Append with a malformed op token = %v, want ErrInvalidEntry", err)
		}
		if after := keyspace(t, c, s); len(after) != len(before) {
			t.Fatalf("refused calls wrote keys: %d before, %d after", len(before), len(after))
		}
		checkStore(t, s)
	})
}
