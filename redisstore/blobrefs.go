package redisstore

import (
	"context"
	"fmt"
	"iter"

	"github.com/ckptstore/ckptstore"
)

// ListBlobReferences implements driver.Store: it yields every blob key with a count above 0, in the
// order of the key's bytes, reading Options.PageSize keys per round trip so
// that millions of keys never load at once. The order comes from the
// refkeys sorted set (all scores 0, so members sort by their bytes), paged
// with ZRANGEBYLEX from just after the last key seen.
//
// Each page is read atomically; the sequence as a whole is not one
// snapshot: a key added behind the cursor during the walk is missed, and
// one added ahead of it is seen. An error ends the sequence.
func (s *Driver) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(ckptstore.BlobRef{}, err)
			return
		}
		from := "-"
		refs, refKeys := s.keys.refsKey()
		for {
			res, err := run(ctx, s.r, blobPageScript, blobPageArgs{Refs: refs, RefKeys: refKeys, From: from, Limit: s.opts.PageSize}, false)
			if err != nil {
				yield(ckptstore.BlobRef{}, fmt.Errorf("redisstore: blob references: %w", err))
				return
			}
			for i := 0; i+1 < len(res); i += 2 {
				key, _ := res[i].(string)
				n, err := intReply(res[i+1])
				if err != nil {
					yield(ckptstore.BlobRef{}, fmt.Errorf("redisstore: blob reference %q: %w", key, err))
					return
				}
				if !yield(ckptstore.BlobRef{Key: key, References: n}, nil) {
					return
				}
				from = "(" + key
			}
			if len(res) < 2*s.opts.PageSize {
				return
			}
		}
	}
}
