package driver_test

// Benchmarks of the JSON form, the encoding a store persists: a checkpoint of
// 1,000 entries (100 directories of 9 files), about 140 kB.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// benchCheckpoint is a checkpoint of a workspace with n files under n/10
// directories, about the size of a small repository.
func benchCheckpoint(n int) *driver.Checkpoint {
	cp := &driver.Checkpoint{ID: "cp-1", ThreadID: "thread-1", CreatedAt: 1.7e12, Reason: driver.ReasonAutomatic,
		Conversation: json.RawMessage(`[{"role":"user","content":"hello"}]`)}
	for d := range n / 10 {
		cp.Files = append(cp.Files, driver.Entry{Path: fmt.Sprintf("src/pkg%d", d), Kind: driver.KindDir})
		for f := range 9 {
			cp.Files = append(cp.Files, driver.Entry{Path: fmt.Sprintf("src/pkg%d/file%d.go", d, f), Kind: driver.KindFile,
				BlobKey: fmt.Sprintf("sandbox-files/sha256/%064x", d*10+f), Size: int64(100 * f)})
		}
	}
	return cp
}

func BenchmarkUnmarshalCheckpoint(b *testing.B) {
	data, err := benchCheckpoint(1000).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var cp driver.Checkpoint
		if err := json.Unmarshal(data, &cp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalCheckpoint(b *testing.B) {
	cp := benchCheckpoint(1000)
	data, err := cp.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := cp.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// appendBody is the body of an HTTP append of bench/'s 2 KB harness shape:
// 8 entries (3 directories), a 700-byte conversation, a writer.
func appendBody() []byte {
	cp := &driver.Checkpoint{ID: "9fe34aff601e.6", ThreadID: "bench/floor", ParentCheckpointID: "9fe34aff601e.5",
		CreatedAt: 1796193436963, Reason: driver.ReasonAutomatic, SourceRunID: "run-9fe34aff601e.6"}
	for _, d := range []struct {
		dir   string
		files int
		size  int64
	}{{"src", 0, 0}, {"src/d0", 3, 88324}, {"vendor", 2, 1 << 20}} {
		cp.Files = append(cp.Files, driver.Entry{Path: d.dir, Kind: driver.KindDir})
		for i := range d.files {
			cp.Files = append(cp.Files, driver.Entry{Path: fmt.Sprintf("%s/f%d.txt", d.dir, i), Kind: driver.KindFile,
				BlobKey: fmt.Sprintf("sandbox-files/sha256/%064x", len(cp.Files)), Size: d.size})
		}
	}
	cp.Conversation = json.RawMessage(`[{"role":"user","content":"` +
		strings.Repeat("the agent read the file ran the tests and wrote a patch ", 12) + `"}]`)
	b, err := cp.AppendJSON([]byte(`{"checkpoint":`))
	if err != nil {
		panic(err)
	}
	return append(b, `,"expectedHeadId":"9fe34aff601e.5","writer":{"threadId":"bench/floor","ownerToken":"owner-0123456789","fence":1}}`...)
}

// BenchmarkDecodeAppendBody measures what ckptserver's handler does with
// an append's body before the store sees it.
func BenchmarkDecodeAppendBody(b *testing.B) {
	body := appendBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := driver.NewJSONReader(body)
		err := r.Object("", func(name []byte) error {
			switch string(name) {
			case "checkpoint":
				_, err := r.Checkpoint("/checkpoint")
				return err
			case "writer":
				_, _, err := r.Writer("/writer")
				return err
			default:
				return r.Skip()
			}
		})
		if err == nil {
			err = r.End()
		}
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkSaveThreadBody: reading a saveThread body with a 10 KB
// transcript as the handler does, with the transcript checked as it is
// read (one=reader), against the view then ValidateTranscript's second
// scan (two=reader+validate), and against a copy and the second scan
// (copy+validate): the cost the server's one pass saves per request.
func BenchmarkSaveThreadBody(b *testing.B) {
	var msgs strings.Builder
	msgs.WriteString("[")
	for i := range 10 {
		if i > 0 {
			msgs.WriteString(",")
		}
		fmt.Fprintf(&msgs, `{"role":"user","content":%q}`, strings.Repeat("word é ", 140))
	}
	msgs.WriteString("]")
	body := []byte(`{"threadId":"thread-1","messages":` + msgs.String() + `}`)
	read := func(b *testing.B, field func(r *driver.JSONReader) error) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r := driver.NewJSONReader(body)
			err := r.Object("", func(name []byte) error {
				if string(name) == "messages" {
					return field(r)
				}
				return r.Skip()
			})
			r.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("one=reader", func(b *testing.B) {
		read(b, func(r *driver.JSONReader) error { _, _, err := r.Transcript(); return err })
	})
	b.Run("two=reader+validate", func(b *testing.B) {
		read(b, func(r *driver.JSONReader) error {
			v, _, err := r.PaddedView()
			if err == nil {
				err = driver.ValidateTranscript(v)
			}
			return err
		})
	})
	b.Run("copy+validate", func(b *testing.B) {
		read(b, func(r *driver.JSONReader) error {
			v, _, err := r.Padded()
			if err == nil {
				err = driver.ValidateTranscript(v)
			}
			return err
		})
	})
}
