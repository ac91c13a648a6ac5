//go:build race

package httpstore_test

// raceEnabled: the race detector makes every HTTP call several times
// slower, so the longest suites run through HTTP on fewer backends.
const raceEnabled = true
