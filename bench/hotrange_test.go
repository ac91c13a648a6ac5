package bench

// BenchmarkHotRange: where fdbstore's writes would land on a FoundationDB
// cluster. memkv's shard model cuts the keys into ranges of equal key
// counts, as data distribution cuts shards, and counts the mutations of
// each range; the benchmark prints "hottest range: X % of writes" and
// reports the share as hot-% (and hot/fair, the share over 1/ranges).
// One op is a round of harness sessions over every thread (acquire,
// append a few, prune, release). With global blobs, every append moves
// their reference counts: a hot key inherent to sharing a blob across
// threads, whatever the layout.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/storeurl"
)

const (
	hotThreads = 256 // threads of the hot-range load
	hotRanges  = 64  // ranges of the shard model
	hotWorkers = 8   // goroutines running sessions
)

func BenchmarkHotRange(b *testing.B) {
	nest(b, fmt.Sprintf("store=memkv/threads=%d", hotThreads), func(b *testing.B) {
		for _, global := range []int{0, 2} {
			b.Run(fmt.Sprintf("globalblobs=%d", global), func(b *testing.B) {
				o, free := openSpec("memkv", storeurl.Options{})(b)
				defer free()
				db, ok := o.Handle.(*memkv.DB)
				if !ok {
					b.Fatalf("memkv store without a memkv engine: %T", o.Handle)
				}
				opts := harness("2KB")
				opts.GlobalBlobs = global
				ld := newHotLoad(o.Store, opts)
				ld.round(b) // keys for the cut
				db.Shards(hotRanges)
				b.ResetTimer()
				for b.Loop() {
					ld.round(b)
				}
				b.StopTimer()
				r := db.ShardStats()
				b.ReportMetric(100*r.HottestShare, "hot-%")
				b.ReportMetric(r.HottestShare/r.FairShare(), "hot/fair")
				b.Logf("fdbstore on memkv, %d threads, %d global blobs: %d mutations; %v", hotThreads, global, r.Mutations, r)
			})
		}
	})
}

// hotLoad is the state of hotThreads harness threads.
type hotLoad struct {
	st      conformance.Store
	gens    []*workload.Gen // one per worker
	threads []hotThread
}

type hotThread struct {
	id   string
	head *ckptstore.Checkpoint
}

func newHotLoad(st conformance.Store, opts workload.GenOptions) *hotLoad {
	ld := &hotLoad{st: st}
	for w := range hotWorkers {
		ld.gens = append(ld.gens, workload.NewGenSeed(opts, uint64(w), 7))
	}
	for i := range hotThreads {
		ld.threads = append(ld.threads, hotThread{id: fmt.Sprintf("%s-t%d", ld.gens[0].NewID(), i)})
	}
	return ld
}

// round runs one session on every thread: acquire, append four, prune to
// eight, release.
func (ld *hotLoad) round(b *testing.B) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, hotWorkers)
	for w := range hotWorkers {
		g := ld.gens[w]
		wg.Go(func() {
			for i := w; i < len(ld.threads); i += hotWorkers {
				if err := ld.session(ctx, g, &ld.threads[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func (ld *hotLoad) session(ctx context.Context, g *workload.Gen, th *hotThread) error {
	lease, err := ld.st.AcquireWriter(ctx, th.id)
	if err != nil {
		return err
	}
	defer lease.Release(ctx)
	for range 4 {
		head := ""
		if th.head != nil {
			head = th.head.ID
		}
		cp, _ := g.Next(th.id, g.NewID(), head, th.head)
		if err := ld.st.Append(ctx, cp, head, lease.Writer); err != nil {
			return err
		}
		th.head = cp
	}
	p := ld.st
	if _, err := p.DeleteCheckpoints(ctx, th.id, 8, lease.Writer); err != nil {
		return err
	}
	return nil
}
