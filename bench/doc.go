// Package bench holds the benchmarks of every ckptstore store: one
// workload, shaped by internal/workload as a sandbox harness shapes it,
// run on memstore, on fdbstore over memkv (with and without a model of a
// real cluster's latency), on redisstore over a real redis-server, and on
// fdbstore over a real FoundationDB cluster (build tag fdb and
// FDB_CLUSTER_FILE).
//
//	go test ./bench -run '^$' -bench . -benchmem
//	make bench      # bench/run.sh: raw output in docs/bench.txt, table in docs/benchmarks.md
//
// Besides ns/op, B/op and allocs/op, benchmarks report appends/s
// (throughput over all writer goroutines), p50-ns and p99-ns (50th and 99th
// percentiles of one operation's latency, from an HDR histogram), and for
// memkv rounds/op (read round trips per operation, what a real cluster's
// latency multiplies). BenchmarkHTTPHop runs the append workload through
// ckptserver's handler and the Go client next to the same store in process:
// the difference is the cost of the HTTP hop.
//
// Every benchmark invocation writes a fresh namespace and clears it
// afterwards, so the benchmarks run again and again on a cluster that
// keeps its data (FoundationDB, a shared redis-server). Each memkv backend
// is likewise one engine per process, and `make benchsmoke` (part of
// `make test`) passes -twice: every family runs twice in one process on
// the same engines, and the run fails if a benchmark errs or a namespace
// is left uncleared.
//
//	go test ./bench -run '^$' -bench . -benchtime 1x -twice
//
// The package has no non-test code but this comment. Beside it,
// bench/benchtable renders the results, and bench/streams is a client
// that benchmarks Durable Streams servers over HTTP, ckptserver's
// /streams/ or any other server of the protocol (docs/streams.md).
package bench
