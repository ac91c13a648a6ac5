package ckptstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/sweep"
)

// The README's "Use it" block, line for line, with each error checked
// (TestReadmeExample fails when the two differ): a run appends under its
// lease and releases it; then a prune, which takes the lease itself, and a
// sweep.
func Example_readme() {
	ctx := context.Background()

	store := memstore.New(ckptstore.Options{}) // a *ckptstore.Store; or fdbstore.New(db, …), redisstore.New(client, …)
	bucket := blobs.NewMem(blobs.MemOptions{}) // or blobs.Open(ctx, "s3://bucket?region=…"), "file:///dir"

	lease, err := store.AcquireWriter(ctx, "thread-1") // ErrWriterConflict while another run holds it
	if err != nil {
		log.Fatal(err)
	}

	res, err := blobs.PutFile(ctx, bucket, strings.NewReader("package main\n")) // the bytes, stored once by their SHA-256
	if err != nil {
		log.Fatal(err)
	}
	head, err := store.GetHead(ctx, "thread-1")
	if err != nil {
		log.Fatal(err)
	}
	cp := &ckptstore.Checkpoint{
		ID: "cp-1", ThreadID: "thread-1", ParentCheckpointID: head,
		CreatedAt: float64(time.Now().UnixMilli()), Reason: ckptstore.ReasonAutomatic,
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/main.go", Kind: ckptstore.KindFile, BlobKey: res.Key, Size: res.Size},
		},
		Conversation: json.RawMessage(`[{"role":"user","content":"write main.go"}]`),
	}
	err = store.Append(ctx, cp, head, lease.Writer) // one compare-and-swap: ErrConflict if the head moved
	if err != nil {
		log.Fatal(err)
	}

	expires, err := lease.Renew(ctx) // every lease.RenewAfter; ErrWriterLost: stop writing
	if err != nil {
		log.Fatal(err)
	}
	err = lease.Release(ctx) // the run is over: the thread is free for the next writer
	if err != nil {
		log.Fatal(err)
	}

	deleted, err := ckptstore.KeepNewest(ctx, store, "thread-1", 10) // prune under its own lease (so not while a run holds one): keep the head and 9 before it
	if err != nil {
		log.Fatal(err)
	}
	removed, err := sweep.Run(ctx, store, bucket, sweep.Options{OlderThan: 24 * time.Hour}) // then free the bytes no checkpoint uses
	if err != nil {
		log.Fatal(err)
	}

	h, _ := store.GetHead(ctx, "thread-1")
	fmt.Println("head:", h, "lease renewed:", expires.After(time.Now()))
	fmt.Println("pruned:", len(deleted), "swept:", len(removed))
	// Output:
	// head: cp-1 lease renewed: true
	// pruned: 0 swept: 0
}

// A run takes the thread's writer lease, appends its checkpoint on top of
// the head, and renews the lease while it keeps working.
func Example() {
	ctx := context.Background()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New(ckptstore.Options{Now: func() time.Time { return now }})

	lease, err := store.AcquireWriter(ctx, "thread-1")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)

	// While the lease is held, no other writer gets one.
	_, err = store.AcquireWriter(ctx, "thread-1")
	fmt.Println("second writer:", ckptstore.Code(err))

	head, err := store.GetHead(ctx, "thread-1")
	if err != nil {
		log.Fatal(err)
	}
	src := []byte("package main\n")
	cp := &ckptstore.Checkpoint{
		ID:                 "cp-1",
		ThreadID:           "thread-1",
		ParentCheckpointID: head,
		CreatedAt:          float64(now.UnixMilli()),
		Reason:             ckptstore.ReasonAutomatic,
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/main.go", Kind: ckptstore.KindFile,
				BlobKey: fmt.Sprintf("sandbox-files/sha256/%x", sha256.Sum256(src)), Size: int64(len(src))},
		},
		Conversation: json.RawMessage(`[{"role":"user","content":"write main.go"}]`),
	}
	if err := store.Append(ctx, cp, head, lease.Writer); err != nil {
		log.Fatal(err)
	}

	// A long run renews the lease every RenewAfter.
	now = now.Add(lease.RenewAfter)
	expires, err := lease.Renew(ctx)
	if err != nil {
		log.Fatal(err) // ErrWriterLost: another writer took over; stop writing
	}
	fmt.Println("lease renewed until", expires.Format(time.TimeOnly))

	head, _ = store.GetHead(ctx, "thread-1")
	fmt.Println("head:", head)
	// Output:
	// second writer: SANDBOX_SNAPSHOT_WRITER_CONFLICT
	// lease renewed until 12:02:45
	// head: cp-1
}

// KeepNewest keeps the head and the checkpoints just before it, and deletes
// the older ones of the chain.
func ExampleKeepNewest() {
	ctx := context.Background()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New(ckptstore.Options{Now: func() time.Time { return now }})

	for i := 1; i <= 4; i++ { // four runs, one checkpoint each
		lease, err := store.AcquireWriter(ctx, "thread-1")
		if err != nil {
			log.Fatal(err)
		}
		head, _ := store.GetHead(ctx, "thread-1")
		cp := &ckptstore.Checkpoint{ID: fmt.Sprintf("cp-%d", i), ThreadID: "thread-1",
			ParentCheckpointID: head, CreatedAt: float64(i), Reason: ckptstore.ReasonAutomatic}
		if err := store.Append(ctx, cp, head, lease.Writer); err != nil {
			log.Fatal(err)
		}
		lease.Release(ctx)
	}

	deleted, err := ckptstore.KeepNewest(ctx, store, "thread-1", 2)
	if err != nil {
		log.Fatal(err) // ErrWriterConflict while a run holds the lease
	}
	fmt.Println("deleted:", deleted)
	kept, _ := store.List(ctx, "thread-1")
	for _, cp := range kept {
		fmt.Println("kept:", cp.ID)
	}
	// Output:
	// deleted: [cp-1 cp-2]
	// kept: cp-3
	// kept: cp-4
}

// ForkFromCheckpoint copies one checkpoint into a new, empty thread as its
// root, under that thread's lease.
func ExampleStore_ForkFromCheckpoint() {
	ctx := context.Background()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var store conformance.Store = memstore.New(ckptstore.Options{Now: func() time.Time { return now }})

	lease, err := store.AcquireWriter(ctx, "thread-1")
	if err != nil {
		log.Fatal(err)
	}
	src := &ckptstore.Checkpoint{ID: "cp-1", ThreadID: "thread-1", CreatedAt: 1, Reason: ckptstore.ReasonNamed, Label: "v1",
		Files: []ckptstore.Entry{{Path: "notes.md", Kind: ckptstore.KindFile,
			BlobKey: fmt.Sprintf("sandbox-files/sha256/%x", sha256.Sum256([]byte("# notes\n"))), Size: 8}}}
	if err := store.Append(ctx, src, "", lease.Writer); err != nil {
		log.Fatal(err)
	}
	lease.Release(ctx)

	dst, err := store.AcquireWriter(ctx, "thread-2")
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Release(ctx)
	root, err := store.ForkFromCheckpoint(ctx, ckptstore.ForkInput{
		SourceThreadID: "thread-1", SourceCheckpointID: "cp-1",
		DestinationThreadID: "thread-2", DestinationCheckpointID: "cp-2",
		CreatedAt: 2, Writer: dst.Writer,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s in %s: reason %s, parent %q, label %q, %d file\n",
		root.ID, root.ThreadID, root.Reason, root.ParentCheckpointID, root.Label, len(root.Files))
	refs, _ := store.ListBlobReferences(ctx)
	fmt.Println("notes.md is used by", refs[0].References, "checkpoints")
	// Output:
	// cp-2 in thread-2: reason fork-root, parent "", label "", 1 file
	// notes.md is used by 2 checkpoints
}

// The JSON form is the one @tanstack/ai-sandbox uses. Call MarshalJSON
// directly to keep the conversation's bytes: json.Marshal compacts them.
func ExampleCheckpoint_MarshalJSON() {
	cp := &ckptstore.Checkpoint{
		ID:        "cp-1",
		ThreadID:  "thread-1",
		CreatedAt: 1748779200000.5,
		Reason:    ckptstore.ReasonNamed,
		Label:     "v1",
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/empty.go", Kind: ckptstore.KindFile, BlobKey: fmt.Sprintf("sandbox-files/sha256/%x", sha256.Sum256(nil))},
		},
		Conversation: json.RawMessage(`[{"role": "user", "content": "<b>hi</b>"}]`),
	}
	b, err := cp.MarshalJSON()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))

	var back ckptstore.Checkpoint
	if err := json.Unmarshal(b, &back); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(back.Conversation))
	// Output:
	// {"id":"cp-1","threadId":"thread-1","parentCheckpointId":null,"createdAt":1748779200000.5,"reason":"named","label":"v1","files":[{"path":"src","kind":"dir"},{"path":"src/empty.go","kind":"file","blobKey":"sandbox-files/sha256/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":0}],"conversation":[{"role": "user", "content": "<b>hi</b>"}],"artifacts":[]}
	// [{"role": "user", "content": "<b>hi</b>"}]
}

// Code gives the wire name of a contract error, for APIs that speak to the
// TypeScript side; errors.Is tells the errors apart in Go.
func ExampleCode() {
	ctx := context.Background()
	store := memstore.New(ckptstore.Options{})
	lease, err := store.AcquireWriter(ctx, "thread-1")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)

	first := &ckptstore.Checkpoint{ID: "cp-1", ThreadID: "thread-1", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	if err := store.Append(ctx, first, "", lease.Writer); err != nil {
		log.Fatal(err)
	}
	// A writer that still believes the thread is empty loses the compare-and-swap.
	stale := &ckptstore.Checkpoint{ID: "cp-2", ThreadID: "thread-1", CreatedAt: 2, Reason: ckptstore.ReasonAutomatic}
	err = store.Append(ctx, stale, "", lease.Writer)
	fmt.Println(errors.Is(err, ckptstore.ErrConflict), ckptstore.Code(err))
	// Output: true SANDBOX_SNAPSHOT_STALE_HEAD
}
