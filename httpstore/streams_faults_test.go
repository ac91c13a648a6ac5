package httpstore_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// loseReplies is an http.RoundTripper that, at random, lets an append
// reach the server and then loses its reply: the request was served (and
// its data written), the client gets an error and sends it again.
type loseReplies struct {
	next http.RoundTripper
	rate float64
	lost atomic.Int64

	mu  sync.Mutex
	rnd *rand.Rand
}

func (l *loseReplies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	l.mu.Lock()
	lose := l.rnd.Float64() < l.rate
	l.mu.Unlock()
	if !lose {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	l.lost.Add(1)
	return nil, errors.New("the reply was lost")
}

// TestStreamsFaultsMemkv is the producer fault run (streamstest.Producers)
// on fdbstore over memkv through the HTTP handler: 20 % of the commits fail
// with not_committed or commit_unknown_result (half of the latter applied),
// and 5 % of the append replies are lost after the server answered. Every
// acknowledged append is stored once, at its offset, in seq order; the
// retries of applied appends answer 204.
func TestStreamsFaultsMemkv(t *testing.T) {
	hc, o := serveInProcess(t, "memkv", storeurl.Options{MemkvNotCommittedRate: 0.1, MemkvUnknownResultRate: 0.1})
	lossy := &loseReplies{next: hc.Transport, rate: 0.05, rnd: rand.New(rand.NewPCG(1, 2))}
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
	t.Logf("memkv with commit faults and %d lost replies: %v", lossy.lost.Load(), rep)
	if o.ReadRounds() == r0 {
		t.Fatal("the run did not reach memkv")
	}
	if rep.Duplicates == 0 || lossy.lost.Load() == 0 {
		t.Errorf("no retry answered 204 (%d replies lost): the faults did not bite", lossy.lost.Load())
	}
	if rep.DuplicatesFound != 0 {
		t.Errorf("%d appends stored twice", rep.DuplicatesFound)
	}
}
