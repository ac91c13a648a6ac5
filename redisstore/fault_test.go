package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// faultModel is what one worker knows of its threads: the live checkpoints
// of each thread in chain order (oldest first), its head and each
// checkpoint's parent.
type faultModel struct {
	chain  map[string][]string
	head   map[string]string
	parent map[string]string
}

// TestFaultsKeepCountsAndChains runs writers through a proxy that loses
// replies after scripts ran and cuts requests before they ran. Every
// outcome a call reports must be true (no false contract error, the ids a
// prune returns are the ones it deleted); a call that ends in a network
// error is looked up afterwards. At the end every thread matches its
// model, every chain is intact and every blob count equals a recount.
func TestFaultsKeepCountsAndChains(t *testing.T) {
	backends(t, func(t *testing.T, direct redis.UniversalClient) {
		const workers, ops = 4, 120
		ctx := context.Background()
		c, proxy := faultyClient(t, serverAddr(direct))
		proxy.SetFaults(42, 0.05, 0.03)
		clk := newClock() // never moves: leases never expire
		// Batches of 3: long prunes and Lists take several scripts.
		o := Options{Options: ckptstore.Options{Now: clk.Now}, Prefix: "fault", BatchSize: 3}
		faulty := newStore(t, c, o)
		sure := newStore(t, direct, o) // for leases and for looking up outcomes

		var mu sync.Mutex
		var threads []string
		var wg sync.WaitGroup
		for wi := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(wi), 99))
				m := &faultModel{chain: map[string][]string{}, head: map[string]string{}, parent: map[string]string{}}
				main := fmt.Sprintf("w%d", wi)
				mine := []string{main}
				lease, err := sure.p().AcquireWriter(ctx, main)
				if err != nil {
					t.Error(err)
					return
				}
				writers := map[string]ckptstore.Writer{main: lease.Writer}
				for n := range ops {
					id := fmt.Sprintf("w%d-%d", wi, n)
					var err error
					switch r := rng.IntN(10); {
					case r < 6 || len(m.chain[main]) == 0:
						err = faultAppend(ctx, faulty, sure, m, main, id, writers[main], rng)
					case r == 6:
						err = faultDeleteHead(ctx, faulty, sure, m, main, writers[main])
					case r == 7:
						err = faultPrune(ctx, faulty, sure, m, main, writers[main])
					case r == 8:
						err = faultDeleteThread(ctx, faulty, sure, m, main, writers[main])
					default:
						dst := "f" + id
						var l *ckptstore.Lease
						if l, err = sure.p().AcquireWriter(ctx, dst); err == nil {
							mine = append(mine, dst)
							err = faultFork(ctx, faulty, sure, m, main, dst, id, l.Writer)
						}
					}
					if err != nil {
						t.Errorf("worker %d op %d: %v", wi, n, err)
						return
					}
				}
				// Compare the model with the store through the direct client.
				for _, th := range mine {
					if err := checkThread(ctx, sure, m, th); err != nil {
						t.Errorf("worker %d: %v", wi, err)
					}
				}
				mu.Lock()
				threads = append(threads, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		testkit.CheckRefs(t, sure.p(), threads...)
		checkStore(t, sure)
		if proxy.DroppedReplies() == 0 || proxy.DroppedRequests() == 0 {
			t.Fatalf("the proxy lost %d replies and cut %d requests; the test needs both", proxy.DroppedReplies(), proxy.DroppedRequests())
		}
		t.Logf("lost replies %d, cut requests %d", proxy.DroppedReplies(), proxy.DroppedRequests())
	})
}

// unknown reports whether err leaves the outcome open: a network error
// after go-redis gave up resending. A contract error never does.
func unknown(err error) bool {
	return err != nil && ckptstore.Code(err) == ""
}

func faultAppend(ctx context.Context, s, sure *Driver, m *faultModel, th, id string, w ckptstore.Writer, rng *rand.Rand) error {
	head := m.head[th]
	blobs := []int{rng.IntN(20), rng.IntN(20), rng.IntN(20)}
	err := s.p().Append(ctx, testkit.Checkpoint(th, id, head, float64(rng.IntN(5)), blobs...), head, w)
	if unknown(err) {
		h, herr := sure.p().GetHead(ctx, th)
		if herr != nil {
			return herr
		}
		switch h {
		case id:
			err = nil
		case head:
			return nil // not applied
		default:
			return fmt.Errorf("append %s: network error %v and head %q", id, err, h)
		}
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	m.chain[th] = append(m.chain[th], id)
	m.parent[id] = head
	m.head[th] = id
	return nil
}

func faultDeleteHead(ctx context.Context, s, sure *Driver, m *faultModel, th string, w ckptstore.Writer) error {
	head := m.head[th]
	if len(m.chain[th]) == 0 || m.chain[th][len(m.chain[th])-1] != head {
		return nil // the head was pruned: not deletable
	}
	err := s.p().DeleteHead(ctx, th, head, w)
	if unknown(err) {
		h, herr := sure.p().GetHead(ctx, th)
		if herr != nil {
			return herr
		}
		switch h {
		case m.parent[head]:
			err = nil
		case head:
			return nil
		default:
			return fmt.Errorf("delete head %s: network error %v and head %q", head, err, h)
		}
	}
	if err != nil {
		return fmt.Errorf("delete head %s: %w", head, err)
	}
	m.chain[th] = m.chain[th][:len(m.chain[th])-1]
	m.head[th] = m.parent[head]
	return nil
}

func faultPrune(ctx context.Context, s, sure *Driver, m *faultModel, th string, w ckptstore.Writer) error {
	const keep = 2
	chain := m.chain[th]
	var doomed []string
	if len(chain) > keep {
		doomed = slices.Clone(chain[:len(chain)-keep])
	}
	ids, err := s.p().DeleteCheckpoints(ctx, th, keep, w)
	if unknown(err) {
		cps, lerr := sure.p().List(ctx, th)
		if lerr != nil {
			return lerr
		}
		if len(cps) == len(chain) {
			return nil // not applied
		}
		ids, err = doomed, nil
	}
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if len(ids) != len(doomed) || (len(ids) > 0 && !reflect.DeepEqual(ids, doomed)) {
		return fmt.Errorf("prune deleted %q, want %q", ids, doomed)
	}
	m.chain[th] = chain[len(doomed):]
	return nil
}

// faultDeleteThread deletes the whole thread, several batches of 3 when
// it is long. A network error leaves part of it deleted: the call is then
// repeated through the direct client, as the contract allows, and the
// counts of the two calls together are the thread's size.
func faultDeleteThread(ctx context.Context, s, sure *Driver, m *faultModel, th string, w ckptstore.Writer) error {
	want := len(m.chain[th])
	n, err := s.p().DeleteThread(ctx, th, w)
	if unknown(err) {
		var more int
		more, err = sure.p().DeleteThread(ctx, th, w)
		if n+more > want {
			return fmt.Errorf("delete thread %s: %d then %d deleted, the thread held %d", th, n, more, want)
		}
		n = want
	}
	if err != nil {
		return fmt.Errorf("delete thread %s: %w", th, err)
	}
	if n != want {
		return fmt.Errorf("delete thread %s: %d deleted, the thread held %d", th, n, want)
	}
	m.chain[th] = nil
	m.head[th] = ""
	return nil
}

func faultFork(ctx context.Context, s, sure *Driver, m *faultModel, src, dst, id string, w ckptstore.Writer) error {
	head := m.head[src]
	if len(m.chain[src]) == 0 || m.chain[src][len(m.chain[src])-1] != head {
		return nil
	}
	in := ckptstore.ForkInput{SourceThreadID: src, SourceCheckpointID: head, DestinationThreadID: dst,
		DestinationCheckpointID: id, CreatedAt: 1, Writer: w}
	root, err := s.p().ForkFromCheckpoint(ctx, in)
	if unknown(err) {
		got, gerr := sure.p().Get(ctx, id)
		if gerr != nil {
			return gerr
		}
		if got == nil {
			return nil
		}
		root, err = got, nil
	}
	if err != nil {
		return fmt.Errorf("fork %s: %w", id, err)
	}
	cp, err := sure.p().Get(ctx, head)
	if err != nil {
		return err
	}
	if want := driver.ForkRoot(cp, in); !reflect.DeepEqual(root, want) {
		return fmt.Errorf("fork returned %+v, want %+v", root, want)
	}
	m.chain[dst] = []string{id}
	m.head[dst] = id
	m.parent[id] = ""
	return nil
}

// checkThread compares a thread with the model: its checkpoints, its head,
// and its chain, which must lead from the head through every live
// checkpoint to a parent that is none or was pruned.
func checkThread(ctx context.Context, s *Driver, m *faultModel, th string) error {
	cps, err := s.p().List(ctx, th)
	if err != nil {
		return err
	}
	var got []string
	for _, cp := range cps {
		got = append(got, cp.ID)
	}
	want := slices.Clone(m.chain[th])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("thread %s holds %q, model %q", th, got, want)
	}
	head, err := s.p().GetHead(ctx, th)
	if err != nil {
		return err
	}
	if head != m.head[th] {
		return fmt.Errorf("thread %s head %q, model %q", th, head, m.head[th])
	}
	chain := m.chain[th]
	for i := len(chain) - 1; i >= 0; i-- {
		cp, err := s.p().Get(ctx, chain[i])
		if err != nil {
			return err
		}
		if cp == nil {
			return fmt.Errorf("thread %s: %s is missing", th, chain[i])
		}
		wantParent := m.parent[chain[i]]
		if i > 0 {
			wantParent = chain[i-1]
		}
		if cp.ParentCheckpointID != wantParent {
			return fmt.Errorf("thread %s: %s has parent %q, want %q", th, cp.ID, cp.ParentCheckpointID, wantParent)
		}
	}
	if len(chain) > 0 && m.parent[chain[0]] != "" {
		if cp, err := s.p().Get(ctx, m.parent[chain[0]]); err != nil || cp != nil {
			return fmt.Errorf("thread %s: pruned parent %q still stored (%v)", th, m.parent[chain[0]], err)
		}
	}
	return nil
}
