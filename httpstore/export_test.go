package httpstore

import (
	"net/http"

	"github.com/ckptstore/ckptstore/persist"
)

// ServePersistence makes h serve the persistence of every namespace from
// open instead of its backend: the conformance suite builds the server's
// store itself (on its recorder-wrapped driver), and the handler serves it.
func ServePersistence(h http.Handler, open func(name string) (*persist.Store, error)) {
	h.(*handler).persistFor = open
}

// ErrBadReply is the error every malformed reply wraps.
var ErrBadReply = errBadReply
