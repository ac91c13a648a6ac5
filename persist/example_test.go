package persist_test

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
)

// One chat turn's persistence, with the sandbox created under the thread's
// lock so that two replicas cannot both create it.
func Example() {
	ctx := context.Background()
	s, err := persist.New(memstore.NewPersistence(memstore.PersistenceOptions{}), persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{})})
	if err != nil {
		panic(err)
	}
	run, _ := s.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "run-1", ThreadID: "thread-1", StartedAt: 1000})
	fmt.Println(run.Status)

	err = s.Locks.WithLock(ctx, "sandbox:thread-1", func(ctx context.Context) error {
		// Create or resume the sandbox here; stop when ctx is done.
		return s.Runs.Update(ctx, "run-1", persist.RunPatch{SandboxKey: persist.Set("thread-1/sandbox")})
	})
	if err != nil {
		panic(err)
	}

	_ = s.Runs.Update(ctx, "run-1", persist.RunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](2000)})
	active, _ := s.Runs.FindActiveRun(ctx, "thread-1")
	done, _ := s.Runs.Get(ctx, "run-1")
	fmt.Println(active == nil, done.Status, *done.SandboxKey)
	// Output:
	// running
	// true completed thread-1/sandbox
}

// A patch's explicit undefined is a clear, a JSON null on the wire.
func ExampleRunPatch() {
	p := persist.RunPatch{DetachedSince: persist.Clear[int64](), DriverEpoch: persist.Set[int64](3)}
	b, _ := p.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"detachedSince":null,"driverEpoch":3}
}
