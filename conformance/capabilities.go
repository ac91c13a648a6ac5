package conformance

// Helpers for transcripts and paging.

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
)

// save stores a transcript and fails the test when it cannot.
func (e *env) save(thread, messages string) {
	e.t.Helper()
	e.track([]string{thread})
	require.NoError(e.t, e.s.SaveThread(e.ctx, thread, json.RawMessage(messages)), "SaveThread(%q)", thread)
}

// load returns a thread's transcript.
func (e *env) load(thread string) string {
	e.t.Helper()
	m, err := e.s.LoadThread(e.ctx, thread)
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
func (e *env) allThreads() []string {
	e.t.Helper()
	out, err := e.pageThreads("", 0)
	require.NoError(e.t, err, "Threads")
	return out
}

// pageThreads returns every thread id from the cursor after, paging with
// limit (see pageThrough).
func (e *env) pageThreads(after string, limit int) ([]string, error) {
	e.t.Helper()
	return pageThrough(e, fmt.Sprintf("Threads(limit %d)", limit), limit, after, func(after string) ([]string, string, error) {
		return e.s.Threads(e.ctx, after, limit)
	})
}

// pageAll returns every checkpoint of thread, paging with opt from its
// cursor (see pageThrough).
func (e *env) pageAll(thread string, opt ckptstore.ListOptions) []*ckptstore.Checkpoint {
	e.t.Helper()
	what := fmt.Sprintf("ListPage(%q, %+v)", thread, opt)
	out, err := pageThrough(e, what, opt.Limit, opt.After, func(after string) ([]*ckptstore.Checkpoint, string, error) {
		o := opt
		o.After = after
		return e.s.ListPage(e.ctx, thread, o)
	})
	require.NoError(e.t, err, what)
	return out
}

// pageThrough joins the pages that page returns from the cursor after
// until one has no next cursor, at most maxPages of them. Each page must
// hold at most limit items (0: the default, 100), and only the last may be
// empty. what names the call in messages.
func pageThrough[T any](e *env, what string, limit int, after string, page func(after string) ([]T, string, error)) ([]T, error) {
	e.t.Helper()
	most := limit
	if most == 0 {
		most = 100
	}
	var out []T
	for range maxPages {
		items, next, err := page(after)
		if err != nil {
			return nil, err
		}
		assert.LessOrEqual(e.t, len(items), most, "%s from %q: more than the limit", what, after)
		if next != "" && len(items) == 0 {
			require.Failf(e.t, "an empty page with a next cursor", "%s from %q", what, after)
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		after = next
	}
	require.Failf(e.t, "paging does not end", "%s: more than %d pages", what, maxPages)
	return nil, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
