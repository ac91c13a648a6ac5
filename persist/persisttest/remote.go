package persisttest

import (
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// Remote puts a server in front of server, the portable store the suite
// built (on the recorder-wrapped driver under test, the suite's bucket and
// clocks and lease timing), and returns a client's Store of it. It is
// called once per case; the server must live until the case ends
// (t.Cleanup).
type Remote func(t *testing.T, server *persist.Store) *persist.Store

// RunRemote runs every group of Run through a remote store: each case
// builds the server-side portable store exactly as Run does, lets remote
// serve it, and runs on the client's store what remote returns, while it
// inspects the server's driver and bucket as Run does. The lock cases are
// the real-time ones (RunRealTimeLocks), since a server's network I/O
// keeps a testing/synctest bubble's time from advancing. Cases that read a
// fault the suite injects in the driver accept it as any non-contract
// error, since only its code crosses the wire.
//
// The groups run in parallel, and so do the lock cases, each case on a
// store of its own: remote must be safe for concurrent use. The Port group
// is left out: dump and load are the driver's (driver.Porter, which
// ckptctl opens from a store URL), never a remote store's.
func RunRemote(t *testing.T, newDriver NewDriver, remote Remote) {
	var groups []group
	for _, g := range suiteGroups(realTimeLockTests) {
		if g.name != "Port" {
			groups = append(groups, g)
		}
	}
	runGroupsOpt(t, remoteDriver(newDriver, remote), groups, true)
}

// RunRemoteGroups is RunRemote of the named groups only (Runs,
// GenerationRuns, Interrupts, Metadata, Artifacts, Blobs, Validation,
// Concurrency, Locks, Model), for a backend whose round trips make the
// whole suite too slow for its CI budget.
func RunRemoteGroups(t *testing.T, newDriver NewDriver, remote Remote, names ...string) {
	var groups []group
	for _, g := range suiteGroups(realTimeLockTests) {
		for _, n := range names {
			if g.name == n {
				groups = append(groups, g)
			}
		}
	}
	if len(groups) != len(names) {
		t.Fatalf("persisttest: unknown group among %v", names)
	}
	runGroupsOpt(t, remoteDriver(newDriver, remote), groups, true)
}

// remoteMarked carries the Remote of a RunRemote through the NewDriver of
// the cases, which the env unwraps.
type remoteMarked struct {
	driver.Driver
	remote Remote
}

func remoteDriver(nd NewDriver, remote Remote) NewDriver {
	return func(t *testing.T, now func() time.Time) driver.Driver {
		return &remoteMarked{Driver: nd(t, now), remote: remote}
	}
}

func unwrapRemote(d driver.Driver) (driver.Driver, Remote) {
	if m, ok := d.(*remoteMarked); ok {
		return m.Driver, m.remote
	}
	return d, nil
}

// serveRemote makes e's store the remote client of its server.
func (e *env) serveRemote(remote Remote) {
	if remote == nil {
		return
	}
	e.s = remote(e.t, e.server)
	e.remote = true
}
