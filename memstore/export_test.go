package memstore

// SetDumpPage sets how many records one locked read of Dump takes and
// returns a func that restores it, so that a small store's dump crosses
// pages. Tests that call it must not run in parallel.
func SetDumpPage(n int) (restore func()) {
	old := dumpPage
	dumpPage = n
	return func() { dumpPage = old }
}
