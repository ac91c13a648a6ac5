package redisstore

import (
	"slices"

	"github.com/redis/go-redis/v9"
)

// PersistenceScripts returns every persistence script, so that a test can
// load them (SCRIPT LOAD) before it makes EVALSHA the first command sent.
func PersistenceScripts() []*redis.Script { return slices.Clone(persistScripts) }
