package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// rawAppendScript does the reads and writes of appendScript for a
// successful append, without its decisions: the ceiling a Lua-script
// append can reach on the server, measured with redis-benchmark.
const rawAppendScript = `
redis.call('EXISTS', KEYS[7])
redis.call('HMGET', KEYS[1], 'o', 'f', 'x')
redis.call('EXISTS', KEYS[3])
redis.call('HGET', KEYS[1], 'h')
redis.call('HSET', KEYS[3], 't', ARGV[6], 'p', ARGV[8], 'h', ARGV[10], 'b', ARGV[11], 'k', ARGV[12], 'v', ARGV[13], 'l', ARGV[9])
redis.call('ZADD', KEYS[2], 0, ARGV[9])
redis.call('HSET', KEYS[1], 'h', ARGV[5])
redis.call('ZADD', KEYS[6], 0, ARGV[6])
for k in string.gmatch(ARGV[12], '[^\n]+') do
  if redis.call('HINCRBY', KEYS[4], k, 1) == 1 then redis.call('ZADD', KEYS[5], 0, k) end
end
redis.call('SET', KEYS[7], '1', 'PX', ARGV[1])
return {'ok'}
`

// benchCheckpoint returns a checkpoint with a conversation of about
// convBytes bytes, 20 files and one artifact (21 blob keys).
func benchCheckpoint(convBytes int) *ckptstore.Checkpoint {
	var conv bytes.Buffer
	conv.WriteByte('[')
	msg := `{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 40) + `"}`
	for conv.Len()+len(msg)+1 < convBytes {
		if conv.Len() > 1 {
			conv.WriteByte(',')
		}
		conv.WriteString(msg)
	}
	conv.WriteByte(']')
	cp := testkit.Checkpoint("", "", "", 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
	cp.Conversation = conv.Bytes()
	cp.Artifacts = []ckptstore.Artifact{{ArtifactID: "a", Name: "out.txt", MimeType: "text/plain", Size: 10, BlobKey: testkit.ArtifactKey(1)}}
	return cp
}

// BenchmarkAppend measures Store.Append against a real redis-server (1 and
// 16 goroutines, each on its own thread; 2 KB and 50 KB conversations) and,
// on the same server in the same run, redis-benchmark running EVALSHA of
// rawAppendScript with arguments of the same sizes. It reports
// appends/s, raw-evalsha/s, their ratio, and the time of the shared
// validation (driver.ValidateAppend) of one append. Each case starts from an empty
// server; keep -benchtime to a few thousand appends (-benchtime=3000x), as
// every append stays in the server's memory until the next case.
func BenchmarkAppend(b *testing.B) {
	srv := redistest.Start(b)
	benchTool := redistest.Tool(b, "redis-benchmark")
	ctx := context.Background()
	c := srv.Client(b, &redis.Options{PoolSize: 32})
	rawSHA, err := c.ScriptLoad(ctx, rawAppendScript).Result()
	must(b, err)
	for _, g := range []int{1, 16} {
		for _, kb := range []int{2, 50} {
			b.Run(fmt.Sprintf("goroutines=%d/conv=%dKB", g, kb), func(b *testing.B) {
				tmpl := benchCheckpoint(kb << 10)
				s := newStore(b, c, Options{Prefix: "bench"})
				must(b, c.FlushAll(ctx).Err())
				loadScripts(b, c)
				start := time.Now()
				b.ResetTimer()
				benchStoreAppends(b, s, s.p().Append, tmpl, g)
				b.StopTimer()
				storeRate := float64(b.N) / time.Since(start).Seconds()

				must(b, c.FlushAll(ctx).Err())
				rawRate := runRawBenchmark(b, benchTool, srv.Addr, rawSHA, tmpl, g, b.N)

				// The same appends without the shared validation: the
				// store's own share of the gap.
				must(b, c.FlushAll(ctx).Err())
				start = time.Now()
				benchStoreAppends(b, s, unvalidated(s), tmpl, g)
				ownRate := float64(b.N) / time.Since(start).Seconds()
				must(b, c.FlushAll(ctx).Err())

				b.ReportMetric(storeRate, "appends/s")
				b.ReportMetric(rawRate, "raw-evalsha/s")
				b.ReportMetric(storeRate/rawRate, "ratio")
				b.ReportMetric(validateMicros(tmpl), "validate-µs")
				b.ReportMetric(ownRate/rawRate, "unvalidated-ratio")
			})
		}
	}
}

// validateMicros returns the CPU time of driver.ValidateAppend on cp,
// which every store runs before its write (for a 50 KB conversation it is
// mostly json.Valid): part of each append's cost that is not the store's.
func validateMicros(cp *ckptstore.Checkpoint) float64 {
	const n = 200
	c := *cp
	c.ID, c.ThreadID = "x", "t"
	start := time.Now()
	for range n {
		if err := driver.ValidateAppend(&c, "", ckptstore.Writer{ThreadID: "t"}); err != nil {
			panic(err)
		}
	}
	return float64(time.Since(start).Microseconds()) / n
}

// appendFunc is the portable store's Append or unvalidated's.
type appendFunc func(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error

// unvalidated is the driver's Append without an op token: an append
// without the portable store's checks.
func unvalidated(s *Driver) appendFunc {
	return func(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error {
		return s.Append(ctx, cp, expectedHeadID, w, "")
	}
}

// benchStoreAppends appends b.N checkpoints like tmpl with add, from g
// goroutines, each chaining on its own thread of s.
func benchStoreAppends(b *testing.B, s *Driver, add appendFunc, tmpl *ckptstore.Checkpoint, g int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for gi := range g {
		n := b.N / g
		if gi < b.N%g {
			n++
		}
		thread := "bench" + strconv.Itoa(gi)
		l, err := s.p().AcquireWriter(ctx, thread)
		must(b, err)
		w := l.Writer
		wg.Add(1)
		go func() {
			defer wg.Done()
			head := ""
			for i := range n {
				cp := *tmpl
				cp.ID, cp.ThreadID, cp.ParentCheckpointID, cp.CreatedAt = thread+"-"+strconv.Itoa(i), thread, head, float64(i)
				if err := add(ctx, &cp, head, w); err != nil {
					b.Error(err)
					return
				}
				head = cp.ID
			}
		}()
	}
	wg.Wait()
}

// runRawBenchmark runs redis-benchmark: n EVALSHA calls of the raw script
// from g connections, with arguments of the sizes Store.Append sends
// (the body as text of the same length: argv cannot hold NUL bytes), and
// returns its requests per second.
func runRawBenchmark(b testing.TB, tool, addr, sha string, tmpl *ckptstore.Checkpoint, g, n int) float64 {
	host, port, _ := strings.Cut(addr, ":")
	base := "{rawbench}:"
	cp := *tmpl
	cp.ID, cp.ThreadID = "bench0-000000000000", "bench0"
	enc, err := encodeBody(&cp)
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", len(enc))
	header := strings.Repeat("h", len(encodeHeader(&cp)))
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(g), "-n", strconv.Itoa(n), "-r", "100000000", "--csv",
		"EVALSHA", sha, "7",
		base + "t:bench0", base + "l:bench0", base + "c:__rand_int__", base + "refs", base + "refkeys", base + "threads", base + "o:__rand_int__",
		"600000", "1700000000000", "0123456789abcdef0123456789abcdef", "1", "__rand_int__", "bench0", "bench0-prev",
		"bench0-prev", "12345678__rand_int__", header, body, strings.Join(cp.BlobKeys(), "\n"), string(cp.Conversation)}
	out, err := exec.Command(tool, args...).Output()
	if err != nil {
		b.Fatalf("redis-benchmark: %v", err)
	}
	// The CSV's first field is the command line, unescaped; the six
	// latency fields and the rate are the last seven.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fields := strings.Split(lines[len(lines)-1], ",")
	if len(fields) < 8 {
		b.Fatalf("redis-benchmark output ends with %.200q", lines[len(lines)-1])
	}
	rps, err := strconv.ParseFloat(strings.Trim(fields[len(fields)-7], `"`), 64)
	if err != nil {
		b.Fatalf("redis-benchmark rate: %v", err)
	}
	return rps
}
