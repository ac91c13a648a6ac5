package main

// Contention mode: N processes write the threads of one namespace. Each
// knows only its own acknowledged appends and deletions, yet --verify must
// tell a checkpoint another process pruned (legitimately gone) from a lost
// one, and must recount references over the forks every process made. So,
// after its load, each process publishes what it deleted and forked
// through the store itself — checkpoints on a report thread of its own —
// and marks a barrier thread; all of them verify only once N marks are
// there, when nobody writes any more. Using the store (not files or a side
// channel) lets the processes run on different machines.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ckptstore/ckptstore"
)

// procReport is what one process tells the others.
type procReport struct {
	Proc      string   `json:"proc"`
	Forks     []string `json:"forks,omitempty"`     // fork destination threads attempted
	Pruned    []string `json:"pruned,omitempty"`    // ids its prunes removed
	Uncertain []string `json:"uncertain,omitempty"` // threads where a delete's outcome is unknown
}

// reportChunk bounds the JSON of one report checkpoint, far below every
// store's value limits.
const reportChunk = 16 << 10

func barrierThread(ns string) string      { return "lg/" + ns + "/barrier" }
func reportThread(ns, proc string) string { return "lg/" + ns + "/report/" + proc }

// arrived returns the processes that have marked the barrier.
func arrived(ctx context.Context, st *ckptstore.Store, ns string) ([]string, error) {
	list, err := st.List(ctx, barrierThread(ns))
	if err != nil {
		return nil, err
	}
	var procs []string
	for _, cp := range list {
		if !slices.Contains(procs, cp.Label) {
			procs = append(procs, cp.Label)
		}
	}
	return procs, nil
}

// acquire takes thread's lease, waiting while another process holds it.
func acquire(ctx context.Context, st *ckptstore.Store, thread string) (*ckptstore.Lease, error) {
	for {
		l, err := st.AcquireWriter(ctx, thread)
		if !errors.Is(err, ckptstore.ErrWriterConflict) {
			return l, err
		}
		sleep(ctx, time.Duration(5+rand.IntN(20))*time.Millisecond)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// appendChain appends one checkpoint per conversation to thread, under one
// lease, renewing it as needed.
func appendChain(ctx context.Context, st *ckptstore.Store, thread, idBase, label string, convs [][]byte) error {
	lease, err := acquire(ctx, st, thread)
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx))
	head, err := st.GetHead(ctx, thread)
	if err != nil {
		return err
	}
	renewed := time.Now()
	for i, conv := range convs {
		if time.Since(renewed) >= lease.RenewAfter {
			renewed = time.Now()
			if _, err := lease.Renew(ctx); err != nil {
				return err
			}
		}
		id := fmt.Sprintf("%s-%d", idBase, i)
		cp := &ckptstore.Checkpoint{
			ID: id, ThreadID: thread, ParentCheckpointID: head,
			CreatedAt: float64(time.Now().UnixMilli()), Reason: ckptstore.ReasonNamed,
			Label: label, Conversation: conv,
		}
		if err := st.Append(ctx, cp, head, lease.Writer); err != nil {
			return err
		}
		head = id
	}
	return nil
}

// chunks splits rep into reports whose JSON stays under reportChunk.
func (rep procReport) chunks() [][]byte {
	var out [][]byte
	cur, size := procReport{Proc: rep.Proc}, 0
	flush := func() {
		b, _ := json.Marshal([]procReport{cur}) // strings only: cannot fail
		out = append(out, b)
		cur, size = procReport{Proc: rep.Proc}, 0
	}
	add := func(dst *[]string, ids []string) {
		for _, id := range ids {
			if size+len(id)+8 > reportChunk {
				flush()
			}
			*dst = append(*dst, id)
			size += len(id) + 8
		}
	}
	add(&cur.Forks, rep.Forks)
	add(&cur.Pruned, rep.Pruned)
	add(&cur.Uncertain, rep.Uncertain)
	flush()
	return out
}

// meet publishes rep, marks the barrier, waits until n processes have
// marked it, and returns every process's report, rep included.
func meet(ctx context.Context, st *ckptstore.Store, ns string, n int, rep procReport, timeout time.Duration) ([]procReport, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := appendChain(ctx, st, reportThread(ns, rep.Proc), rep.Proc+".report", "loadgen report", rep.chunks()); err != nil {
		return nil, fmt.Errorf("publish the report: %w", err)
	}
	if err := appendChain(ctx, st, barrierThread(ns), rep.Proc+".done", rep.Proc, [][]byte{[]byte("[]")}); err != nil {
		return nil, fmt.Errorf("mark the barrier: %w", err)
	}
	var procs []string
	for {
		var err error
		if procs, err = arrived(ctx, st, ns); err != nil {
			return nil, fmt.Errorf("read the barrier: %w", err)
		}
		if len(procs) >= n {
			break
		}
		sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("only %d of %d processes reached the barrier within %v", len(procs), n, timeout)
		}
	}
	var all []procReport
	for _, p := range procs {
		list, err := st.List(ctx, reportThread(ns, p))
		if err != nil {
			return nil, fmt.Errorf("read the report of %s: %w", p, err)
		}
		for _, cp := range list {
			var reps []procReport
			if err := json.Unmarshal(cp.Conversation, &reps); err != nil {
				return nil, fmt.Errorf("report %q of %s: %w", cp.ID, p, err)
			}
			all = append(all, reps...)
		}
	}
	return all, nil
}
