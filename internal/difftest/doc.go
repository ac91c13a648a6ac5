// Package difftest holds the cross-engine differential test: one sequence
// of calls, valid and invalid, driven through the portable layers
// (ckptstore.Store and InstanceStore, and the stores of package persist,
// locks included) on every engine of the module — memstore, fdbstore on
// memkv, redisstore on a real redis-server — and on each of them again
// through HTTP (httpstore's handler in the process, called by its Go
// client). Every call must give the same result and the same error (its
// sentinel, its wire code and its message) everywhere.
//
// The package has no code of its own, only the test. It lives apart from
// package conformance because it imports every engine, and every engine's
// tests import conformance: the suite there proves one driver against the
// contract, this test proves the drivers against each other, on the same
// inputs, including the ones the suite never thought of. It opens the
// engines through storeurl (Open, Opened.Namespace, Opened.Persistence),
// so it does not depend on which package holds a driver.
//
// The tests: TestDifferentialScript runs one written sequence (ids at and
// around the limit, numbers at ±2^53, empty, malformed, deep and huge JSON,
// expired writer and lock leases by the stores' test clocks, commit-batch
// errors, paging, fork and import errors, op tokens);
// TestDifferentialRapid runs sequences rapid draws from a fixed seed over
// small pools of ids; TestDifferentialRawHTTP sends raw request bodies
// that the Go client would refuse to build, to reach the server's own
// checks; TestDifferentialNamespaces opens namespaces around the bounds.
// The first divergence is reported as the call, then each engine's
// outcome, the differing ones marked. DIFFTEST_ALL=1 reports every
// divergence of the script, DIFFTEST_TRACE=1 logs every step's outcome,
// DIFFTEST_RANDOM_SEED=1 draws from a random seed.
//
// A divergence that is known and not yet fixed is listed by name in the
// test's knownDivergences, with the engine that is wrong and why; the test
// logs it every run (t.Log) rather than skipping it.
package difftest
