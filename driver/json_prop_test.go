package driver_test

// Property tests of the JSON form: random checkpoints survive an
// encode/decode round trip exactly (createdAt bit for bit, conversation byte
// for byte), and ids written with any mix of escapes decode to the same
// string, while an unpaired surrogate is always rejected.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore/driver"
)

// genFloat draws finite float64s, weighted toward the values that break
// formatting: -0, subnormals, the extremes, and integers past 2^53.
func genFloat() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.Float64(),
		rapid.Map(rapid.Uint64(), math.Float64frombits).Filter(func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }),
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
			math.MaxFloat64, -math.MaxFloat64, 1e21, 1e-7, 0.1, 1 << 53, 1<<53 + 2, 1_700_000_000_000.123}),
		rapid.Map(rapid.Int64(), func(i int64) float64 { return float64(i) }),
	)
}

// genJSONArray draws the text of a JSON array with random whitespace,
// spellings of numbers and escapes, which must survive byte for byte.
func genJSONArray(t *rapid.T) string {
	ws := rapid.SampledFrom([]string{"", "", " ", "\n", "\t", "\r\n  "})
	var value func(depth int) string
	value = func(depth int) string {
		kind := rapid.IntRange(0, 6).Draw(t, "kind")
		if depth > 2 {
			kind %= 4
		}
		switch kind {
		case 0:
			return rapid.SampledFrom([]string{"null", "true", "false"}).Draw(t, "literal")
		case 1:
			return rapid.SampledFrom([]string{"0", "-0", "1.50", "1E2", "-2.5e-3", "123456789012345678901234567890"}).Draw(t, "number")
		case 2:
			b, _ := json.Marshal(rapid.String().Draw(t, "string"))
			return string(b)
		case 3:
			return rapid.SampledFrom([]string{`"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"<&>"`, `"\/"`}).Draw(t, "escaped")
		case 4, 5:
			n := rapid.IntRange(0, 3).Draw(t, "len")
			parts := make([]string, n)
			for i := range parts {
				parts[i] = ws.Draw(t, "ws") + value(depth+1) + ws.Draw(t, "ws")
			}
			return "[" + strings.Join(parts, ",") + ws.Draw(t, "ws") + "]"
		default:
			n := rapid.IntRange(0, 3).Draw(t, "len")
			parts := make([]string, n)
			for i := range parts {
				k, _ := json.Marshal(rapid.StringN(0, 5, -1).Draw(t, "key"))
				parts[i] = ws.Draw(t, "ws") + string(k) + ws.Draw(t, "ws") + ":" + ws.Draw(t, "ws") + value(depth+1)
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	n := rapid.IntRange(0, 4).Draw(t, "messages")
	parts := make([]string, n)
	for i := range parts {
		parts[i] = ws.Draw(t, "ws") + value(1) + ws.Draw(t, "ws")
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func genCheckpoint(t *rapid.T) *driver.Checkpoint {
	str := rapid.String()
	id := rapid.StringN(1, 20, -1)
	optional := rapid.OneOf(rapid.Just(""), str)
	size := rapid.OneOf(rapid.Int64Range(0, driver.MaxSize), rapid.SampledFrom([]int64{0, driver.MaxSize}))
	cp := &driver.Checkpoint{
		ID:                 id.Draw(t, "id"),
		ThreadID:           id.Draw(t, "threadId"),
		ParentCheckpointID: rapid.OneOf(rapid.Just(""), id).Draw(t, "parent"),
		CreatedAt:          genFloat().Draw(t, "createdAt"),
		Reason:             rapid.SampledFrom([]driver.Reason{driver.ReasonAutomatic, driver.ReasonNamed, driver.ReasonForkRoot}).Draw(t, "reason"),
		Label:              optional.Draw(t, "label"),
		SourceRunID:        optional.Draw(t, "sourceRunId"),
	}
	for range rapid.IntRange(0, 5).Draw(t, "files") {
		e := driver.Entry{Path: str.Draw(t, "path"), Kind: driver.KindDir}
		if rapid.Bool().Draw(t, "isFile") {
			e.Kind, e.BlobKey, e.Size = driver.KindFile, str.Draw(t, "blobKey"), size.Draw(t, "size")
		}
		cp.Files = append(cp.Files, e)
	}
	for range rapid.IntRange(0, 3).Draw(t, "artifacts") {
		cp.Artifacts = append(cp.Artifacts, driver.Artifact{
			ArtifactID: str.Draw(t, "artifactId"), Name: str.Draw(t, "name"), MimeType: str.Draw(t, "mimeType"),
			Size: size.Draw(t, "size"), BlobKey: str.Draw(t, "blobKey"), CreatedAt: genFloat().Draw(t, "createdAt"),
		})
	}
	if rapid.Bool().Draw(t, "hasConversation") {
		cp.Conversation = json.RawMessage(genJSONArray(t))
	}
	return cp
}

// sameCheckpoint reports how a and b differ, treating nil and empty slices
// alike and an empty conversation as [], and comparing floats by their bits.
func sameCheckpoint(a, b *driver.Checkpoint) string {
	bits := math.Float64bits
	conv := func(c json.RawMessage) string {
		if len(c) == 0 {
			return "[]"
		}
		return string(c)
	}
	switch {
	case a.ID != b.ID, a.ThreadID != b.ThreadID, a.ParentCheckpointID != b.ParentCheckpointID,
		a.Reason != b.Reason, a.Label != b.Label, a.SourceRunID != b.SourceRunID:
		return fmt.Sprintf("scalar fields: %+v vs %+v", a, b)
	case bits(a.CreatedAt) != bits(b.CreatedAt):
		return fmt.Sprintf("createdAt %v (%#x) vs %v (%#x)", a.CreatedAt, bits(a.CreatedAt), b.CreatedAt, bits(b.CreatedAt))
	case !slices.Equal(a.Files, b.Files):
		return fmt.Sprintf("files %+v vs %+v", a.Files, b.Files)
	case conv(a.Conversation) != conv(b.Conversation):
		return fmt.Sprintf("conversation %q vs %q", a.Conversation, b.Conversation)
	case len(a.Artifacts) != len(b.Artifacts):
		return fmt.Sprintf("artifacts %+v vs %+v", a.Artifacts, b.Artifacts)
	}
	for i := range a.Artifacts {
		x, y := a.Artifacts[i], b.Artifacts[i]
		if bits(x.CreatedAt) != bits(y.CreatedAt) {
			return fmt.Sprintf("artifact %d createdAt %#x vs %#x", i, bits(x.CreatedAt), bits(y.CreatedAt))
		}
		x.CreatedAt, y.CreatedAt = 0, 0
		if x != y {
			return fmt.Sprintf("artifact %d: %+v vs %+v", i, x, y)
		}
	}
	return ""
}

func TestJSONRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cp := genCheckpoint(t)
		data, err := cp.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if !json.Valid(data) {
			t.Fatalf("MarshalJSON wrote invalid JSON: %s", data)
		}
		var back driver.Checkpoint
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if diff := sameCheckpoint(cp, &back); diff != "" {
			t.Fatalf("round trip changed the checkpoint: %s\n%s", diff, data)
		}
		again, err := back.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(data) {
			t.Fatalf("re-encoding differs:\n%s\n%s", data, again)
		}
		// Through encoding/json the bytes change (compacted), the value not.
		viaStd, err := json.Marshal(cp)
		if err != nil {
			t.Fatal(err)
		}
		var back2 driver.Checkpoint
		if err := json.Unmarshal(viaStd, &back2); err != nil {
			t.Fatalf("Unmarshal(json.Marshal output): %v", err)
		}
		back2.Conversation = back.Conversation // compacted: compared above
		if diff := sameCheckpoint(&back, &back2); diff != "" {
			t.Fatalf("json.Marshal round trip differs: %s", diff)
		}
	})
}

// escapeJS writes s as a JSON string literal the way a JavaScript encoder
// might: each UTF-16 code unit raw or \u-escaped, chosen at random.
func escapeJS(t *rapid.T, s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || rapid.Bool().Draw(t, "escape") {
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func TestJSONIDEscapesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringN(1, 12, -1).Draw(t, "id")
		lit := escapeJS(t, id)
		doc := `{"id":` + lit + `,"threadId":"t","createdAt":1,"reason":"named"}`
		var cp driver.Checkpoint
		if err := json.Unmarshal([]byte(doc), &cp); err != nil {
			t.Fatalf("Unmarshal(%s): %v", doc, err)
		}
		if cp.ID != id {
			t.Fatalf("id %s decoded as %q, want %q", lit, cp.ID, id)
		}

		// Splice an unpaired surrogate escape in at a code-unit boundary.
		units := utf16.Encode([]rune(id))
		at := rapid.IntRange(0, len(units)).Draw(t, "at")
		if at > 0 && at < len(units) && utf16.IsSurrogate(rune(units[at-1])) && units[at-1] < 0xDC00 {
			at-- // do not split a pair
		}
		lone := rapid.OneOf(rapid.IntRange(0xD800, 0xDBFF), rapid.IntRange(0xDC00, 0xDFFF)).Draw(t, "lone")
		var b strings.Builder
		b.WriteByte('"')
		for i, u := range units {
			if i == at {
				fmt.Fprintf(&b, `\u%04x`, lone)
			}
			fmt.Fprintf(&b, `\u%04x`, u)
		}
		if at == len(units) {
			fmt.Fprintf(&b, `\u%04x`, lone)
		}
		b.WriteByte('"')
		// A high surrogate spliced just before a low one forms a pair;
		// then the string is well-formed after all.
		bad := slices.Concat(units[:at], []uint16{uint16(lone)}, units[at:])
		wellFormed := pairedSurrogates(bad)
		doc = `{"id":` + b.String() + `,"threadId":"t","createdAt":1,"reason":"named"}`
		err := json.Unmarshal([]byte(doc), &cp)
		if wellFormed {
			if err != nil {
				t.Fatalf("Unmarshal(%s) of a well-formed id: %v", doc, err)
			}
			return
		}
		if driver.Code(err) != "SANDBOX_SNAPSHOT_INVALID_ID" {
			t.Fatalf("Unmarshal(%s) error = %v, want ErrInvalidID", doc, err)
		}
	})
}

// pairedSurrogates reports whether every surrogate in units is half of a
// high-low pair: the definition of well-formed UTF-16.
func pairedSurrogates(units []uint16) bool {
	for i := 0; i < len(units); i++ {
		switch u := units[i]; {
		case 0xD800 <= u && u < 0xDC00:
			if i+1 == len(units) || units[i+1] < 0xDC00 || units[i+1] >= 0xE000 {
				return false
			}
			i++
		case 0xDC00 <= u && u < 0xE000:
			return false
		}
	}
	return true
}
