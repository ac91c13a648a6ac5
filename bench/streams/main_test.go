package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/httpstore"
	_ "github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

func TestTargetFlag(t *testing.T) {
	var ts targets
	for _, s := range []string{"a=http://x/streams/", "b=http://x/s,http://y/s"} {
		if err := ts.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	want := targets{{"a", "http://x/streams", "http://x/streams"}, {"b", "http://x/s", "http://y/s"}}
	if len(ts) != 2 || ts[0] != want[0] || ts[1] != want[1] {
		t.Fatalf("targets %+v, want %+v", ts, want)
	}
	for _, bad := range []string{"", "a", "=http://x", "a="} {
		if err := ts.Set(bad); err == nil {
			t.Errorf("Set(%q) took it", bad)
		}
	}
}

// TestRun runs every measurement, briefly, against two ckptserver handlers
// on one memstore (the live reader on the second) and checks that the
// summary has every figure and the ratio column.
func TestRun(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	opts := httpstore.HandlerOptions{Dev: true}
	a := httptest.NewServer(httpstore.NewHandler(o, opts))
	t.Cleanup(a.Close)
	b := httptest.NewServer(httpstore.NewHandler(o, opts))
	t.Cleanup(b.Close)
	c := &config{
		rounds: 2, duration: 50 * time.Millisecond, producers: []int{1, 4}, size: 200,
		catchupBytes: 200_000, catchupReads: 1, liveSamples: 5,
		measures: map[string]bool{"append": true, "catchup": true, "live": true},
		baseline: "one",
	}
	for _, s := range []string{"one=" + a.URL + "/streams", "two=" + a.URL + "/streams," + b.URL + "/streams"} {
		if err := c.targets.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), c, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"BenchmarkStreams/target=two/append/producers=4\t1\t",
		"BenchmarkStreams/target=one/catchup\t1\t",
		"BenchmarkStreams/target=two/live/long-poll\t1\t",
		"ratio to one",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the output:\n%s", want, text)
		}
	}
	// 2 rounds × 2 targets × 4 measurements.
	if n := strings.Count(text, "BenchmarkStreams/"); n != 16 {
		t.Errorf("%d measurement lines, want 16:\n%s", n, text)
	}
}
