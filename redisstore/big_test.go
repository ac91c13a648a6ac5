package redisstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// oneScriptList is the List of before batching: the whole thread in one
// script, for the comparison in TestBigThread.
const oneScriptList = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local out = {}
for _, m in ipairs(ids) do
  local c = redis.call('HMGET', ARGV[1] .. string.sub(m, 9), 'p', 'h', 'b', 'v')
  out[#out + 1] = m
  for i = 1, 4 do out[#out + 1] = c[i] end
end
return out
`

// TestBigThread lists, pages, prunes and deletes a long thread on a real redis-server and reports, from the server's SLOWLOG,
// how long the longest single script held the server in each, next to the
// one-script List of before. It runs on 1,000 checkpoints; set
// REDISSTORE_BIG=1 for 10,000 (about 1 s more, several under -race).
func TestBigThread(t *testing.T) {
	n := 1_000
	if os.Getenv("REDISSTORE_BIG") != "" {
		n = 10_000
	} else {
		t.Log("1,000 checkpoints; set REDISSTORE_BIG=1 for 10,000")
	}
	ctx := context.Background()
	srv := redistest.Start(t, "--slowlog-log-slower-than", "0", "--slowlog-max-len", "100000")
	c := srv.Client(t, nil)
	s := newStore(t, c, Options{})
	build := func(thread string) ckptstore.Writer {
		w := acquire(t, s, thread)
		head := ""
		for b := range n / 500 {
			var cps []*ckptstore.Checkpoint
			for i := range 500 {
				id := fmt.Sprintf("%s-%05d", thread, b*500+i)
				cps = append(cps, testkit.Checkpoint(thread, id, head, float64((b*500+i)/3), i%20, b))
				head = id
			}
			_, err := s.Import(ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: cps, SetHead: b == n/500-1, Head: head, Writer: w})
			must(t, err)
		}
		return w
	}
	// longest runs f and returns its time, the number of scripts the
	// server ran for it and the longest of them.
	longest := func(f func()) (time.Duration, int, time.Duration) {
		must(t, c.SlowLogReset(ctx).Err())
		start := time.Now()
		f()
		took := time.Since(start)
		logs, err := c.SlowLogGet(ctx, -1).Result()
		must(t, err)
		var scripts int
		var longestRun time.Duration
		for _, l := range logs {
			if len(l.Args) > 0 && strings.HasPrefix(strings.ToUpper(l.Args[0]), "EVAL") {
				scripts++
				longestRun = max(longestRun, l.Duration)
			}
		}
		return took, scripts, longestRun
	}
	var w ckptstore.Writer
	took, scripts, longestScript := longest(func() { w = build("t") })
	t.Logf("Import of %d in batches of 500: %v, %d scripts, longest %v", n, took, scripts, longestScript)
	var list []*ckptstore.Checkpoint
	took, scripts, longestScript = longest(func() {
		var err error
		list, err = s.List(ctx, "t")
		must(t, err)
	})
	if len(list) != n || !slices.IsSortedFunc(list, ckptstore.CompareCheckpoints) {
		t.Fatalf("List returned %d checkpoints (sorted %v), want %d in order", len(list), slices.IsSortedFunc(list, ckptstore.CompareCheckpoints), n)
	}
	t.Logf("List of %d: %v, %d scripts, longest script %v", n, took, scripts, longestScript)

	took, scripts, longestScript = longest(func() {
		res, err := c.Eval(ctx, oneScriptList, []string{string(s.keys.list("t"))}, s.keys.cpPrefix()).Slice()
		must(t, err)
		if len(res) != 5*n {
			t.Fatalf("the one-script List returned %d values", len(res))
		}
	})
	t.Logf("List of %d in one script (before): %v, %d script, longest %v", n, took, scripts, longestScript)

	pages := 0
	took, scripts, longestScript = longest(func() {
		after := ""
		for {
			page, next, err := s.ListPage(ctx, "t", ckptstore.ListOptions{After: after, Limit: 100})
			must(t, err)
			pages++
			if len(page) != 100 {
				t.Fatalf("page %d holds %d checkpoints", pages, len(page))
			}
			if next == "" {
				break
			}
			after = next
		}
	})
	if pages != n/100 || scripts != pages {
		t.Fatalf("%d pages in %d scripts, want %d in one script each", pages, scripts, n/100)
	}
	t.Logf("ListPage of %d in pages of 100: %v, %d scripts, longest %v", n, took, scripts, longestScript)

	var deleted []string
	took, scripts, longestScript = longest(func() {
		var err error
		deleted, err = s.DeleteCheckpoints(ctx, "t", 1, w)
		must(t, err)
	})
	if len(deleted) != n-1 || deleted[0] != "t-00000" {
		t.Fatalf("prune deleted %d, first %q; want %d from the far end", len(deleted), deleted[0], n-1)
	}
	t.Logf("DeleteCheckpoints(keep 1) of %d: %v, %d scripts, longest %v", n, took, scripts, longestScript)

	w2 := build("u")
	var count int
	took, scripts, longestScript = longest(func() {
		var err error
		count, err = s.DeleteThread(ctx, "u", w2)
		must(t, err)
	})
	if count != n {
		t.Fatalf("DeleteThread = %d, want %d", count, n)
	}
	t.Logf("DeleteThread of %d: %v, %d scripts, longest %v", n, took, scripts, longestScript)
	testkit.CheckRefs(t, s, "t", "u")
	checkStore(t, s)
}
