package conformance

// Helpers for the optional capabilities of capabilities.go in the root
// package (and Pruner and Forker): each getter returns the capability or
// skips the test, saying why.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
)

// capability returns the store as C, or skips the subtest, saying why, when
// the store does not implement C.
func capability[C any](e *env) C {
	e.t.Helper()
	x, ok := e.s.(C)
	if !ok {
		var zero *C
		e.t.Skipf("store %T does not implement %s", e.s, strings.TrimPrefix(fmt.Sprintf("%T", zero), "*"))
	}
	return x
}

func (e *env) pruner() ckptstore.Pruner           { return capability[ckptstore.Pruner](e) }
func (e *env) forker() ckptstore.Forker           { return capability[ckptstore.Forker](e) }
func (e *env) transcripts() ckptstore.Transcripts { return capability[ckptstore.Transcripts](e) }
func (e *env) deleter() ckptstore.ThreadDeleter   { return capability[ckptstore.ThreadDeleter](e) }
func (e *env) pager() ckptstore.Pager             { return capability[ckptstore.Pager](e) }
func (e *env) lister() ckptstore.ThreadLister     { return capability[ckptstore.ThreadLister](e) }
func (e *env) importer() ckptstore.Importer       { return capability[ckptstore.Importer](e) }

// needs returns a skip message when the store lacks capability C, for the
// order tests' needs.
func needs[C any](f *fixture, name string) string {
	if _, ok := f.s.(C); !ok {
		return fmt.Sprintf("store %T does not implement ckptstore.%s", f.s, name)
	}
	return ""
}

// save stores a transcript and fails the test when it cannot.
func (e *env) save(thread, messages string) {
	e.t.Helper()
	e.track([]string{thread})
	require.NoError(e.t, e.transcripts().SaveThread(e.ctx, thread, json.RawMessage(messages)), "SaveThread(%q)", thread)
}

// load returns a thread's transcript.
func (e *env) load(thread string) string {
	e.t.Helper()
	m, err := e.transcripts().LoadThread(e.ctx, thread)
	require.NoError(e.t, err, "LoadThread(%q)", thread)
	return string(m)
}

// wantTranscript checks a thread's transcript, byte for byte.
func (e *env) wantTranscript(thread, want string) {
	e.t.Helper()
	assert.Equal(e.t, want, e.load(thread), "LoadThread(%q)", thread)
}

// maxPages bounds every paging loop of the suite, so that a store whose
// cursor never advances fails instead of looping.
const maxPages = 10_000

// allThreads pages through Threads with the default limit.
func (e *env) allThreads(tl ckptstore.ThreadLister) []string {
	e.t.Helper()
	out, err := pageThreads(e, tl, 0)
	require.NoError(e.t, err, "Threads")
	return out
}

// pageThreads returns every thread id, paging with limit, and checks that
// each page respects it.
func pageThreads(e *env, tl ckptstore.ThreadLister, limit int) ([]string, error) {
	e.t.Helper()
	want := limit
	if want == 0 {
		want = 100
	}
	out := []string{}
	after := ""
	for range maxPages {
		page, next, err := tl.Threads(e.ctx, after, limit)
		if err != nil {
			return nil, err
		}
		if len(page) > want {
			e.t.Errorf("Threads(%q, %d) returned %d ids, more than the limit", after, limit, len(page))
		}
		if next != "" && len(page) == 0 {
			e.t.Fatalf("Threads(%q, %d) returned an empty page with a next cursor", after, limit)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		after = next
	}
	e.t.Fatalf("Threads: more than %d pages", maxPages)
	return nil, nil
}

// pageAll returns every checkpoint of thread, paging with opt from its
// cursor, and checks that each page respects the limit.
func (e *env) pageAll(thread string, opt ckptstore.ListOptions) []*ckptstore.Checkpoint {
	e.t.Helper()
	p := e.pager()
	want := opt.Limit
	if want == 0 {
		want = 100
	}
	var out []*ckptstore.Checkpoint
	for range maxPages {
		page, next, err := p.ListPage(e.ctx, thread, opt)
		require.NoError(e.t, err, "ListPage(%q, %+v)", thread, opt)
		if len(page) > want {
			e.t.Errorf("ListPage(%q, %+v) returned %d checkpoints, more than the limit", thread, opt, len(page))
		}
		if next != "" && len(page) == 0 {
			e.t.Fatalf("ListPage(%q, %+v) returned an empty page with a next cursor", thread, opt)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		opt.After = next
	}
	e.t.Fatalf("ListPage(%q): more than %d pages", thread, maxPages)
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
