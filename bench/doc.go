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
// (throughput over all writer goroutines), p99-ns (99th percentile of one
// operation's latency, from an HDR histogram), and for memkv rounds/op (read
// round trips per operation, what a real cluster's latency multiplies).
//
// The package has no non-test code but this comment.
package bench
