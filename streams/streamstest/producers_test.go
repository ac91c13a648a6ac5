package streamstest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// fakeStreams is the least of the protocol the producer run speaks (PUT,
// POST with producer headers, catch-up GET of JSON streams), with a bug
// to turn on, so that the checker is seen to catch each kind.
type fakeStreams struct {
	bug string // "", "no-dedup", "wrong-offset", "lose-data", "reorder", "bad-page"

	mu   sync.Mutex
	msgs map[string][]json.RawMessage
	last map[string]int64 // stream/producer → last seq
}

func (f *fakeStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := r.URL.Path
	switch r.Method {
	case http.MethodPut:
		if _, ok := f.msgs[name]; !ok {
			f.msgs[name] = []json.RawMessage{}
		}
		w.WriteHeader(http.StatusCreated)
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("Producer-Id")
		seq, _ := strconv.ParseInt(r.Header.Get("Producer-Seq"), 10, 64)
		key := name + "/" + id
		last, ok := f.last[key]
		if !ok {
			last = -1
		}
		w.Header().Set("Producer-Epoch", "0")
		if seq <= last && f.bug != "no-dedup" {
			w.Header().Set("Producer-Seq", strconv.FormatInt(last, 10))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		f.last[key] = seq
		switch {
		case f.bug == "lose-data" && seq == 7:
		case f.bug == "reorder" && seq == 5:
			// Before the producer's seq 4.
			m := f.msgs[name]
			i := len(m) - 1
			for !strings.HasPrefix(string(m[i]), `{"p":"`+id+`"`) {
				i--
			}
			f.msgs[name] = append(m[:i:i], append([]json.RawMessage{body}, m[i:]...)...)
		default:
			f.msgs[name] = append(f.msgs[name], body)
		}
		next := streams.Pos(len(f.msgs[name]))
		if f.bug == "wrong-offset" && seq == 3 {
			next++
		}
		w.Header().Set("Stream-Next-Offset", next.Offset())
		w.Header().Set("Producer-Seq", strconv.FormatInt(seq, 10))
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		m := f.msgs[name]
		next := streams.Pos(len(m))
		if f.bug == "bad-page" {
			next++
		}
		w.Header().Set("Stream-Next-Offset", next.Offset())
		w.Header().Set("Stream-Up-To-Date", "true")
		b, _ := json.Marshal(m)
		_, _ = w.Write(b)
	}
}

// recorder is a testing.TB that keeps the errors Check reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestProducersChecker runs the producer fault run, with lost replies,
// against a server that keeps the protocol's promises (no error) and
// against one that breaks each in turn: the checker must name the breach.
func TestProducersChecker(t *testing.T) {
	for _, tc := range []struct{ bug, want string }{
		{"", ""},
		{"no-dedup", "stored twice"},
		{"wrong-offset", "its 200 acknowledged"},
		{"lose-data", "out of order or a gap"},
		{"reorder", "out of order or a gap"},
		{"bad-page", "offsets not contiguous"},
	} {
		t.Run("bug="+tc.bug, func(t *testing.T) {
			srv := httptest.NewServer(&fakeStreams{bug: tc.bug, msgs: map[string][]json.RawMessage{}, last: map[string]int64{}})
			defer srv.Close()
			lossy := &streamstest.LoseReplies{Next: http.DefaultTransport, Rate: 0.2, Seed: 9}
			run := streamstest.Producers{URL: srv.URL + "/streams", Client: &http.Client{Transport: lossy},
				Name: "c", Streams: 2, PerStream: 3, RetryWait: time.Microsecond}.Start(t)
			if err := run.WaitAcked(200, time.Minute); err != nil {
				t.Fatal(err)
			}
			rep := run.Stop()
			rec := &recorder{TB: t}
			rep = run.Check(rec, rep)
			if lossy.Lost() == 0 || rep.Retries == 0 || rep.Failures["cut"] == 0 {
				t.Fatalf("no reply was lost: %v", rep)
			}
			errs := strings.Join(rec.errs, "\n")
			if tc.want == "" {
				if errs != "" || rep.Duplicates == 0 || rep.DuplicatesFound != 0 || rep.Read != rep.Acked {
					t.Fatalf("a correct server: %v\n%s", rep, errs)
				}
				return
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("the checker did not report %q: %v\n%s", tc.want, rep, errs)
			}
			if tc.bug == "no-dedup" && rep.DuplicatesFound == 0 {
				t.Fatalf("DuplicatesFound = 0 with duplicates stored")
			}
		})
	}
}
