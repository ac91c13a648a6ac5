package httpstore

// The /v1/check route: the consistency check of the caller's namespace,
// run by the engine's own checkers (driver.Checker) on the namespace's key
// space only, so a tenant sees its own broken invariants and no other
// tenant's. Invariant: a reply lists at most MaxCheckProblems problems and
// counts the rest, whatever the namespace holds.

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/streams"
)

// MaxCheckProblems is the most problems one /v1/check reply lists; it
// counts the others in "more".
const MaxCheckProblems = 1000

func init() {
	routes["check"] = &route{name: "check", serve: (*handler).check}
}

func (h *handler) check(c *call) error {
	ck, ok := c.ns.store.Driver().(driver.Checker)
	if !ok {
		return reqErr(CodeUnsupported, "this server's store has no consistency checker (memstore keeps no keys to check)")
	}
	ps, err := ck.Check(c.ctx)
	if err != nil {
		return err
	}
	pc, err := h.persistChecker(c.ns)
	if err != nil {
		return err
	}
	var pps []driver.Problem
	if pc != nil {
		if pps, err = pc.Check(c.ctx); err != nil {
			return err
		}
	}
	sps, err := h.streamsCheck(c)
	if err != nil {
		return err
	}
	c.out.name("problems")
	c.out.b = append(c.out.b, '[')
	n := 0
	for i, group := range [][]driver.Problem{ps, pps, sps} {
		for _, p := range group {
			if n == MaxCheckProblems {
				break
			}
			if n > 0 {
				c.out.b = append(c.out.b, ',')
			}
			n++
			c.out.b = append(c.out.b, '{')
			c.out.b = driver.AppendJSONString(append(c.out.b, `"store":`...), checkStores[i])
			c.out.b = driver.AppendJSONString(append(c.out.b, `,"key":`...), p.Key)
			c.out.b = driver.AppendJSONString(append(c.out.b, `,"what":`...), p.What)
			c.out.b = append(c.out.b, '}')
		}
	}
	c.out.b = append(c.out.b, ']')
	c.out.int("more", int64(len(ps)+len(pps)+len(sps)-n))
	return nil
}

// checkStores name the three checkers of a /v1/check problem.
var checkStores = [3]string{"checkpoints", "persistence", "streams"}

// streamsCheck runs streams.Check on the namespace's streams, when its
// backend keeps them; a problem's key is the stream's name.
func (h *handler) streamsCheck(c *call) ([]driver.Problem, error) {
	if c.ns.streams == nil {
		return nil, nil
	}
	p, err := h.streamPorter(c.ns)
	if err != nil {
		var re *requestError
		if errors.As(err, &re) && re.code == CodeUnsupported {
			return nil, nil
		}
		return nil, err
	}
	ps, err := streams.Check(c.ctx, p)
	out := make([]driver.Problem, len(ps))
	for i, x := range ps {
		out[i] = driver.Problem{Key: x.Stream, What: x.What}
	}
	return out, err
}

// persistChecker returns the checker of the namespace's persistence
// driver, or nil when it has none (a driver that keeps no keys, a backend
// without persistence).
func (h *handler) persistChecker(ns *namespace) (driver.Checker, error) {
	if _, err := h.persistOf(ns); err != nil {
		var re *requestError
		if errors.As(err, &re) && re.code == CodeUnsupported {
			return nil, nil
		}
		return nil, err
	}
	ns.pmu.Lock()
	defer ns.pmu.Unlock()
	return ns.pcheck, nil
}

// CheckReport is the answer of Client.Check: the broken invariants of the
// namespace's checkpoints, of its persistence records and of its streams, at most
// MaxCheckProblems of them together, and how many more the server found.
type CheckReport struct {
	// Checkpoints are the problems of the checkpoint store's keys.
	Checkpoints []driver.Problem
	// Persistence are the problems of the persistence driver's keys.
	Persistence []driver.Problem
	// Streams are the problems of the namespace's streams (streams.Check),
	// each keyed by the stream's name.
	Streams []driver.Problem
	// More counts the problems left out of the reply.
	More int
}

// Len is every problem the server found, the listed and the left out.
func (r CheckReport) Len() int {
	return len(r.Checkpoints) + len(r.Persistence) + len(r.Streams) + r.More
}

// Check runs the consistency check of the client's namespace on the
// server (/v1/check): the engine's checkers read every key of the
// namespace, and of no other. It is slow on a large namespace and bounded
// by ctx and by the server's write timeout; it is sent once, never
// retried. A server whose store has no checker (memstore) answers
// UNSUPPORTED. A key that is not valid UTF-8 comes back with U+FFFD in
// place of its invalid bytes.
func (c *Client) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	// One attempt: a check that outlived the server's write timeout would
	// only outlive it again, so a lost reply is the caller's to retry.
	_, err := c.c.send(ctx, "check", []byte("{}"), "", func(r *driver.JSONReader, name []byte) error {
		switch string(name) {
		case "problems":
			isArray, err := r.Array("/problems", func(int) error {
				var p driver.Problem
				var store string
				err := r.Object("/problems/-", func(n []byte) (err error) {
					switch string(n) {
					case "store":
						store, _, err = r.String("/problems/-/store", errBadReply)
					case "key":
						p.Key, _, err = r.String("/problems/-/key", errBadReply)
					case "what":
						p.What, _, err = r.String("/problems/-/what", errBadReply)
					default:
						err = r.Skip()
					}
					return err
				})
				if err != nil {
					return err
				}
				switch store {
				case checkStores[0]:
					rep.Checkpoints = append(rep.Checkpoints, p)
				case checkStores[1]:
					rep.Persistence = append(rep.Persistence, p)
				case checkStores[2]:
					rep.Streams = append(rep.Streams, p)
				default:
					return fmt.Errorf("%w: a problem of store %q", errBadReply, store)
				}
				return nil
			})
			if err == nil && !isArray {
				err = fmt.Errorf("%w: problems is not an array", errBadReply)
			}
			return err
		case "more":
			n, _, err := r.Int("/more")
			rep.More = int(n)
			return err
		}
		return r.Skip()
	})
	if err != nil {
		return CheckReport{}, err
	}
	return rep, nil
}
