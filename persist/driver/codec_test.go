package driver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// The records as encoding/json sees them from their struct tags, before
// the codec: types defined on the records' own, so the same fields and
// tags, without the methods. The golden tests hold the codec to their
// bytes, and so the tags and the codec to each other.
type (
	oldRun   driver.RunRecord
	oldGen   driver.GenerationRunRecord
	oldInt   driver.InterruptRecord
	oldEntry driver.InterruptCommitEntry
	oldArt   driver.ArtifactRecord
	oldBlob  driver.BlobRecord
	oldMeta  driver.MetadataEntry
)

// old returns a method-free copy of a record, which its caller may change
// without changing the record.
func old(v any) any {
	switch r := v.(type) {
	case *driver.RunRecord:
		o := oldRun(*r)
		return &o
	case *driver.GenerationRunRecord:
		o := oldGen(*r)
		return &o
	case *driver.InterruptRecord:
		o := oldInt(*r)
		return &o
	case *driver.InterruptCommitEntry:
		o := oldEntry(*r)
		return &o
	case *driver.ArtifactRecord:
		o := oldArt(*r)
		return &o
	case *driver.BlobRecord:
		o := oldBlob(*r)
		return &o
	case *driver.MetadataEntry:
		o := oldMeta(*r)
		return &o
	}
	panic(fmt.Sprintf("old: no method-free copy of %T", v))
}

// encoder is encoding/json's output without HTML escaping: what the wire
// codec wrote.
func marshalNoHTML(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type appender interface{ AppendJSON([]byte) []byte }

// genRecords draws one record of every kind. Raw values are compact when
// compact is set (encoding/json compacts them), else with whitespace.
func genRecords(t *rapid.T, compact bool) []appender {
	str := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"", "a<b>&c", "\u2028\u2029", "tab\t\"q\"\\", "é✓😀", "\x01\x1f"}))
	id := rapid.StringMatching(`[a-z<&>é]{1,8}`)
	num := rapid.Int64Range(-(1<<53 - 1), 1<<53-1)
	optStr := func(label string) *string {
		if rapid.Bool().Draw(t, label+"?") {
			s := str.Draw(t, label)
			return &s
		}
		return nil
	}
	optInt := func(label string) *int64 {
		if rapid.Bool().Draw(t, label+"?") {
			n := num.Draw(t, label)
			return &n
		}
		return nil
	}
	raws := []string{`{}`, `[]`, `1`, `"s<&>"`, `{"totalTokens":12,"x":[1,2.5e3,true]}`, `"\u2028"`}
	if !compact {
		raws = append(raws, ` { "a" : 1 } `, "\n[ 1 ,\t2 ]\n", ` "<&>" `)
	}
	// null is a value only where the contract lets it be one (a response,
	// a result, a metadata value); elsewhere it reads as absent.
	canBeNull := map[string]bool{"response": true, "result": true, "value": true}
	raw := func(label string, required bool) json.RawMessage {
		if required || rapid.Bool().Draw(t, label+"?") {
			if canBeNull[label] && rapid.Bool().Draw(t, label+" null") {
				return json.RawMessage("null")
			}
			return json.RawMessage(rapid.SampledFrom(raws).Draw(t, label))
		}
		return nil
	}
	runErr := func() *driver.RunError {
		if rapid.Bool().Draw(t, "error?") {
			return &driver.RunError{Message: str.Draw(t, "message"), Code: optStr("code")}
		}
		return nil
	}
	var cancel *bool
	if rapid.Bool().Draw(t, "cancel?") {
		b := rapid.Bool().Draw(t, "cancel")
		cancel = &b
	}
	var meta map[string]string
	if rapid.Bool().Draw(t, "meta?") {
		// Not empty: the codec writes an empty map as {}, which
		// encoding/json left out (TestCodecEmptyMap).
		meta = rapid.MapOfN(str, str, 1, 4).Draw(t, "meta")
	}
	return []appender{
		&driver.RunRecord{RunID: id.Draw(t, "runId"), ThreadID: id.Draw(t, "threadId"), Status: driver.RunStatus(str.Draw(t, "status")),
			StartedAt: num.Draw(t, "startedAt"), FinishedAt: optInt("finishedAt"), Error: runErr(), Usage: raw("usage", false),
			SandboxKey: optStr("sandboxKey"), DetachedSince: optInt("detachedSince"), CancelRequested: cancel, DriverEpoch: optInt("driverEpoch")},
		&driver.GenerationRunRecord{RunID: id.Draw(t, "runId"), ThreadID: id.Draw(t, "threadId"), Activity: str.Draw(t, "activity"),
			Provider: str.Draw(t, "provider"), Model: str.Draw(t, "model"), Status: driver.RunCompleted, StartedAt: num.Draw(t, "startedAt"),
			FinishedAt: optInt("finishedAt"), Error: runErr(), Result: raw("result", false), Artifacts: raw("artifacts", false), Usage: raw("usage", false)},
		&driver.InterruptRecord{InterruptID: id.Draw(t, "interruptId"), RunID: id.Draw(t, "runId"), ThreadID: id.Draw(t, "threadId"),
			Status: driver.InterruptStatus(str.Draw(t, "status")), RequestedAt: num.Draw(t, "requestedAt"), ResolvedAt: optInt("resolvedAt"),
			Payload: raw("payload", true), Response: raw("response", false)},
		&driver.InterruptCommitEntry{InterruptID: id.Draw(t, "interruptId"), Status: driver.InterruptResolved, Response: raw("response", false)},
		&driver.ArtifactRecord{ArtifactID: id.Draw(t, "artifactId"), RunID: id.Draw(t, "runId"), ThreadID: id.Draw(t, "threadId"),
			BlobKey: optStr("blobKey"), Name: str.Draw(t, "name"), MimeType: str.Draw(t, "mimeType"), Size: num.Draw(t, "size"),
			SourceURL: optStr("sourceUrl"), CreatedAt: num.Draw(t, "createdAt")},
		&driver.BlobRecord{Key: id.Draw(t, "key"), Size: num.Draw(t, "size"), ETag: str.Draw(t, "etag"), ContentType: optStr("contentType"),
			CustomMetadata: meta, CreatedAt: num.Draw(t, "createdAt"), UpdatedAt: num.Draw(t, "updatedAt")},
		&driver.MetadataEntry{Namespace: id.Draw(t, "namespace"), Key: id.Draw(t, "key"), Value: raw("value", true)},
	}
}

// TestCodecGolden: for every record kind, the codec writes the bytes
// encoding/json wrote from the struct tags: AppendJSON those of an encoder
// without HTML escaping (the wire's), json.Marshal those of json.Marshal
// (the stored forms').
func TestCodecGolden(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for _, rec := range genRecords(t, true) {
			o := old(rec)
			got := rec.AppendJSON(nil)
			want := marshalNoHTML(&testing.T{}, o)
			if !bytes.Equal(got, want) {
				t.Fatalf("%T AppendJSON\n got %s\nwant %s", rec, got, want)
			}
			got, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			want, _ = json.Marshal(o)
			if !bytes.Equal(got, want) {
				t.Fatalf("%T json.Marshal\n got %s\nwant %s", rec, got, want)
			}
		}
	})
}

// TestCodecRoundTrip: decode(encode(x)) == x for every record kind, raw
// values with their whitespace, and encode(decode(b)) == b; Members and
// SetMember rebuild the record member by member.
func TestCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for _, rec := range genRecords(t, false) {
			b := rec.AppendJSON(nil)
			back := reflect.New(reflect.TypeOf(rec).Elem()).Interface()
			if err := json.Unmarshal(b, back); err != nil {
				t.Fatalf("%T %s: %v", rec, b, err)
			}
			if !reflect.DeepEqual(rec, back) {
				t.Fatalf("%T round trip of %s\n got %#v\nwant %#v", rec, b, back, rec)
			}
			if again := back.(appender).AppendJSON(nil); !bytes.Equal(again, b) {
				t.Fatalf("%T re-encoding\n got %s\nwant %s", rec, again, b)
			}
			type membered interface {
				Members(func(string, []byte, bool))
				SetMember(string, []byte) error
			}
			m, ok := rec.(membered)
			if !ok {
				continue
			}
			rebuilt := reflect.New(reflect.TypeOf(rec).Elem()).Interface().(membered)
			m.Members(func(name string, v []byte, _ bool) {
				if err := rebuilt.SetMember(name, v); err != nil {
					t.Fatalf("%T SetMember(%s, %s): %v", rec, name, v, err)
				}
			})
			if !reflect.DeepEqual(rec, rebuilt) {
				t.Fatalf("%T member by member\n got %#v\nwant %#v", rec, rebuilt, rec)
			}
		}
	})
}

// TestCodecEmptyMap: an empty customMetadata is {}, as the wire wrote it
// (encoding/json left it out), and reads back as an empty map, not nil.
func TestCodecEmptyMap(t *testing.T) {
	r := driver.BlobRecord{Key: "k", CustomMetadata: map[string]string{}}
	b := r.AppendJSON(nil)
	require.Equal(t, `{"key":"k","size":0,"etag":"","customMetadata":{},"createdAt":0,"updatedAt":0}`, string(b))
	var back driver.BlobRecord
	require.NoError(t, back.UnmarshalJSON(b))
	require.NotNil(t, back.CustomMetadata)
	require.Empty(t, back.CustomMetadata)
}

// TestCodecPatchGolden: a patch's JSON is the old one (typed values as
// json.Marshal wrote them, raw values as they are, a cleared member as
// null), HTML escaping aside, and reads back as itself.
func TestCodecPatchGolden(t *testing.T) {
	msg, code := "a<b", "c&d"
	p := driver.RunPatch{Status: driver.Set(driver.RunFailed), FinishedAt: driver.Set[int64](1<<53 - 1),
		Error: driver.Set(driver.RunError{Message: msg, Code: &code}), Usage: driver.Set(json.RawMessage(` {"t": 1} `)),
		SandboxKey: driver.Clear[string](), CancelRequested: driver.Set(false), DriverEpoch: driver.Set[int64](-3)}
	want := `{"status":"failed","finishedAt":9007199254740991,"error":{"message":"a<b","code":"c&d"},"usage": {"t": 1} ,"sandboxKey":null,"cancelRequested":false,"driverEpoch":-3}`
	got, err := p.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	var back driver.RunPatch
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, p, back)
	var names []string
	p.Members(func(name string, v []byte) {
		names = append(names, name)
		if name == "sandboxKey" {
			require.Nil(t, v, "a cleared member has no value")
		}
	})
	require.Equal(t, []string{"status", "finishedAt", "error", "usage", "sandboxKey", "cancelRequested", "driverEpoch"}, names)

	g := driver.GenerationRunPatch{Result: driver.Set(json.RawMessage(`[1]`)), Error: driver.Clear[driver.RunError]()}
	got, _ = g.MarshalJSON()
	require.Equal(t, `{"error":null,"result":[1]}`, string(got))
	var gb driver.GenerationRunPatch
	require.NoError(t, json.Unmarshal(got, &gb))
	require.Equal(t, g, gb)
}

// TestCodecExportGolden: Record.MarshalJSON keeps the bytes the export
// wrote before the codec: the typed members as json.Marshal wrote them
// (HTML-escaped), then the raw values byte for byte; a blob row's object
// last.
func TestCodecExportGolden(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t, false)
		run, gen, in, art, blob, meta := recs[0].(*driver.RunRecord), recs[1].(*driver.GenerationRunRecord),
			recs[2].(*driver.InterruptRecord), recs[4].(*driver.ArtifactRecord), recs[5].(*driver.BlobRecord), recs[6].(*driver.MetadataEntry)
		run.Status, in.Status = driver.RunRunning, driver.InterruptPending
		splice := func(typed any, raws ...string) string {
			b, err := json.Marshal(typed)
			if err != nil {
				t.Fatal(err)
			}
			s := strings.TrimSuffix(string(b), "}")
			for i := 0; i < len(raws); i += 2 {
				if raws[i+1] != "" {
					if !strings.HasSuffix(s, "{") {
						s += ","
					}
					s += `"` + raws[i] + `":` + raws[i+1]
				}
			}
			return s + "}"
		}
		or, og, oi := old(run).(*oldRun), old(gen).(*oldGen), old(in).(*oldInt)
		usage, result, artifacts, gusage, payload, response := or.Usage, og.Result, og.Artifacts, og.Usage, oi.Payload, oi.Response
		or.Usage, og.Result, og.Artifacts, og.Usage, oi.Payload, oi.Response = nil, nil, nil, nil, nil, nil
		ob := old(blob).(*oldBlob)
		om := old(meta).(*oldMeta)
		cases := []struct {
			rec  driver.Record
			want string
		}{
			{driver.Record{Kind: driver.KindRun, Run: run}, splice(or, "usage", string(usage))},
			{driver.Record{Kind: driver.KindGenerationRun, GenerationRun: gen}, splice(og, "result", string(result), "artifacts", string(artifacts), "usage", string(gusage))},
			{driver.Record{Kind: driver.KindInterrupt, Interrupt: in}, splice(struct {
				*oldInt
				Payload json.RawMessage `json:"payload,omitempty"`
			}{oldInt: oi}, "payload", string(payload), "response", string(response))},
			{driver.Record{Kind: driver.KindArtifact, Artifact: art}, splice(old(art))},
			{driver.Record{Kind: driver.KindBlob, Blob: &driver.BlobMeta{BlobRecord: *blob, Object: "o<&>"}}, splice(struct {
				*oldBlob
				Object string `json:"object"`
			}{ob, "o<&>"})},
			{driver.Record{Kind: driver.KindMetadata, Metadata: meta}, splice(struct {
				Namespace string `json:"namespace"`
				Key       string `json:"key"`
			}{om.Namespace, om.Key}, "value", string(om.Value))},
		}
		for _, c := range cases {
			got, err := c.rec.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want := `{"persist":"` + string(c.rec.Kind) + `","record":` + c.want + `}`
			if string(got) != want {
				t.Fatalf("%s\n got %s\nwant %s", c.rec.Kind, got, want)
			}
			var back driver.Record
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if !driver.Equal(c.rec, back) {
				t.Fatalf("%s does not read back as itself", got)
			}
		}
	})
}

// TestCodecFaults: a fault names its member, wraps ErrInvalidID for an id
// and ErrInvalidEntry otherwise, prefers an id fault, and never echoes an
// unbounded input.
func TestCodecFaults(t *testing.T) {
	long := strings.Repeat("9", 100_000)
	for _, c := range []struct {
		in    string
		err   error
		words string
	}{
		{`{"runId":5}`, driver.ErrInvalidID, "/runId"},
		{"{\"runId\":\"a\xffb\"}", driver.ErrInvalidID, "/runId"},
		{`{"runId":"\ud800"}`, driver.ErrInvalidID, "/runId"},
		{`{"startedAt":"x","threadId":7}`, driver.ErrInvalidID, "/threadId"},
		{`{"startedAt":1.5}`, driver.ErrInvalidEntry, "/startedAt"},
		{`{"startedAt":` + long + `}`, driver.ErrInvalidEntry, "/startedAt"},
		{`{"cancelRequested":"yes"}`, driver.ErrInvalidEntry, "/cancelRequested"},
		{`{"error":{"message":1}}`, driver.ErrInvalidEntry, "/error/message"},
		{`{"error":{"nope":1}}`, driver.ErrInvalidEntry, "nope"},
		{`{"` + strings.Repeat("x", 100_000) + `":1}`, driver.ErrInvalidEntry, "has no member"},
		{`{"runId":"r"`, driver.ErrInvalidEntry, ""},
		{`[]`, driver.ErrInvalidEntry, "not a JSON object"},
		{`{"runId":"r"} {}`, driver.ErrInvalidEntry, ""},
	} {
		var r driver.RunRecord
		r.RunID = "kept"
		err := r.UnmarshalJSON([]byte(c.in))
		require.ErrorIs(t, err, c.err, "%.80s", c.in)
		require.Contains(t, err.Error(), c.words, "%.80s", c.in)
		require.Less(t, len(err.Error()), 400, "%.80s: a bounded message", c.in)
		require.Equal(t, "kept", r.RunID, "a failed decode changes nothing")
	}
	var p driver.RunPatch
	require.ErrorIs(t, json.Unmarshal([]byte(`{"nope":1}`), &p), driver.ErrInvalidEntry)
	require.ErrorIs(t, json.Unmarshal([]byte(`null`), &p), driver.ErrInvalidEntry)
	var b driver.BlobRecord
	require.ErrorIs(t, b.SetMember("size", []byte(`1,"key":"x"`)), driver.ErrInvalidEntry, "one member, no more")
	require.ErrorIs(t, b.SetMember("nope", []byte(`1`)), driver.ErrInvalidEntry)
	require.Empty(t, b.Key)
	var rec driver.Record
	err := json.Unmarshal([]byte(`{"persist":"run","record":{"runId":"r","threadId":"t","status":"running","startedAt":1,"x":1}}`), &rec)
	require.ErrorIs(t, err, driver.ErrInvalidEntry)
	require.True(t, errors.Is(json.Unmarshal([]byte(`{"persist":"lock","record":{}}`), &rec), driver.ErrInvalidEntry))
}

// FuzzRecordDecode: whatever decodes re-encodes to bytes that decode to
// the same record and encode the same (encode∘decode is stable); whatever
// fails, fails with a contract sentinel and a bounded message.
func FuzzRecordDecode(f *testing.F) {
	for _, s := range []string{
		`{"runId":"r","threadId":"t","status":"running","startedAt":1,"usage": {"a" : 1} }`,
		`{"interruptId":"i","runId":"r","threadId":"t","status":"pending","requestedAt":1,"payload":{},"response":null}`,
		`{"key":"k","size":1,"etag":"e","customMetadata":{"b":"1","a":"\u2028"},"createdAt":1,"updatedAt":2}`,
		`{"status":null,"usage":[1, 2]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, mk := range []func() any{
			func() any { return new(driver.RunRecord) }, func() any { return new(driver.GenerationRunRecord) },
			func() any { return new(driver.InterruptRecord) }, func() any { return new(driver.ArtifactRecord) },
			func() any { return new(driver.BlobRecord) }, func() any { return new(driver.RunPatch) },
		} {
			v := mk()
			err := json.Unmarshal(b, v)
			if err != nil {
				var se *json.SyntaxError
				if errors.As(err, &se) {
					continue // encoding/json's own check of the input
				}
				if driver.Code(err) == "" || len(err.Error()) > 400 {
					t.Fatalf("%T: %v", v, err)
				}
				continue
			}
			enc1, err := json.Marshal(v)
			require.NoError(t, err)
			w := mk()
			require.NoError(t, json.Unmarshal(enc1, w), "%s", enc1)
			enc2, err := json.Marshal(w)
			require.NoError(t, err)
			require.Equal(t, string(enc1), string(enc2))
		}
	})
}

// TestTextSize: a text's size is what encoding/json writes of it, HTML
// escaping included, which is how stored records write texts; a byte
// takes at most six.
func TestTextSize(t *testing.T) {
	for s, want := range map[string]int{"": 2, "a": 3, "<": 8, "&>": 14, "\x01": 8, `"`: 4, `\`: 4, "\n": 4, "é": 4} {
		require.Equal(t, want, driver.TextSize(s), "%q", s)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.RuneFrom([]rune("a<>&\"\\\x00\x1f\n\u2028é😀"))).Draw(t, "s")
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, len(want), driver.TextSize(s), "%q", s)
		require.LessOrEqual(t, driver.TextSize(s), 6*len(s)+2)
	})
}
