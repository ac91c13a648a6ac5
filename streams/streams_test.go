package streams_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/streams"
)

func TestOffsets(t *testing.T) {
	prev := ""
	for _, p := range []streams.Pos{0, 1, 9, 10, 99, 1 << 20, 1<<40 + 7, streams.MaxPos} {
		o := p.Offset()
		if len(o) != streams.OffsetLen || o <= prev || o == "-1" || o == "now" || strings.ContainsAny(o, ",&=?/ %") {
			t.Fatalf("offset %q of %d after %q", o, p, prev)
		}
		prev = o
		got, err := streams.ParseOffset(o)
		if err != nil || got.Pos != p || got.Now {
			t.Fatalf("ParseOffset(%q) = %+v, %v", o, got, err)
		}
	}
	if s, err := streams.ParseOffset("-1"); err != nil || s.Pos != 0 || s.Now {
		t.Fatalf("-1: %+v %v", s, err)
	}
	if s, err := streams.ParseOffset("now"); err != nil || !s.Now {
		t.Fatalf("now: %+v %v", s, err)
	}
	for _, bad := range []string{"0", "abc", "0000000000000000_000000000000000a", "0000000000000000,0000000000000001",
		"0000000000000001_0000000000000001", "0000000000000000_99999999999999999", " 0000000000000000_0000000000000000",
		"0000000000000000_9007199254740992"} {
		if _, err := streams.ParseOffset(bad); !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("ParseOffset(%q): %v, want BAD_REQUEST", bad, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		ttl, exp string
		ok       bool
	}{
		{"0", "", true}, {"3600", "", true}, {"", "2030-01-02T03:04:05Z", true}, {"", "2030-01-02T03:04:05+02:00", true},
		{"+1", "", false}, {"01", "", false}, {"1.5", "", false}, {"1e3", "", false}, {"-1", "", false}, {"x", "", false},
		{"", "tomorrow", false}, {"5", "2030-01-02T03:04:05Z", false},
	} {
		var c streams.Config
		err := streams.ParseConfig(&c, tc.ttl, tc.exp)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("ParseConfig(%q, %q) = %v", tc.ttl, tc.exp, err)
		}
	}
	var c streams.Config
	if err := streams.ParseConfig(&c, "60", ""); err != nil || !c.HasTTL || c.TTL != 60 {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestParseProducer(t *testing.T) {
	p, err := streams.ParseProducer("w", "3", "9007199254740991", true, true, true)
	if err != nil || *p != (streams.Producer{ID: "w", Epoch: 3, Seq: 1<<53 - 1}) {
		t.Fatalf("%+v %v", p, err)
	}
	if p, err := streams.ParseProducer("", "", "", false, false, false); p != nil || err != nil {
		t.Fatalf("no headers: %+v %v", p, err)
	}
	for _, tc := range [][3]string{{"", "0", "0"}, {"w", "1abc", "0"}, {"w", "0", "-1"}, {"w", "0", "9007199254740992"}, {"w", "00", "0"}} {
		if _, err := streams.ParseProducer(tc[0], tc[1], tc[2], true, true, true); !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("%q: %v", tc, err)
		}
	}
	if _, err := streams.ParseProducer("w", "0", "", true, true, false); !errors.Is(err, streams.ErrBadRequest) {
		t.Errorf("two of three headers: %v", err)
	}
}

func TestCheckBody(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"event": "created"}`, `[{"event":"created"}]`},
		{`[{"a": 1}, {"b": 2}]`, `[{"a":1},{"b":2}]`},
		{`[[1,2], [3,4]]`, `[[1,2],[3,4]]`},
		{`[[[1,2,3]]]`, `[[[1,2,3]]]`},
		{" \"x\\ny\" \n", `["x\ny"]`},
		{"[{\n\"a\":\n1}]", `[{"a":1}]`},
	} {
		c, err := streams.CheckBody([]byte(tc.in), "application/json; charset=utf-8", false)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := string(streams.AppendJSONArray(nil, []streams.Chunk{*c})); got != tc.want {
			t.Errorf("%q stored as %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `{`, `[1,]`, `1 2`} {
		if _, err := streams.CheckBody([]byte(bad), "application/json", false); !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if c, err := streams.CheckBody([]byte(`[]`), "application/json", true); c != nil || err != nil {
		t.Errorf("[] on create: %v %v", c, err)
	}
	if c, err := streams.CheckBody([]byte("not json"), "text/plain", false); err != nil || string(c.Data) != "not json" || c.Len() != 8 {
		t.Errorf("bytes: %+v %v", c, err)
	}
}

func TestChunkSlice(t *testing.T) {
	c, _ := streams.CheckBody([]byte(`[1,"two",[3],{"f":4}]`), "application/json", false)
	c.Start = 10
	for _, tc := range []struct {
		from, to streams.Pos
		want     string
	}{{10, 14, `[1,"two",[3],{"f":4}]`}, {11, 13, `["two",[3]]`}, {13, 14, `[{"f":4}]`}, {12, 12, `[]`}} {
		s := c.Slice(tc.from, tc.to)
		if got := string(streams.AppendJSONArray(nil, []streams.Chunk{s})); got != tc.want || s.Len() != tc.to-tc.from {
			t.Errorf("Slice(%d, %d) = %s (len %d), want %s", tc.from, tc.to, got, s.Len(), tc.want)
		}
	}
}

func TestForkConfig(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := streams.Config{ContentType: "text/plain", TTL: 60, HasTTL: true}
	exp := streams.Config{ContentType: "text/plain", ExpiresAt: at}
	none := streams.Config{ContentType: "text/plain"}
	for _, tc := range []struct {
		src, req, want streams.Config
	}{
		{none, streams.Config{}, none},
		{none, streams.Config{TTL: 5, HasTTL: true}, streams.Config{ContentType: "text/plain", TTL: 5, HasTTL: true}},
		{ttl, streams.Config{}, ttl},
		{ttl, streams.Config{ExpiresAt: at.Add(time.Hour)}, streams.Config{ContentType: "text/plain", ExpiresAt: at.Add(time.Hour)}},
		{exp, streams.Config{}, exp},
		{exp, streams.Config{TTL: 9, HasTTL: true}, streams.Config{ContentType: "text/plain", TTL: 9, HasTTL: true}},
	} {
		src := streams.Info{Config: tc.src}
		got, err := streams.ForkConfig(&src, &streams.CreateRequest{Config: tc.req})
		if err != nil || !got.Matches(&tc.want) {
			t.Errorf("source %+v, request %+v: %+v %v, want %+v", tc.src, tc.req, got, err, tc.want)
		}
	}
	src := streams.Info{Config: none}
	if _, err := streams.ForkConfig(&src, &streams.CreateRequest{Config: streams.Config{ContentType: "application/json"}}); !errors.Is(err, streams.ErrContentType) {
		t.Errorf("another content type: %v", err)
	}
}

func TestDecideCreate(t *testing.T) {
	src := streams.Info{Config: streams.Config{ContentType: "text/plain"}, Tail: 10}
	runs := 0
	run := func(a streams.Pos) (streams.Pos, error) {
		runs++
		if a != 4 {
			t.Errorf("run(%d), want run(4)", a)
		}
		return 3, nil
	}
	plain := &streams.CreateRequest{}
	cfg, fork, err := streams.DecideCreate(plain, nil, nil, nil)
	if err != nil || fork != nil || cfg.ContentType != streams.DefaultContentType {
		t.Fatalf("plain: %+v %+v %v", cfg, fork, err)
	}
	// The chunk's run is read only for a sub-offset.
	tip := &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "s"}}
	cfg, fork, err = streams.DecideCreate(tip, nil, &src, run)
	if err != nil || runs != 0 || *fork != (streams.Fork{Source: "s", Pos: 10}) || cfg.ContentType != "text/plain" {
		t.Fatalf("fork at the tail: %+v %+v %v, %d runs", cfg, fork, err, runs)
	}
	sub := &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "s", Offset: 4, HasOffset: true, Sub: 3}}
	if _, fork, err = streams.DecideCreate(sub, nil, &src, run); err != nil || runs != 1 || fork.Pos != 7 {
		t.Fatalf("sub-offset 3 of a run of 3: %+v %v, %d runs", fork, err, runs)
	}
	sub.Fork.Sub = 4
	if _, _, err = streams.DecideCreate(sub, nil, &src, run); !errors.Is(err, streams.ErrBadRequest) {
		t.Fatalf("sub-offset past the run: %v", err)
	}
	broken := errors.New("read failed")
	if _, _, err = streams.DecideCreate(sub, nil, &src, func(streams.Pos) (streams.Pos, error) { return 0, broken }); err != broken {
		t.Fatalf("a failed run: %v, want the run's error", err)
	}
	// A live stream of the name: the same request is no error, another is ErrExists.
	old := streams.Info{Config: streams.Config{ContentType: "text/plain"}, Fork: &streams.Fork{Source: "s", Pos: 10}}
	if _, _, err = streams.DecideCreate(tip, &old, &src, run); err != nil {
		t.Fatalf("the same fork again: %v", err)
	}
	if _, _, err = streams.DecideCreate(plain, &old, nil, nil); !errors.Is(err, streams.ErrExists) {
		t.Fatalf("a plain create over a fork: %v", err)
	}
}

func TestLookupErrs(t *testing.T) {
	other := errors.New("io")
	for _, tc := range []struct {
		err, name, source error
	}{
		{nil, nil, nil},
		{streams.ErrNotFound, nil, streams.ErrNotFound},
		{streams.ErrGone, streams.ErrExists, streams.ErrSourceGone},
		{other, other, other},
	} {
		if got := streams.NameLookupErr(tc.err); !errors.Is(got, tc.name) || (tc.name == nil) != (got == nil) {
			t.Errorf("NameLookupErr(%v) = %v, want %v", tc.err, got, tc.name)
		}
		if got := streams.SourceLookupErr(tc.err); !errors.Is(got, tc.source) || (tc.source == nil) != (got == nil) {
			t.Errorf("SourceLookupErr(%v) = %v, want %v", tc.err, got, tc.source)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "a/b", "v1/stream/x y", strings.Repeat("n", streams.MaxNameBytes)} {
		if err := streams.CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "\xff", strings.Repeat("n", streams.MaxNameBytes+1)} {
		if err := streams.CheckName(bad); !errors.Is(err, streams.ErrBadRequest) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := streams.CheckName("__ds/subscriptions/x"); !errors.Is(err, streams.ErrNotFound) {
		t.Errorf("__ds: %v", err)
	}
}
