package conformance

// Thread transcripts: LoadThread and SaveThread,
// byte for byte, "[]" by default, no lease needed, and the fork's use of
// them: a destination with a transcript is not empty, and a fork writes the
// destination's transcript in the same atomic step.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

func (s *suite) testTranscripts(t *testing.T) {
	t.Run("Default", s.transcriptsDefault)
	t.Run("RoundTrip", s.transcriptsRoundTrip)
	t.Run("Replace", s.transcriptsReplace)
	t.Run("NoLeaseNeeded", s.transcriptsNoLeaseNeeded)
	t.Run("ChangesNoCheckpoint", s.transcriptsChangesNoCheckpoint)
	t.Run("ThreadsApart", s.transcriptsThreadsApart)
	t.Run("Refused", s.transcriptsRefused)
	t.Run("Immutability", s.transcriptsImmutability)
	t.Run("SavedEmptyArrayCounts", s.transcriptsSavedEmptyArrayCounts)
}

func (s *suite) transcriptsDefault(t *testing.T) {
	e := s.env(t)
	e.wantTranscript("never-seen", "[]")
	e.chain("t", nil, "a")
	e.wantTranscript("t", "[]")
}

func (s *suite) transcriptsRoundTrip(t *testing.T) {
	e := s.env(t)
	for _, tc := range jsonArrays {
		e.save("t", tc.conv)
		e.wantTranscript("t", tc.conv)
		e.save(tc.name, tc.conv) // a thread of its own, kept too
	}
	for _, tc := range jsonArrays {
		e.wantTranscript(tc.name, tc.conv)
	}
	e.wantTranscript("t", jsonArrays[len(jsonArrays)-1].conv)
}

func (s *suite) transcriptsReplace(t *testing.T) {
	e := s.env(t)
	e.save("t", `[1,2,3]`)
	e.save("t", `[4]`)
	e.wantTranscript("t", `[4]`)
	e.save("t", `[]`)
	e.wantTranscript("t", `[]`)
}

func (s *suite) transcriptsNoLeaseNeeded(t *testing.T) {
	// SaveThread needs no lease, works while another holds one, and
	// leaves the lease alone.
	e, l := s.withLease(t, "t")
	e.save("t", `["while leased"]`)
	e.wantTranscript("t", `["while leased"]`)
	e.holds("after SaveThread", l.Writer, "t")
	e.wantTranscript("t", `["while leased"]`)
}

func (s *suite) transcriptsChangesNoCheckpoint(t *testing.T) {
	e := s.env(t)
	e.chain("t", nil, "a", "b")
	e.chain("u", nil, "c")
	before := e.snap()
	e.save("t", `["x"]`)
	after := e.snap()
	after.transcripts, after.listing = before.transcripts, before.listing
	sameSnapshot(t, before, after, "SaveThread")
	e.wantTranscript("u", "[]")
}

func (s *suite) transcriptsThreadsApart(t *testing.T) {
	e := s.env(t)
	threads := []string{"t", "t:1", "t\x00", "t\x00x", "t*", "tt", "{t}"}
	for i, th := range threads {
		e.save(th, `[`+itoa(i)+`]`)
	}
	for i, th := range threads {
		e.wantTranscript(th, `[`+itoa(i)+`]`)
	}
}

func (s *suite) transcriptsRefused(t *testing.T) {
	e := s.env(t)
	e.save("t", `["kept"]`)
	for _, bad := range []struct{ name, m string }{
		{"empty", ""}, {"whitespace only", " \n"}, {"object", `{}`}, {"null", `null`}, {"string", `"x"`}, {"number", `0`},
		{"unterminated", `[`}, {"two arrays", `[][]`}, {"garbage after", `[]x`},
		{"invalid UTF-8 in a string", "[\"\xff\"]"}, {"lone surrogate in WTF-8", "[\"\xed\xa0\x80\"]"},
		{"not JSON", "\xff"},
		{"nested over the depth bound", strings.Repeat("[", contract.MaxJSONDepth+1) + strings.Repeat("]", contract.MaxJSONDepth+1)},
	} {
		for _, th := range []string{"t", "new"} {
			e.fails("SaveThread("+th+", "+bad.name+")", ckptstore.ErrInvalidEntry, func() error { return e.s.SaveThread(e.ctx, th, json.RawMessage(bad.m)) })
		}
	}
	e.fails("SaveThread(nil)", ckptstore.ErrInvalidEntry, func() error { return e.s.SaveThread(e.ctx, "t", nil) })
	for _, bad := range invalidIDs {
		e.fails("SaveThread("+bad.name+")", ckptstore.ErrInvalidID, func() error { return e.s.SaveThread(e.ctx, bad.id, json.RawMessage(`[]`)) })
		e.fails("SaveThread("+bad.name+", invalid messages)", ckptstore.ErrInvalidID, func() error { return e.s.SaveThread(e.ctx, bad.id, json.RawMessage(`{}`)) })
		m, err := e.s.LoadThread(e.ctx, bad.id)
		if wantErr(t, "LoadThread("+bad.name+")", err, ckptstore.ErrInvalidID) && m != nil {
			t.Errorf("LoadThread(%s) failed but returned %q", bad.name, m)
		}
	}
	e.wantTranscript("t", `["kept"]`)
	e.wantTranscript("new", `[]`)
}

func (s *suite) transcriptsImmutability(t *testing.T) {
	e := s.env(t)
	in := json.RawMessage(`["abc"]`)
	require.NoError(t, e.s.SaveThread(e.ctx, "t", in), "SaveThread")
	copy(in, `[1234]`)
	e.wantTranscript("t", `["abc"]`)
	out, err := e.s.LoadThread(e.ctx, "t")
	require.NoError(t, err, "LoadThread")
	for i := range out {
		out[i] = ' '
	}
	e.wantTranscript("t", `["abc"]`)
	def, err := e.s.LoadThread(e.ctx, "none")
	require.NoError(t, err, "LoadThread(none)")
	if len(def) > 0 {
		def[0] = '{'
	}
	e.wantTranscript("none", `[]`)
}

func (s *suite) transcriptsSavedEmptyArrayCounts(t *testing.T) {
	// A thread has a transcript once one was saved, even [].
	e := s.env(t)
	e.save("d", `[]`)
	wantThreads(e, "after SaveThread(d, [])", "d")
	e.chain("src", nil, "a")
	wd := e.acquire("d").Writer
	e.track(nil, "root")
	e.fails("ForkFromCheckpoint into a thread with the transcript []", ckptstore.ErrForkDestinationNotEmpty, func() error { return e.forkErr(forkInput("src", "a", "d", "root", 1, wd)) })
}

// forkLeased forks into dest with a new lease of dest, which it returns.
func (e *env) forkLeased(src, id, dest, root string) (ckptstore.Writer, error) {
	e.t.Helper()
	wd := e.acquire(dest).Writer
	e.track([]string{dest}, root)
	_, err := e.s.ForkFromCheckpoint(e.ctx, forkInput(src, id, dest, root, 9, wd))
	return wd, err
}

func (s *suite) testForkTranscript(t *testing.T) {
	t.Run("Writes", s.forkTranscriptWrites)
	t.Run("RefusedByTranscript", s.forkTranscriptRefusedByTranscript)
	t.Run("FailedForkWritesNone", s.forkTranscriptFailedForkWritesNone)
}

func (s *suite) forkTranscriptWrites(t *testing.T) {
	e, ws := s.leased(t, "src")
	a := testkit.Checkpoint("src", "a", "", 1000)
	a.Conversation = []byte(" [ {\"role\":\"user\", \"content\":\"é\"} ]\n")
	e.append(a, ws)
	b := testkit.Checkpoint("src", "b", "", 1000)
	b.Conversation = nil
	e.append(b, ws)
	e.save("src", `["the source's own"]`)
	require.NoError(t, errOf(e.forkLeased("src", "a", "d1", "r1")), "fork of a")
	e.wantTranscript("d1", string(a.Conversation))
	w2, err := e.forkLeased("src", "b", "d2", "r2")
	require.NoError(t, err, "fork of b")
	e.wantTranscript("d2", "[]")
	// That [] is a transcript: once the root is gone, d2 is still not
	// empty.
	require.NoError(t, e.s.DeleteHead(e.ctx, "d2", "r2", w2), "DeleteHead r2")
	assert.Contains(t, e.allThreads(), "d2", "Threads: d2 has the transcript [] from its fork and must be listed")
	e.fails("fork into d2, whose transcript is the fork's []", ckptstore.ErrForkDestinationNotEmpty, func() error { return e.forkErr(forkInput("src", "b", "d2", "r2", 9, w2)) })
	e.wantTranscript("src", `["the source's own"]`)
	// A fork of the fork copies the root's conversation again.
	require.NoError(t, errOf(e.forkLeased("d1", "r1", "d3", "r3")), "fork of the fork")
	e.wantTranscript("d3", string(a.Conversation))
}

func (s *suite) forkTranscriptRefusedByTranscript(t *testing.T) {
	e := s.env(t)
	e.chain("src", nil, "a")
	e.save("d", `["existing"]`)
	wd := e.acquire("d").Writer
	e.track(nil, "root")
	e.fails("ForkFromCheckpoint into a thread with a transcript", ckptstore.ErrForkDestinationNotEmpty, func() error { return e.forkErr(forkInput("src", "a", "d", "root", 1, wd)) })
	e.wantTranscript("d", `["existing"]`)
	e.works("the destination's writer after the refused fork", wd, "d")
}

func (s *suite) forkTranscriptFailedForkWritesNone(t *testing.T) {
	// A fork refused for any reason leaves the destination without a
	// transcript: the transcript is part of the fork's atomic step.
	e := s.env(t)
	a := testkit.Checkpoint("src", "a", "", 1000)
	a.Conversation = []byte(`["x"]`)
	e.append(a, e.acquire("src").Writer)
	writers := map[string]ckptstore.Writer{"full": e.chain("full", nil, "old")}
	for _, th := range []string{"empty1", "empty2"} {
		writers[th] = e.acquire(th).Writer
	}
	for _, tc := range []struct {
		name, dest, root string
		forge            bool
		want             error
	}{
		{"destination has checkpoints", "full", "r", false, ckptstore.ErrForkDestinationNotEmpty},
		{"destination id used", "empty1", "a", false, ckptstore.ErrForkDestinationNotEmpty},
		{"forged writer", "empty2", "r", true, ckptstore.ErrWriterLost},
	} {
		wd := writers[tc.dest]
		if tc.forge {
			wd = forged(wd)
		}
		e.track([]string{tc.dest}, tc.root)
		e.fails(tc.name, tc.want, func() error { return e.forkErr(forkInput("src", "a", tc.dest, tc.root, 1, wd)) })
		e.wantTranscript(tc.dest, "[]")
	}
}
