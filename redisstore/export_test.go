package redisstore

import (
	"slices"

	"github.com/redis/go-redis/v9"
)

// PersistenceScripts returns every persistence script, so that a test can
// load them (SCRIPT LOAD) before it makes EVALSHA the first command sent.
func PersistenceScripts() []*redis.Script { return slices.Clone(persistScripts) }

// SetDumpWindow sets how many keys one SCAN pass of Dump keeps and returns
// a func that restores it, so that a small store's dump takes several
// passes. Tests that call it must not run in parallel.
func SetDumpWindow(n int) (restore func()) {
	old := dumpWindow
	dumpWindow = n
	return func() { dumpWindow = old }
}
