// Package workload is the harness workload shared by cmd/loadgen and the
// benchmarks in bench: it opens a store from a spec string, makes
// checkpoints shaped like a sandbox harness's, records latencies in HDR
// histograms and checks a store's invariants after a run.
//
// Invariants:
//
//   - A backend is one constructor function (open*) selected by the spec's
//     scheme in Open; adding a store means adding one such function and one
//     case, nothing else.
//   - Every blob key a Gen makes starts its digest with the Gen's tag (8 hex
//     digits), so a run can tell its own keys from anyone else's in a shared
//     store and recount them exactly (see CheckRefs).
//   - A Gen never reuses a checkpoint id or a fresh blob key: ids carry the
//     Gen's random process tag and a counter; fresh keys carry 224 random
//     bits.
//   - Every checkpoint a Gen makes passes driver.Validate, so a run's
//     errors come from the store, not from the workload.
package workload
