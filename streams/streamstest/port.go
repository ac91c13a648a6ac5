package streamstest

// The suite of streams.Porter: a dump of one driver loaded into another
// reads back the same, offsets, closure, TTL, forks and producers
// included; a load is idempotent, refuses other content and resumes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/streams"
)

// RunPort runs the export and import suite: dumps of open's drivers
// loaded into peer's and back, and into open's own. Both must return
// drivers that implement streams.Porter. Every case leaves its drivers
// consistent (streams.Check finds nothing), so a caller may check them
// when the case ends.
func RunPort(t *testing.T, open, peer Open) {
	pairs := []struct {
		name     string
		src, dst Open
	}{{"Self", open, open}, {"ToPeer", open, peer}, {"FromPeer", peer, open}}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			src, dst := porter(t, p.src(t)), porter(t, p.dst(t))
			roundTrip(t, src, dst)
		})
	}
	t.Run("Conflict", func(t *testing.T) {
		t.Parallel()
		conflict(t, porter(t, open(t)), porter(t, open(t)))
	})
	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		resume(t, porter(t, open(t)), porter(t, peer(t)))
	})
	t.Run("Check", func(t *testing.T) {
		t.Parallel()
		check(t, porter(t, open(t)), porter(t, peer(t)))
	})
	t.Run("BadRecords", func(t *testing.T) {
		t.Parallel()
		badRecords(t, porter(t, open(t)))
	})
}

// portDriver is a driver with its Porter.
type portDriver interface {
	streams.Driver
	streams.Porter
}

func porter(t *testing.T, d streams.Driver) portDriver {
	t.Helper()
	p, ok := d.(portDriver)
	if !ok {
		t.Fatalf("%T is not a streams.Porter", d)
	}
	return p
}

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// Populate fills d with every kind of stream a dump carries: bytes in
// several appends (one over a data record), JSON with a producer and
// Stream-Seq, a stream closed by a producer, TTL and expiry, a chain of
// forks, a soft-deleted source and one that expired while forked, its
// name reused. Its clock is the suite's (t0 and after).
func Populate(t *testing.T, d streams.Driver) {
	mk := func(name string, req *streams.CreateRequest, now time.Time) {
		t.Helper()
		if _, created, err := d.Create(ctx, name, req, now); err != nil || !created {
			t.Fatalf("create %s: %v %v", name, created, err)
		}
	}
	app := func(name string, req *streams.AppendRequest) streams.AppendResult {
		t.Helper()
		return okApp(t)(d.Append(ctx, name, req, t0))
	}
	text := func(s string) *streams.AppendRequest {
		return &streams.AppendRequest{ContentType: "text/plain", Body: body(t, s, "text/plain")}
	}
	// Bytes in several appends, one larger than a data record and than
	// an engine's value.
	create(t, d, "bytes", "text/plain", "hello")
	app("bytes", text(" world"))
	big := bytes.Repeat([]byte("0123456789abcdef"), 12_000) // 192 KB
	app("bytes", &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: big}})
	app("bytes", text("!"))
	// JSON with a producer and Stream-Seq.
	create(t, d, "json", "application/json", `[1,2,3]`)
	j := &streams.AppendRequest{ContentType: "application/json", Body: body(t, `{"a":"b"}`, "application/json"),
		Producer: &streams.Producer{ID: "p1"}, Seq: "a", HasSeq: true}
	app("json", j)
	j2 := &streams.AppendRequest{ContentType: "application/json", Body: body(t, `[4,"five"]`, "application/json"),
		Producer: &streams.Producer{ID: "p1", Seq: 1}}
	app("json", j2)
	// Closed by a producer.
	create(t, d, "closed", "text/plain", "fin")
	app("closed", &streams.AppendRequest{Close: true, Producer: &streams.Producer{ID: "pc", Epoch: 2}})
	// TTL and expiry.
	mk("ttl", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", TTL: 100, HasTTL: true}, Body: body(t, "t", "text/plain")}, t0)
	mk("exp", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", ExpiresAt: at(3600)}}, t0)
	// A chain of forks, each with its own data, one of JSON.
	create(t, d, "src", "text/plain", "abcdef")
	mk("f1", &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "src", Offset: 3, HasOffset: true}}, t0)
	app("f1", text("XY"))
	mk("f2", &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "f1", Offset: 4, HasOffset: true}, Body: body(t, "Z", "text/plain")}, t0)
	mk("jf", &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "json", Offset: 2, HasOffset: true}}, t0)
	// A soft-deleted source that a fork still reads.
	create(t, d, "del", "text/plain", "dd")
	mk("fd", &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "del"}, Body: body(t, "+", "text/plain")}, t0)
	if err := d.Delete(ctx, "del", t0); err != nil {
		t.Fatal(err)
	}
	// A source that expired while a fork reads it, its name reused.
	mk("gone", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", ExpiresAt: at(1)}, Body: body(t, "gg", "text/plain")}, t0)
	mk("fg", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", TTL: 1000, HasTTL: true},
		Fork: &streams.ForkRequest{Source: "gone"}, Body: body(t, "-", "text/plain")}, t0)
	mk("gone", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}, Body: body(t, "new", "text/plain")}, at(2))
	create(t, d, "empty", "text/plain", "")
}

// Named are the streams Populate makes that a client reads.
var Named = []string{"bytes", "json", "closed", "ttl", "exp", "src", "f1", "f2", "jf", "fd", "gone", "fg", "empty"}

// dumpAll returns every record of p's dump.
func dumpAll(t *testing.T, p streams.Porter, after streams.Position) []streams.Record {
	t.Helper()
	var out []streams.Record
	for r, err := range streams.Dump(ctx, p, after) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// loadAll loads recs in batches of 5.
func loadAll(t *testing.T, p streams.Porter, recs []streams.Record) int {
	t.Helper()
	n := 0
	for b := range slices.Chunk(recs, 5) {
		k, err := streams.Load(ctx, p, b)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// normal is a dump by stream name: each head without its serial, and its
// data whole, whatever the records' boundaries.
func normal(t *testing.T, recs []streams.Record) map[string]string {
	t.Helper()
	heads := map[string]streams.StreamRecord{}
	data := map[string]*streams.Chunk{}
	var order []string
	for _, r := range recs {
		if h := r.Stream; h != nil {
			hh := *h
			hh.Serial = 0
			heads[h.Name] = hh
			order = append(order, h.Name)
			continue
		}
		d := r.Data
		c := data[d.Name]
		if c == nil {
			c = &streams.Chunk{Start: d.Start}
			data[d.Name] = c
		}
		if c.End() != d.Start {
			t.Fatalf("stream %s: data at %d after %d", d.Name, d.Start, c.End())
		}
		if d.Ends != nil {
			if c.Ends == nil {
				c.Ends = []int32{}
			}
			if len(c.Data) > 0 {
				c.Data = append(c.Data, ',')
			}
			off := int32(len(c.Data))
			for _, e := range d.Ends {
				c.Ends = append(c.Ends, e+off)
			}
		}
		c.Data = append(c.Data, d.Data...)
	}
	out := map[string]string{}
	for _, name := range order {
		h := heads[name]
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if c := data[name]; c != nil {
			s += fmt.Sprintf(" data@%d=%q ends=%v", c.Start, c.Data, c.Ends)
		}
		out[name] = s
	}
	return out
}

func sameNormal(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d streams, want %d", what, len(b), len(a))
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: stream %s:\n got  %s\n want %s", what, k, b[k], v)
		}
	}
}

// SameReads checks that every Named stream of a and b reads the same
// from the start and from an offset inside it, with the same state.
func SameReads(t *testing.T, a, b streams.Driver, now time.Time) {
	t.Helper()
	for _, name := range Named {
		ia, erra := a.Head(ctx, name, false, now)
		ib, errb := b.Head(ctx, name, false, now)
		if erra != nil || errb != nil {
			t.Fatalf("head %s: %v / %v", name, erra, errb)
		}
		if ia.Tail != ib.Tail || ia.Closed != ib.Closed || ia.Created != ib.Created || !ia.Matches(&ib.Config) ||
			!ia.Accessed.Equal(ib.Accessed) || (ia.Fork == nil) != (ib.Fork == nil) || ia.Fork != nil && ia.Fork.Pos != ib.Fork.Pos {
			t.Errorf("stream %s: head %+v, want %+v", name, ib, ia)
		}
		for _, from := range []streams.Pos{0, ia.Tail / 2, ia.Tail} {
			ra, _ := readAll(t, a, name, from, 1000)
			rb, _ := readAll(t, b, name, from, 1000)
			if ra != rb {
				t.Errorf("stream %s from %d: reads %.80q, want %.80q", name, from, rb, ra)
			}
		}
	}
	for _, d := range []streams.Driver{a, b} {
		_, err := d.Head(ctx, "del", false, now)
		wantCode(t, err, streams.ErrGone)
	}
}

func roundTrip(t *testing.T, src, dst portDriver) {
	Populate(t, src)
	recs := dumpAll(t, src, streams.Position{})
	if n := loadAll(t, dst, recs); n != len(recs) {
		t.Fatalf("loaded %d records of %d", n, len(recs))
	}
	for _, r := range recs {
		if d := r.Data; d != nil && len(d.Data) > streams.MaxDataRecord {
			t.Fatalf("stream %s: a data record of %d bytes, over MaxDataRecord", d.Name, len(d.Data))
		}
	}
	want := normal(t, recs)
	if len(want) != len(Named)+2 { // del, and gone's nameless first stream
		t.Fatalf("the dump holds %d streams: %v", len(want), want)
	}
	sameNormal(t, "the destination's dump", want, normal(t, dumpAll(t, dst, streams.Position{})))
	// Again: nothing to write.
	if n := loadAll(t, dst, recs); n != 0 {
		t.Fatalf("a second load wrote %d records", n)
	}
	SameReads(t, src, dst, at(3))
	// The producers' state came along: a retry is a duplicate, the next
	// sequence is written; so with a retried producer close.
	retry := &streams.AppendRequest{ContentType: "application/json", Body: body(t, `[4,"five"]`, "application/json"),
		Producer: &streams.Producer{ID: "p1", Seq: 1}}
	for _, d := range []streams.Driver{src, dst} {
		if res := okApp(t)(d.Append(ctx, "json", retry, at(3))); !res.Duplicate {
			t.Fatalf("%T: the producer's retry was written again", d)
		}
		next := *retry
		next.Producer = &streams.Producer{ID: "p1", Seq: 2}
		next.Body = body(t, `6`, "application/json")
		if res := okApp(t)(d.Append(ctx, "json", &next, at(3))); res.Duplicate || res.Next != 7 {
			t.Fatalf("%T: the producer's next append: %+v", d, res)
		}
		res, err := d.Append(ctx, "closed", &streams.AppendRequest{Close: true, Producer: &streams.Producer{ID: "pc", Epoch: 2}}, at(3))
		if err != nil || !res.Duplicate {
			t.Fatalf("%T: a retried close: %+v %v", d, res, err)
		}
		_, err = d.Append(ctx, "json", &streams.AppendRequest{ContentType: "application/json", Body: body(t, `7`, "application/json"), Seq: "a", HasSeq: true}, at(3))
		wantCode(t, err, streams.ErrSeqConflict)
	}
	// TTL and expiry: the same deadlines.
	for _, d := range []streams.Driver{src, dst} {
		_, err := d.Head(ctx, "exp", false, at(3600))
		wantCode(t, err, streams.ErrNotFound)
	}
	// The soft-deleted and the nameless source go with their last fork.
	for _, d := range []portDriver{src, dst} {
		for _, name := range []string{"fd", "fg"} {
			if err := d.Delete(ctx, name, at(4)); err != nil {
				t.Fatal(err)
			}
		}
		if _, found, err := d.PortState(ctx, "del"); err != nil || found {
			t.Fatalf("%T: the deleted source outlived its last fork: %v %v", d, found, err)
		}
		for _, r := range dumpAll(t, d, streams.Position{}) {
			if h := r.Stream; h != nil && strings.HasPrefix(h.Name, streams.NamelessPrefix) {
				t.Fatalf("%T: the nameless source %s outlived its last fork", d, h.Name)
			}
		}
	}
}

func conflict(t *testing.T, src, dst portDriver) {
	Populate(t, src)
	recs := dumpAll(t, src, streams.Position{})
	// Another "bytes" in the destination: refused, left as it was.
	create(t, dst, "bytes", "text/plain", "mine")
	n, err := streams.Load(ctx, dst, recs)
	wantCode(t, err, streams.ErrImportConflict)
	if n != 0 {
		t.Fatalf("wrote %d records before the conflict", n)
	}
	if got, _ := readAll(t, dst, "bytes", 0, 100); got != "mine" {
		t.Fatalf("the conflicting stream reads %q", got)
	}
	// The rest loads around it; a stream that changed after its import
	// is refused by the next load.
	var rest []streams.Record
	for _, r := range recs {
		if r.Stream != nil && r.Stream.Name != "bytes" || r.Data != nil && r.Data.Name != "bytes" {
			rest = append(rest, r)
		}
	}
	loadAll(t, dst, rest)
	appendData(t, dst, "src", "text/plain", "more")
	_, err = streams.Load(ctx, dst, rest)
	wantCode(t, err, streams.ErrImportConflict)
	// Other data under an equal head is refused too.
	for i, r := range rest {
		if d := r.Data; d != nil && d.Name == "f1" {
			forged := *d
			forged.Data = bytes.ToLower(d.Data)
			_, err := streams.Load(ctx, dst, []streams.Record{{Data: &forged}})
			wantCode(t, err, streams.ErrImportConflict)
			break
		}
		if i == len(rest)-1 {
			t.Fatal("no data record of f1")
		}
	}
}

func resume(t *testing.T, src, dst portDriver) {
	Populate(t, src)
	recs := dumpAll(t, src, streams.Position{})
	// Stop inside the data of "bytes" (its second data record).
	k := -1
	for i, r := range recs {
		if d := r.Data; d != nil && d.Name == "bytes" && d.Start > 0 {
			k = i + 1
			break
		}
	}
	if k < 0 {
		t.Fatal("no second data record of bytes")
	}
	loadAll(t, dst, recs[:k])
	// The pending stream reads as open, with what is loaded.
	if info := okInfo(t)(dst.Head(ctx, "bytes", false, t0)); info.Closed || info.Tail != streams.PositionOf(recs[k-1]).Data {
		t.Fatalf("a pending import reads %+v", info)
	}
	// A dump resumed at the last record loaded yields the rest.
	rest := dumpAll(t, src, streams.PositionOf(recs[k-1]))
	if len(rest) != len(recs)-k {
		t.Fatalf("the resumed dump holds %d records, want %d", len(rest), len(recs)-k)
	}
	loadAll(t, dst, rest)
	sameNormal(t, "resumed", normal(t, recs), normal(t, dumpAll(t, dst, streams.Position{})))
	// A cursor round-trips; a forged one is refused.
	p := streams.PositionOf(recs[k-1])
	if q, err := streams.ParsePosition(p.String()); err != nil || q != p {
		t.Fatalf("cursor %q parses to %v %v", p.String(), q, err)
	}
	for _, bad := range []string{"x", "1", "0.0", "1.-1", "1.2.3"} {
		_, err := streams.ParsePosition(bad)
		wantCode(t, err, streams.ErrBadRequest)
	}
}

func badRecords(t *testing.T, d portDriver) {
	head := func(name string) *streams.StreamRecord {
		return &streams.StreamRecord{Name: name, ContentType: "application/json", Tail: 2}
	}
	ttl := int64(-1)
	for i, r := range []streams.Record{
		{},
		{Stream: head(""), Data: &streams.DataRecord{Name: "x"}},
		{Stream: &streams.StreamRecord{Name: "x", Tail: 1}},
		{Stream: &streams.StreamRecord{Name: "x", ContentType: "text/plain", TTL: &ttl}},
		{Stream: &streams.StreamRecord{Name: "x", ContentType: "text/plain", Fork: &streams.ForkRecord{Source: "none", Pos: 0}}},
		{Stream: &streams.StreamRecord{Name: streams.NamelessPrefix + "x", ContentType: "text/plain", Deleted: true}},
		{Stream: &streams.StreamRecord{Name: streams.NamelessPrefix + "7", ContentType: "text/plain"}},
		{Data: &streams.DataRecord{Name: "nohead", Data: []byte("x")}},
	} {
		_, err := streams.Load(ctx, d, []streams.Record{r})
		if !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("bad record %d: %v, want %v", i, err, streams.ErrBadRequest)
		}
	}
	if _, err := streams.Load(ctx, d, []streams.Record{{Stream: head("j")}}); err != nil {
		t.Fatal(err)
	}
	for i, data := range []struct {
		d    string
		ends []int32
	}{{`1,2`, nil}, {`1,2`, []int32{1, 2}}, {`1;2`, []int32{1, 3}}, {`1,{`, []int32{1, 3}}, {`12`, []int32{2, 1}}} {
		_, err := streams.Load(ctx, d, []streams.Record{{Data: &streams.DataRecord{Name: "j", Data: []byte(data.d), Ends: data.ends}}})
		if !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("bad data %d: %v", i, err)
		}
	}
	if _, err := streams.Load(ctx, d, []streams.Record{{Data: &streams.DataRecord{Name: "j", Data: []byte(`1,"a"`), Ends: []int32{1, 5}}}}); err != nil {
		t.Fatal(err)
	}
	if got, info := readAll(t, d, "j", 0, 100); got != `[1,"a"]` || info.Tail != 2 {
		t.Fatalf("j reads %s (%+v)", got, info)
	}
}

// Clock is the suite's clock s seconds after its origin: Populate's
// streams are all alive at Clock(3), and SameReads reads them then.
func Clock(s int) time.Time { return at(s) }

func wantProblems(t *testing.T, p streams.Porter, want ...string) {
	t.Helper()
	ps, err := streams.Check(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range ps {
		got = append(got, x.Stream+": "+x.What)
	}
	if len(got) != len(want) {
		t.Fatalf("check: %q, want %d problems like %q", got, len(want), want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Fatalf("check: problem %d is %q, want %q", i, got[i], want[i])
		}
	}
}

func check(t *testing.T, src, dst portDriver) {
	Populate(t, src)
	wantProblems(t, src)
	recs := dumpAll(t, src, streams.Position{})
	// An import stopped inside "bytes" is reported as pending.
	k := 0
	for i, r := range recs {
		if r.Data != nil && r.Data.Name == "bytes" {
			k = i + 1
			break
		}
	}
	loadAll(t, dst, recs[:k])
	wantProblems(t, dst, "bytes: an import is pending")
	loadAll(t, dst, recs)
	wantProblems(t, dst)
	// A soft-deleted stream that no fork reads is leaked.
	if _, err := streams.Load(ctx, dst, []streams.Record{{Stream: &streams.StreamRecord{Name: streams.NamelessPrefix + "99", ContentType: "text/plain", Deleted: true}}}); err != nil {
		t.Fatal(err)
	}
	wantProblems(t, dst, streams.NamelessPrefix+"99: soft-deleted, and no fork reads it")
	// A fork that reads it makes it kept, not leaked; so the case leaves
	// its drivers as every case does, with nothing for Check to report.
	if _, err := streams.Load(ctx, dst, []streams.Record{{Stream: &streams.StreamRecord{Name: "reads-99", ContentType: "text/plain",
		Fork: &streams.ForkRecord{Source: streams.NamelessPrefix + "99"}}}}); err != nil {
		t.Fatal(err)
	}
	wantProblems(t, dst)
}
