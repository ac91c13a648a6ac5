package fdbstore_test

import (
	"fmt"
	"github.com/ckptstore/ckptstore/fdbstore"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// BenchmarkChatTurn is one chat turn's run calls on memkv: createOrResume,
// findActiveRun, update to completed. It reports the engine's read rounds
// and commits per turn beside the time.
func BenchmarkChatTurn(b *testing.B) {
	db := memkv.New()
	d, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	db.ResetStats()
	i := 0
	for b.Loop() {
		id, thread := fmt.Sprintf("run-%d", i), fmt.Sprintf("thread-%d", i%100)
		i++
		if _, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: id, ThreadID: thread, Status: pdriver.RunRunning, StartedAt: int64(i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := d.ActiveRun(ctx, thread); err != nil {
			b.Fatal(err)
		}
		if _, err := d.UpdateRun(ctx, id, pdriver.RunPatch{Status: pdriver.Set(pdriver.RunCompleted), FinishedAt: pdriver.Set(int64(i))}); err != nil {
			b.Fatal(err)
		}
	}
	st := db.Stats()
	b.ReportMetric(float64(st.ReadRounds)/float64(i), "rounds/turn")
	b.ReportMetric(float64(st.Commits)/float64(i), "commits/turn")
}
