package main

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestReportChunksKeepEveryID(t *testing.T) {
	rep := procReport{Proc: "p"}
	for i := range 20000 {
		rep.Pruned = append(rep.Pruned, fmt.Sprintf("%012x.%d", i*7919, i))
	}
	for i := range 300 {
		rep.Forks = append(rep.Forks, fmt.Sprintf("lg/ns/f/%d", i))
	}
	rep.Uncertain = []string{"lg/ns/t0001"}
	var got procReport
	chunks := rep.chunks()
	for _, c := range chunks {
		if len(c) > reportChunk+1024 {
			t.Errorf("chunk of %d bytes", len(c))
		}
		var reps []procReport
		if err := json.Unmarshal(c, &reps); err != nil || len(reps) != 1 || reps[0].Proc != "p" {
			t.Fatalf("chunk %s: %v", c[:50], err)
		}
		got.Forks = append(got.Forks, reps[0].Forks...)
		got.Pruned = append(got.Pruned, reps[0].Pruned...)
		got.Uncertain = append(got.Uncertain, reps[0].Uncertain...)
	}
	if len(got.Pruned) != len(rep.Pruned) || len(got.Forks) != len(rep.Forks) || len(got.Uncertain) != 1 {
		t.Fatalf("chunks hold %d/%d/%d ids, want %d/%d/1", len(got.Pruned), len(got.Forks), len(got.Uncertain), len(rep.Pruned), len(rep.Forks))
	}
	for i := range got.Pruned {
		if got.Pruned[i] != rep.Pruned[i] {
			t.Fatalf("id %d: %q != %q", i, got.Pruned[i], rep.Pruned[i])
		}
	}
}
