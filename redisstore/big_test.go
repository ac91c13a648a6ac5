package redisstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
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
	srv := redistest.Start(t, "--slowlog-log-slower-than", "0", "--slowlog-max-len", "100000")
	c := srv.Client(t, nil)
	b := &bigThread{t: t, ctx: context.Background(), c: c, s: newStore(t, c, Options{}), n: n}
	var w ckptstore.Writer
	b.log("Import of %d in batches of 500", func() { w = b.build("t") })
	b.list()
	b.oneScriptList()
	b.listPages()
	b.prune(w)
	b.deleteThread(b.build("u"))
	testkit.CheckRefs(t, b.s.p(), "t", "u")
	checkStore(t, b.s)
}

// bigThread is TestBigThread's store on a redis-server that logs every
// command in its SLOWLOG, and the size of its threads.
type bigThread struct {
	t   *testing.T
	ctx context.Context
	c   *redis.Client
	s   *Driver
	n   int
}

// build imports a thread of n checkpoints in batches of 500 and returns
// its writer.
func (b *bigThread) build(thread string) ckptstore.Writer {
	w := acquire(b.t, b.s, thread)
	head := ""
	for k := range b.n / 500 {
		var cps []*ckptstore.Checkpoint
		for i := range 500 {
			id := fmt.Sprintf("%s-%05d", thread, k*500+i)
			cps = append(cps, testkit.Checkpoint(thread, id, head, float64((k*500+i)/3), i%20, k))
			head = id
		}
		_, err := b.s.p().Import(b.ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: cps, SetHead: k == b.n/500-1, Head: head, Writer: w})
		must(b.t, err)
	}
	return w
}

// log runs f and logs its time, the number of scripts the server ran for
// it and the longest of them, after what (a format of n); it returns the
// number of scripts.
func (b *bigThread) log(what string, f func()) int {
	must(b.t, b.c.SlowLogReset(b.ctx).Err())
	start := time.Now()
	f()
	took := time.Since(start)
	logs, err := b.c.SlowLogGet(b.ctx, -1).Result()
	must(b.t, err)
	var scripts int
	var longest time.Duration
	for _, l := range logs {
		if len(l.Args) > 0 && strings.HasPrefix(strings.ToUpper(l.Args[0]), "EVAL") {
			scripts++
			longest = max(longest, l.Duration)
		}
	}
	b.t.Logf(what+": %v, %d scripts, longest %v", b.n, took, scripts, longest)
	return scripts
}

// list lists thread t: all n, in order.
func (b *bigThread) list() {
	var list []*ckptstore.Checkpoint
	b.log("List of %d", func() {
		var err error
		list, err = b.s.p().List(b.ctx, "t")
		must(b.t, err)
	})
	if len(list) != b.n || !slices.IsSortedFunc(list, driver.CompareCheckpoints) {
		b.t.Fatalf("List returned %d checkpoints (sorted %v), want %d in order", len(list), slices.IsSortedFunc(list, driver.CompareCheckpoints), b.n)
	}
}

// oneScriptList lists thread t in one script, as List did before, for
// comparison.
func (b *bigThread) oneScriptList() {
	b.log("List of %d in one script (before)", func() {
		res, err := b.c.Eval(b.ctx, oneScriptList, []string{string(b.s.keys.list("t"))}, b.s.keys.cpPrefix()).Slice()
		must(b.t, err)
		if len(res) != 5*b.n {
			b.t.Fatalf("the one-script List returned %d values", len(res))
		}
	})
}

// listPages pages through thread t by 100: one script a page.
func (b *bigThread) listPages() {
	pages := 0
	scripts := b.log("ListPage of %d in pages of 100", func() {
		after := ""
		for {
			page, next, err := b.s.p().ListPage(b.ctx, "t", ckptstore.ListOptions{After: after, Limit: 100})
			must(b.t, err)
			pages++
			if len(page) != 100 {
				b.t.Fatalf("page %d holds %d checkpoints", pages, len(page))
			}
			if next == "" {
				break
			}
			after = next
		}
	})
	if pages != b.n/100 || scripts != pages {
		b.t.Fatalf("%d pages in %d scripts, want %d in one script each", pages, scripts, b.n/100)
	}
}

// prune keeps thread t's head only: n-1 deleted, from the far end.
func (b *bigThread) prune(w ckptstore.Writer) {
	var deleted []string
	b.log("DeleteCheckpoints(keep 1) of %d", func() {
		var err error
		deleted, err = b.s.p().DeleteCheckpoints(b.ctx, "t", 1, w)
		must(b.t, err)
	})
	if len(deleted) != b.n-1 || deleted[0] != "t-00000" {
		b.t.Fatalf("prune deleted %d, first %q; want %d from the far end", len(deleted), deleted[0], b.n-1)
	}
}

// deleteThread deletes thread u: all n.
func (b *bigThread) deleteThread(w ckptstore.Writer) {
	var count int
	b.log("DeleteThread of %d", func() {
		var err error
		count, err = b.s.p().DeleteThread(b.ctx, "u", w)
		must(b.t, err)
	})
	if count != b.n {
		b.t.Fatalf("DeleteThread = %d, want %d", count, b.n)
	}
}
