package conformance

// The data rules: what a read returns for what was appended, ids, order,
// immutability and blob reference counts.

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

func (s *suite) testEmpty(t *testing.T) {
	e := s.env(t)
	assert.Nil(t, e.get("missing"), "Get(missing) on an empty store")
	e.wantThread("missing", "")
	e.wantRefs()
}

func (s *suite) testRoundTrip(t *testing.T) {
	t.Run("EveryField", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		c1 := richCP("thread", "c1", "")
		want1 := e.appendKept(c1, w)
		c2 := richCP("thread", "c2", "c1")
		c2.Reason = ckptstore.ReasonForkRoot // Append takes every reason
		c2.Files = c2.Files[1:3]
		c2.Artifacts = []ckptstore.Artifact{testkit.Artifact("z", 7), testkit.Artifact("a", 3)}
		want2 := e.appendKept(c2, w)
		wantCP(t, e.get("c1"), want1, "Get(c1) after c2")
		wantCPs(t, e.list("thread"), []*ckptstore.Checkpoint{want1, want2}, "List(thread)")
		e.wantHead("thread", "c2")
	})
	t.Run("Minimal", func(t *testing.T) {
		// No label, run id, files, conversation or artifacts: they come
		// back absent.
		e, w := s.leased(t, "thread")
		c := testkit.Checkpoint("thread", "c1", "", 1000)
		c.Conversation = nil
		e.appendKept(c, w)
	})
	t.Run("OrderOfFilesAndArtifactsKept", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		c := testkit.Checkpoint("thread", "c1", "", 1000)
		c.Files = []ckptstore.Entry{testkit.File("z", 1, 1), testkit.Dir("b"), testkit.File("a", 2, 2), testkit.File("b/a", 3, 3), testkit.Dir("m")}
		c.Artifacts = []ckptstore.Artifact{testkit.Artifact("z", 1), testkit.Artifact("a", 2), testkit.Artifact("m", 3)}
		e.appendKept(c, w)
	})
}

// createdAtValues are exact float64 values a store must keep to the bit
// (except the sign of zero).
var createdAtValues = []float64{
	0, math.Copysign(0, -1), 1, -1, -1.5, 0.1, 0.25, 1e300, -1e300,
	5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
	1_700_000_000_000.123, 1 << 53, 1<<53 + 2, 123456789.98765433,
}

func (s *suite) testCreatedAt(t *testing.T) {
	e, w := s.leased(t, "thread")
	for i, v := range createdAtValues {
		c := testkit.Checkpoint("thread", "c"+string(rune('a'+i)), "", v)
		c.Artifacts = []ckptstore.Artifact{testkit.Artifact("a", i)}
		c.Artifacts[0].CreatedAt = v
		e.append(c, w)
		got := e.get(c.ID)
		if got == nil {
			t.Fatalf("Get(%q) = nil after Append", c.ID)
		}
		if got.CreatedAt != v {
			t.Errorf("createdAt %v (bits %#x) came back as %v (bits %#x)", v, math.Float64bits(v), got.CreatedAt, math.Float64bits(got.CreatedAt))
		}
		if len(got.Artifacts) != 1 || got.Artifacts[0].CreatedAt != v {
			t.Errorf("artifact createdAt %v came back as %+v", v, got.Artifacts)
		}
	}
}

// jsonArrays are JSON arrays a store must keep byte for byte, as a
// checkpoint's conversation and as a transcript.
var jsonArrays = []struct{ name, conv string }{
	{"Whitespace", `[ {"role":"user",  "content":"x"} ]`},
	{"WhitespaceAround", " \r\n\t[ {\"role\":\"user\",  \"content\":\"x\"} ]\n "},
	{"Newlines", "[\n\t{\"role\": \"user\",\r\n \"content\": null}\n]"},
	{"KeyOrder", `[{"z":1,"a":2,"m":{"y":[],"b":{}}}]`},
	{"DuplicateKeys", `[{"a":1,"a":2}]`},
	{"KeyOrderAndDuplicates", `[{"z":1,"a":2,"a":3,"m":{"y":[],"b":{}}}]`},
	{"Numbers", `[1.0,1e2,-0,0.10,12345678901234567890123,1E-7]`},
	{"Escapes", `["\u00e9","é","\ud83d\ude00","😀","\/","<&>","\u2028"]`},
	{"EscapesAndNUL", `["\u00e9","é","\ud83d\ude00","😀","\/","<&>","\u2028","\u0000"]`},
	{"Empty", `[]`},
	{"Messages", `[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"é"}]}]`},
	{"Nested", `[[[[[]]]],{"content":[{"type":"image","data":"aGk="}]}]`},
}

func (s *suite) testConversation(t *testing.T) {
	for _, tc := range jsonArrays {
		t.Run(tc.name, func(t *testing.T) {
			e, w := s.leased(t, "thread")
			c := testkit.Checkpoint("thread", "c1", "", 1000)
			c.Conversation = []byte(tc.conv)
			e.append(c, w)
			got := e.get("c1")
			if got == nil || !bytes.Equal(got.Conversation, []byte(tc.conv)) {
				t.Errorf("conversation %q came back as %q", tc.conv, conversationOf(got))
			}
			l := e.list("thread")
			if len(l) != 1 || !bytes.Equal(l[0].Conversation, []byte(tc.conv)) {
				t.Errorf("List: conversation %q came back as %v", tc.conv, l)
			}
		})
	}
	t.Run("Absent", func(t *testing.T) {
		// An empty conversation means [], and may come back as either.
		e, w := s.leased(t, "thread")
		c := testkit.Checkpoint("thread", "c1", "", 1000)
		c.Conversation = nil
		e.append(c, w)
		got := e.get("c1")
		if got == nil || !(len(got.Conversation) == 0 || string(got.Conversation) == "[]") {
			t.Errorf("absent conversation came back as %q, want empty or []", conversationOf(got))
		}
	})
}

func conversationOf(c *ckptstore.Checkpoint) []byte {
	if c == nil {
		return nil
	}
	return c.Conversation
}

// unusualIDs are valid ids (non-empty, valid UTF-8) that trip stores which
// build keys by concatenation, glob patterns or escaping.
var unusualIDs = []string{
	"a\x00b", "with space", "key:with:colons", "{hash}tag", "*?[]", "😀", "\uFFFD",
	"/slash/", "..", "-", "\t", "a/b", "'quote\"", "%s%d", "\\", "\x7f", "\u2028",
	strings.Repeat("long", driver.MaxIDBytes/4), // exactly MaxIDBytes
	strings.Repeat("é", driver.MaxIDBytes/2),    // exactly MaxIDBytes, two bytes a rune
	strings.Repeat("x", driver.MaxIDBytes-1),
}

func (s *suite) testIDs(t *testing.T) {
	t.Run("Unusual", func(t *testing.T) {
		e := s.env(t)
		for i, id := range unusualIDs {
			// A thread and a checkpoint may share an id.
			e.appendKept(blobCP(id, id, 1000, entries(testkit.File("f", i, 1))), e.acquire(id).Writer)
			e.wantThread(id, id, id)
		}
		e.wantRecount()
	})
	t.Run("PrefixThreadsApart", func(t *testing.T) {
		// Threads and checkpoints whose ids share a prefix, or differ only
		// after a NUL, stay apart.
		e := s.env(t)
		threads := []string{"t", "t:1", "t\x00", "t\x00x", "t*", "tt", "t/", "t."}
		for _, th := range threads {
			e.chain(th, nil, th+"|c", th+"|c\x00", th+"|c:2")
		}
		for _, th := range threads {
			e.wantThread(th, th+"|c:2", th+"|c", th+"|c\x00", th+"|c:2")
		}
		e.wantRecount()
	})
	t.Run("InvalidInReads", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		e.append(testkit.Checkpoint("thread", "c1", "", 1000), w)
		for _, bad := range invalidIDs {
			wantErr(t, "Get("+bad.name+")", errOf(e.s.Get(e.ctx, bad.id)), ckptstore.ErrInvalidID)
			wantErr(t, "List("+bad.name+")", errOf(e.s.List(e.ctx, bad.id)), ckptstore.ErrInvalidID)
			wantErr(t, "Head("+bad.name+")", errOf(e.s.GetHead(e.ctx, bad.id)), ckptstore.ErrInvalidID)
			e.fails("AcquireWriter("+bad.name+")", ckptstore.ErrInvalidID, func() error { return errOf(e.s.AcquireWriter(e.ctx, bad.id)) })
		}
	})
	t.Run("TooLong", func(t *testing.T) {
		// Every method that takes a thread or checkpoint id refuses one
		// over MaxIDBytes with ErrInvalidID, quotes at most a short prefix
		// of it, and stores nothing.
		e, w := s.leased(t, "thread")
		e.append(testkit.Checkpoint("thread", "c1", "", 1000), w)
		long := strings.Repeat("x", driver.MaxIDBytes+1)
		huge := strings.Repeat("y", 1<<20)
		for _, id := range []string{long, huge} {
			name := fmt.Sprintf("%d-byte id", len(id))
			for what, err := range map[string]error{
				"Get":            errOf(e.s.Get(e.ctx, id)),
				"List":           errOf(e.s.List(e.ctx, id)),
				"Head":           errOf(e.s.GetHead(e.ctx, id)),
				"ListPage":       func() error { _, _, err := e.s.ListPage(e.ctx, id, ckptstore.ListOptions{}); return err }(),
				"LoadThread":     errOf(e.s.LoadThread(e.ctx, id)),
				"AcquireWriter":  errOf(e.s.AcquireWriter(e.ctx, id)),
				"SaveThread":     e.s.SaveThread(e.ctx, id, []byte(`[]`)),
				"Append id":      e.s.Append(e.ctx, testkit.Checkpoint("thread", id, "c1", 2000), "c1", w),
				"Append thread":  e.s.Append(e.ctx, testkit.Checkpoint(id, "c2", "", 2000), "", ckptstore.Writer{ThreadID: id}),
				"DeleteHead":     e.s.DeleteHead(e.ctx, "thread", id, w),
				"Fork source":    errOf(e.s.ForkFromCheckpoint(e.ctx, ckptstore.ForkInput{SourceThreadID: "thread", SourceCheckpointID: id, DestinationThreadID: "d", DestinationCheckpointID: "d1", Writer: ckptstore.Writer{ThreadID: "d"}})),
				"Fork dest":      errOf(e.s.ForkFromCheckpoint(e.ctx, ckptstore.ForkInput{SourceThreadID: "thread", SourceCheckpointID: "c1", DestinationThreadID: id, DestinationCheckpointID: "d1", Writer: ckptstore.Writer{ThreadID: id}})),
				"DeleteThread":   errOf(e.s.DeleteThread(e.ctx, id, ckptstore.Writer{ThreadID: id})),
				"Prune":          errOf(e.s.DeleteCheckpoints(e.ctx, id, 1, ckptstore.Writer{ThreadID: id})),
				"Renew":          errOf(e.s.Renew(e.ctx, ckptstore.Writer{ThreadID: id})),
				"Import":         errOf(e.s.Import(e.ctx, ckptstore.ImportBatch{ThreadID: id, Writer: ckptstore.Writer{ThreadID: id}})),
				"Import head id": errOf(e.s.Import(e.ctx, ckptstore.ImportBatch{ThreadID: "thread", SetHead: true, Head: id, Writer: w})),
			} {
				wantErr(t, what+"("+name+")", err, ckptstore.ErrInvalidID)
				if err != nil && len(err.Error()) > 300 {
					t.Errorf("%s(%s): the error takes %d bytes: it must quote only a prefix of the id", what, name, len(err.Error()))
				}
			}
		}
		e.wantThread("thread", "c1", "c1")
		threads, _, err := e.s.Threads(e.ctx, "", 0)
		require.NoError(t, err)
		require.Equal(t, []string{"thread"}, threads, "a refused id is never listed")
	})
}

// invalidIDs are the ids that must fail with ErrInvalidID.
var invalidIDs = []struct{ name, id string }{
	{"empty", ""},
	{"byte ff", "\xff"},
	{"truncated é", "a\xc3"},
	{"UTF-8 surrogate", "\xed\xa0\x80"},
	{"overlong NUL", "\xc0\x80"},
	{"bad after valid", "thread\x80"},
	{"one byte over MaxIDBytes", strings.Repeat("x", driver.MaxIDBytes+1)},
	{"64 KiB", strings.Repeat("x", 64<<10)},
}

func (s *suite) testAppend(t *testing.T) {
	t.Run("Chain", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		e.wantHead("thread", "")
		for i, id := range []string{"a", "b", "c"} {
			parent := e.head("thread")
			c := testkit.Checkpoint("thread", id, parent, float64(i))
			require.NoError(t, e.s.Append(e.ctx, c, parent, w), "Append "+id)
			e.wantHead("thread", id)
			if got := e.get(id); got == nil || got.ParentCheckpointID != parent {
				t.Errorf("Get(%q) = %+v, want parent %q", id, got, parent)
			}
		}
		e.wantList("thread", "a", "b", "c")
	})
	t.Run("StaleExpectedHead", func(t *testing.T) {
		e, w := s.chained(t, "thread", "a", "b")
		e.appendFails("Append on the old head", testkit.Checkpoint("thread", "c", "a", 1000), "a", w, ckptstore.ErrConflict)
		e.appendFails("Append on no head", testkit.Checkpoint("thread", "c", "", 1000), "", w, ckptstore.ErrConflict)
		e.appendFails("Append on an unknown head", testkit.Checkpoint("thread", "c", "zz", 1000), "zz", w, ckptstore.ErrConflict)
		w2 := e.acquire("empty").Writer
		e.appendFails("Append to an empty thread expecting a head", testkit.Checkpoint("empty", "c", "a", 1000), "a", w2, ckptstore.ErrConflict)
	})
	t.Run("ParentMustBeExpectedHead", func(t *testing.T) {
		e, w := s.chained(t, "thread", "a", "b")
		e.appendFails("parent a on head b", testkit.Checkpoint("thread", "c", "a", 1000), "b", w, ckptstore.ErrParentMismatch)
		e.appendFails("no parent on head b", testkit.Checkpoint("thread", "c", "", 1000), "b", w, ckptstore.ErrParentMismatch)
		w2 := e.acquire("empty").Writer
		e.appendFails("parent on an empty thread", testkit.Checkpoint("empty", "c", "b", 1000), "", w2, ckptstore.ErrParentMismatch)
	})
	t.Run("UniqueAcrossThreads", func(t *testing.T) {
		e := s.env(t)
		e.chain("one", nil, "a", "b")
		w := e.acquire("two").Writer
		e.appendFails("id of another thread's head", testkit.Checkpoint("two", "b", "", 1000), "", w, ckptstore.ErrDuplicateID)
		e.appendFails("id of another thread's root", testkit.Checkpoint("two", "a", "", 1000), "", w, ckptstore.ErrDuplicateID)
	})
	t.Run("ReuseAfterDelete", func(t *testing.T) {
		e, w := s.chained(t, "one", "a", "b")
		require.NoError(t, e.s.DeleteHead(e.ctx, "one", "b", w), "DeleteHead b")
		assert.Nil(t, e.get("b"), "Get(b) after DeleteHead")
		w2 := e.acquire("two").Writer
		e.append(testkit.Checkpoint("two", "b", "", 1000), w2) // reused in another thread
		require.NoError(t, e.s.DeleteHead(e.ctx, "two", "b", w2), "DeleteHead b in two")
		e.append(testkit.Checkpoint("one", "b", "", 1000), w) // and in its own
		e.wantThread("one", "b", "a", "b")
		e.wantList("two")
	})
}

func (s *suite) testImmutability(t *testing.T) {
	t.Run("Input", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		c := richCP("thread", "c1", "")
		want := cloneCP(c)
		require.NoError(t, e.s.Append(e.ctx, c, "", w), "Append")
		scribble(c)
		wantCP(t, e.get("c1"), want, "changing the appended checkpoint changed the stored one")
	})
	t.Run("Get", func(t *testing.T) {
		e, want := s.richEnv(t)
		scribble(e.get("c1"))
		wantCP(t, e.get("c1"), want, "changing what Get returned changed the store")
	})
	t.Run("List", func(t *testing.T) {
		e, want := s.richEnv(t)
		l := e.list("thread")
		for _, x := range l {
			scribble(x)
		}
		l[0] = nil
		wantCPs(t, e.list("thread"), []*ckptstore.Checkpoint{want}, "changing what List returned changed the store")
		wantCP(t, e.get("c1"), want, "changing what List returned changed Get")
	})
	t.Run("BlobReferences", func(t *testing.T) {
		e, _ := s.richEnv(t)
		want := e.refs()
		got := e.refs()
		for i := range got {
			got[i].Key += "x"
			got[i].References += 10
		}
		e.wantRefs(want...)
	})
}

// richEnv returns a fresh store holding richCP c1 as the head of "thread",
// and a copy of what was appended.
func (s *suite) richEnv(t *testing.T) (*env, *ckptstore.Checkpoint) {
	e, w := s.leased(t, "thread")
	return e, e.appendKept(richCP("thread", "c1", ""), w)
}

func (s *suite) testOrdering(t *testing.T) {
	// Each case appends ids in the given order at the given createdAt and
	// expects List in the listed order.
	type item struct {
		id string
		at float64
	}
	for _, tc := range []struct {
		name  string
		items []item
		want  []string
	}{
		// é is c3 a9, a is 61, B is 42, 😀 is f0 9f 98 80.
		{"UTF8Bytes", []item{{"é", 5}, {"a", 5}, {"B", 5}, {"😀", 5}}, []string{"B", "a", "é", "😀"}},
		// UTF-16 would put 😀 (d83d) before U+FF21 and U+E000.
		{"NotUTF16", []item{{"😀", 5}, {"\uff21", 5}, {"\ue000", 5}}, []string{"\ue000", "\uff21", "😀"}},
		{"Prefixes", []item{{"ab", 1}, {"a\x00", 1}, {"a", 1}, {"b", 1}, {"A", 1}}, []string{"A", "a", "a\x00", "ab", "b"}},
		{"CreatedAtFirst", []item{{"a", 3}, {"b", 2}, {"c", 1}}, []string{"c", "b", "a"}},
		{"NegativeAndFractional", []item{
			{"p", 0.5}, {"q", -1.5}, {"r", 0.25}, {"s", -1e300}, {"t", 1e300}, {"u", -0.25}, {"v", 5e-324}, {"w", 0},
		}, []string{"s", "q", "u", "w", "v", "r", "p", "t"}},
		{"TiesByID", []item{{"z", 1}, {"y", 2}, {"x", 1}, {"w", 2}}, []string{"x", "z", "w", "y"}},
		// -0 and 0 are the same createdAt, so the id decides.
		{"NegativeZeroEqualsZero", []item{{"a", 0}, {"b", math.Copysign(0, -1)}, {"c", 0}, {"d", math.Copysign(0, -1)}}, []string{"a", "b", "c", "d"}},
		{"IDsDoNotMatterAcrossCreatedAt", []item{{"a", 2}, {"b", 1}, {"😀", 0}}, []string{"😀", "b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, w := s.leased(t, "thread")
			for _, it := range tc.items {
				e.append(testkit.Checkpoint("thread", it.id, "", it.at), w)
			}
			e.wantList("thread", tc.want...)
		})
	}
}

func (s *suite) testBlobReferences(t *testing.T) {
	t.Run("DistinctPerCheckpoint", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		e.append(blobCP("thread", "c1", 1000, entries(testkit.File("a", 1, 1), testkit.File("b", 1, 1), testkit.Dir("d"), testkit.File("d/c", 1, 1), testkit.File("e", 2, 5)), testkit.Artifact("x", 1), testkit.Artifact("y", 1)), w)
		e.wantRefs(artifactRef(1, 1), fileRef(1, 1), fileRef(2, 1))
	})
	t.Run("SameHexFileAndArtifact", func(t *testing.T) {
		// A file key and an artifact key with the same digest are two keys.
		e, w := s.leased(t, "thread")
		e.append(blobCP("thread", "c1", 1000, entries(testkit.File("a", 7, 1)), testkit.Artifact("x", 7)), w)
		e.wantRefs(artifactRef(7, 1), fileRef(7, 1))
	})
	t.Run("DirectoriesHaveNone", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		e.append(blobCP("thread", "c1", 1000, entries(testkit.Dir("a"), testkit.Dir("a/b"))), w)
		e.wantRefs()
	})
	t.Run("SharedAcrossCheckpointsAndThreads", func(t *testing.T) {
		e, wt := s.leased(t, "t")
		wu := e.acquire("u").Writer
		e.append(blobCP("t", "c1", 1000, entries(testkit.File("a", 1, 1), testkit.File("b", 2, 1))), wt)
		e.append(blobCP("t", "c2", 1000, entries(testkit.File("a", 1, 1)), testkit.Artifact("x", 3)), wt)
		e.append(blobCP("u", "d1", 1000, entries(testkit.File("z", 1, 1), testkit.File("y", 4, 1)), testkit.Artifact("x", 3)), wu)
		e.wantRefs(artifactRef(3, 2), fileRef(1, 3), fileRef(2, 1), fileRef(4, 1))

		// Counts fall with each delete, and a key at 0 is forgotten.
		require.NoError(t, e.s.DeleteHead(e.ctx, "t", "c2", wt), "DeleteHead c2")
		e.wantRefs(artifactRef(3, 1), fileRef(1, 2), fileRef(2, 1), fileRef(4, 1))
		require.NoError(t, e.s.DeleteHead(e.ctx, "u", "d1", wu), "DeleteHead d1")
		e.wantRefs(fileRef(1, 1), fileRef(2, 1))
		require.NoError(t, e.s.DeleteHead(e.ctx, "t", "c1", wt), "DeleteHead c1")
		e.wantRefs()

		// A forgotten key counts from 1 again.
		e.append(blobCP("t", "c3", 1000, entries(testkit.File("a", 1, 1))), wt)
		e.wantRefs(fileRef(1, 1))
	})
	t.Run("SortedByBytes", func(t *testing.T) {
		e, w := s.leased(t, "thread")
		c := testkit.Checkpoint("thread", "c1", "", 1000)
		for i, n := range []int{0xff, 0x0a, 0x9f, 0xa0, 1, 0x10} {
			c.Files = append(c.Files, testkit.File("f"+string(rune('a'+i)), n, 1))
			c.Artifacts = append(c.Artifacts, testkit.Artifact("x"+string(rune('a'+i)), n))
		}
		e.append(c, w)
		got := e.refs()
		for i := 1; i < len(got); i++ {
			if got[i-1].Key >= got[i].Key {
				t.Errorf("BlobReferences not sorted by bytes: %q before %q", got[i-1].Key, got[i].Key)
			}
		}
		e.wantRecount()
	})
}
