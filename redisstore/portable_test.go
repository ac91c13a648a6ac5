package redisstore

import "github.com/ckptstore/ckptstore"

// p is the portable store over s, for this package's tests, which call the
// contract's methods and reach into s's keys, options and scripts.
func (s *Driver) p() *ckptstore.Store { return ckptstore.New(s) }
