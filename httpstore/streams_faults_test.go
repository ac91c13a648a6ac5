package httpstore_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestStreamsFaultsMemkv is the producer fault run (streamstest.Producers)
// on fdbstore over memkv through the HTTP handler: 20 % of the commits fail
// with not_committed or commit_unknown_result (half of the latter applied),
// and 5 % of the append replies are lost after the server answered. Every
// acknowledged append is stored once, at its offset, in seq order; the
// retries of applied appends answer 204.
func TestStreamsFaultsMemkv(t *testing.T) {
	hc, o := serveInProcess(t, "memkv", storeurl.Options{MemkvNotCommittedRate: 0.1, MemkvUnknownResultRate: 0.1})
	lossy := &streamstest.LoseReplies{Next: hc.Transport, Rate: 0.05, Seed: 1}
	r0 := o.ReadRounds()
	run := streamstest.Producers{
		URL: "http://in-process/streams", Client: &http.Client{Transport: lossy},
		Header: http.Header{"Ckpt-Namespace": {"faults"}}, Name: "memkv",
		Streams: 2, PerStream: 4, RetryWait: time.Millisecond,
	}.Start(t)
	if err := run.WaitAcked(1500, time.Minute); err != nil {
		t.Error(err)
	}
	rep := run.Stop()
	rep = run.Check(t, rep)
	t.Logf("memkv with commit faults and %d lost replies: %v", lossy.Lost(), rep)
	if o.ReadRounds() == r0 {
		t.Fatal("the run did not reach memkv")
	}
	if rep.Duplicates == 0 || lossy.Lost() == 0 {
		t.Errorf("no retry answered 204 (%d replies lost): the faults did not bite", lossy.Lost())
	}
	if rep.DuplicatesFound != 0 {
		t.Errorf("%d appends stored twice", rep.DuplicatesFound)
	}
}

// TestStreamsFaultsRedis is the producer fault run on a real redis-server
// behind a proxy that loses 2 % of its replies and 0.5 % of the requests
// (redistest.Proxy), with 5 % of the append replies lost between the
// handler and the client as well: a lost EXEC reply leaves the driver not
// knowing whether its transaction ran, a lost HTTP reply the producer.
func TestStreamsFaultsRedis(t *testing.T) {
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	hc, _ := serveInProcess(t, "redis://"+proxy.Addr+"/0?prefix=faults", storeurl.Options{})
	lossy := &streamstest.LoseReplies{Next: hc.Transport, Rate: 0.05, Seed: 3}
	proxy.SetFaults(4, 0.02, 0.005)
	run := streamstest.Producers{
		URL: "http://in-process/streams", Client: &http.Client{Transport: lossy},
		Header: http.Header{"Ckpt-Namespace": {"faults"}}, Name: "redis",
		Streams: 2, PerStream: 4, RetryWait: time.Millisecond,
	}.Start(t)
	if err := run.WaitAcked(1000, time.Minute); err != nil {
		t.Error(err)
	}
	rep := run.Stop()
	proxy.SetFaults(0, 0, 0)
	rep = run.Check(t, rep)
	t.Logf("redis-server with %d Redis replies and %d requests lost, %d HTTP replies lost: %v",
		proxy.DroppedReplies(), proxy.DroppedRequests(), lossy.Lost(), rep)
	if rep.Duplicates == 0 || proxy.DroppedReplies() == 0 {
		t.Errorf("no retry answered 204 (%d Redis replies lost): the faults did not bite", proxy.DroppedReplies())
	}
	if rep.DuplicatesFound != 0 {
		t.Errorf("%d appends stored twice", rep.DuplicatesFound)
	}
}
