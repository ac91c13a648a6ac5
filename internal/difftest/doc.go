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
// A divergence that is known and not yet fixed is listed by name in the
// test's knownDivergences, with the engine that is wrong and why; the test
// logs it every run (t.Log) rather than skipping it.
package difftest
