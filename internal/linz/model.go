// Package linz checks that a store's concurrent histories are linearizable
// against a sequential model of the contract, with
// github.com/anishathalye/porcupine.
//
// Run drives a store from many goroutines — writers that acquire, append,
// delete heads, renew, release and read, with short leases on a moving
// test clock so that takeovers race stale writers — records every call
// (invocation and response times, inputs, results, errors), and checks the
// history per thread. Ids are thread-local by construction, so a history
// partitions by thread exactly: no operation of one thread can change what
// another observes.
//
// Time. A store reads its clock (Options.Now) somewhere between a call's
// invocation and its response, and redisstore reads it in Go before its
// script runs, so the clock value a decision used is not ordered with the
// linearization point by anything the store promises. The model therefore
// takes each call's clock as unknown within [clock at invocation, clock at
// response], read by the worker around the call, and accepts a result when
// some value in that window explains it. Acquire and Renew report the
// expiry they set, which pins their clock exactly.
//
// Faults. A call that fails without a contract error (a cut connection,
// a lost reply) may or may not have taken effect, even after the history
// ends; it is recorded with an unknown result and a response time after
// every other event, and the model branches on both outcomes.
package linz

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// kind is an operation of the history.
type kind int

const (
	opAcquire kind = iota
	opAppend
	opDeleteHead
	opRenew
	opRelease
	opHead
	opGet
)

func (k kind) String() string {
	return [...]string{"acquire", "append", "deleteHead", "renew", "release", "head", "get"}[k]
}

// input is one call: what was asked and the window of the clock (in ms)
// around it.
type input struct {
	kind         kind
	thread       string
	writer       ckptstore.Writer
	id, expected string // append: id and expected head (= the parent); deleteHead, get: id
	parent       string
	clockLo      int64
	clockHi      int64
}

// output is what the call returned. code is "" for success, unknownCode
// for an open outcome, else the contract error's wire code.
type output struct {
	code      string
	fence     int64  // acquire
	token     string // acquire
	expiresAt int64  // acquire, renew: ms
	head      string // head
	found     bool   // get
	parent    string // get
}

const unknownCode = "?"

// state is the model of one thread. It is comparable, so porcupine can
// merge equal states.
type state struct {
	leaseToken string // "" = no lease (released, or never taken)
	leaseFence int64
	leaseExp   int64 // ms
	maxFence   int64
	head       string
	cps        string // sorted "id>parent\n" lines: the thread's checkpoints
}

func (s state) checkpoints() map[string]string {
	m := make(map[string]string)
	for line := range strings.SplitSeq(s.cps, "\n") {
		if id, parent, ok := strings.Cut(line, ">"); ok {
			m[id] = parent
		}
	}
	return m
}

func withCheckpoints(s state, m map[string]string) state {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(id + ">" + m[id] + "\n")
	}
	s.cps = b.String()
	return s
}

func (s state) live(now int64) bool { return s.leaseToken != "" && now < s.leaseExp }

// current reports whether w is the thread's live lease at now.
func (s state) current(w ckptstore.Writer, now int64) bool {
	return s.live(now) && w.OwnerToken == s.leaseToken && w.Fence == s.leaseFence
}

// model is the sequential contract for one thread, with leases of dur ms.
type model struct{ dur int64 }

// step returns every state the call can leave behind when its result is
// out; none when the result is impossible.
func (m model) step(s state, in input, out output) []state {
	var next []state
	add := func(n state) {
		if !slices.Contains(next, n) {
			next = append(next, n)
		}
	}
	for _, now := range m.clocks(s, in, out) {
		applied, code, result := m.apply(s, in, now)
		switch {
		case out.code == unknownCode:
			add(s)
			if code == "" {
				add(applied)
			}
		case out.code != code:
		case code != "" || m.sameResult(in.kind, result, out):
			add(applied)
		}
	}
	return next
}

// clocks returns the clock values in the call's window that can lead to
// different results: a result depends on the clock only through whether
// the lease is live (now < leaseExp) and, for a successful acquire or
// renew, through the expiry it reports, which pins the clock.
func (m model) clocks(s state, in input, out output) []int64 {
	if (in.kind == opAcquire || in.kind == opRenew) && out.code == "" {
		if now := out.expiresAt - m.dur; in.clockLo <= now && now <= in.clockHi {
			return []int64{now}
		}
		return nil
	}
	if in.kind == opAcquire && out.code == unknownCode && in.clockHi-in.clockLo <= 256 {
		// An acquire that may have happened leaves an expiry no result
		// pins; every value in the window is a different future.
		c := make([]int64, 0, in.clockHi-in.clockLo+1)
		for now := in.clockLo; now <= in.clockHi; now++ {
			c = append(c, now)
		}
		return c
	}
	var c []int64
	for _, now := range []int64{in.clockLo, s.leaseExp - 1, s.leaseExp, in.clockHi} {
		if in.clockLo <= now && now <= in.clockHi && !slices.Contains(c, now) {
			c = append(c, now)
		}
	}
	return c
}

// sameResult compares the values a successful call returned with the
// model's.
func (m model) sameResult(k kind, want, got output) bool {
	switch k {
	case opAcquire:
		return got.fence == want.fence && got.expiresAt == want.expiresAt
	case opRenew:
		return got.expiresAt == want.expiresAt
	case opHead:
		return got.head == want.head
	case opGet:
		return got.found == want.found && got.parent == want.parent
	}
	return true
}

// apply runs the call on s at clock now, checking in contract order, and
// returns the new state, the error code ("" for success) and the result.
func (m model) apply(s state, in input, now int64) (state, string, output) {
	switch in.kind {
	case opAcquire:
		if s.live(now) {
			return s, driver.CodeWriterConflict, output{}
		}
		s.maxFence++
		s.leaseFence, s.leaseExp = s.maxFence, now+m.dur
		s.leaseToken = "acquired" // replaced by the real token in stepAcquire
		return s, "", output{fence: s.leaseFence, expiresAt: s.leaseExp}
	case opAppend:
		if !s.current(in.writer, now) {
			return s, driver.CodeWriterLost, output{}
		}
		cps := s.checkpoints()
		if _, dup := cps[in.id]; dup {
			return s, driver.CodeDuplicateID, output{}
		}
		if s.head != in.expected {
			return s, driver.CodeStaleHead, output{}
		}
		if in.parent != in.expected {
			return s, driver.CodeParentMismatch, output{}
		}
		cps[in.id] = in.parent
		s = withCheckpoints(s, cps)
		s.head = in.id
		return s, "", output{}
	case opDeleteHead:
		if !s.current(in.writer, now) {
			return s, driver.CodeWriterLost, output{}
		}
		cps := s.checkpoints()
		parent, ok := cps[in.id]
		if s.head != in.id || !ok {
			return s, driver.CodeNotHead, output{}
		}
		delete(cps, in.id)
		s = withCheckpoints(s, cps)
		s.head = parent
		return s, "", output{}
	case opRenew:
		if !s.current(in.writer, now) {
			return s, driver.CodeWriterLost, output{}
		}
		s.leaseExp = now + m.dur
		return s, "", output{expiresAt: s.leaseExp}
	case opRelease:
		if s.leaseToken == in.writer.OwnerToken && s.leaseFence == in.writer.Fence {
			s.leaseToken, s.leaseExp = "", 0
		}
		return s, "", output{}
	case opHead:
		return s, "", output{head: s.head}
	case opGet:
		parent, ok := s.checkpoints()[in.id]
		return s, "", output{found: ok, parent: parent}
	}
	panic(fmt.Sprintf("linz: unknown operation %v", in.kind))
}

// stepAcquire is step for acquire, which also learns the lease's token:
// the model cannot guess it, so a successful acquire installs the token it
// returned, and an open one an unknowable token no writer holds.
func (m model) stepAcquire(s state, in input, out output) []state {
	next := m.step(s, in, out)
	for i, n := range next {
		if n.leaseToken == "acquired" {
			if out.code == "" {
				n.leaseToken = out.token
			} else {
				n.leaseToken = "unknown:" + fmt.Sprint(n.leaseFence)
			}
			next[i] = n
		}
	}
	return next
}

// porcupineModel is the contract as porcupine's NondeterministicModel,
// partitioned by thread.
func porcupineModel(dur int64) porcupine.Model {
	m := model{dur: dur}
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byThread := make(map[string][]porcupine.Operation)
			for _, op := range history {
				th := op.Input.(input).thread
				byThread[th] = append(byThread[th], op)
			}
			return slices.Collect(maps.Values(byThread))
		},
		Init: func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any {
			s, i, o := st.(state), in.(input), out.(output)
			var next []state
			if i.kind == opAcquire {
				next = m.stepAcquire(s, i, o)
			} else {
				next = m.step(s, i, o)
			}
			res := make([]any, len(next))
			for j, n := range next {
				res[j] = n
			}
			return res
		},
		Equal: func(a, b any) bool { return a.(state) == b.(state) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(input), out.(output)
			res := o.code
			if res == "" {
				res = "ok"
			}
			return fmt.Sprintf("%v(%s w=%d id=%s exp=%s) [%d,%d] → %s fence=%d exp=%d head=%s found=%v",
				i.kind, i.thread, i.writer.Fence, i.id, i.expected, i.clockLo, i.clockHi, res, o.fence, o.expiresAt, o.head, o.found)
		},
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("lease fence %d exp %d held=%v max %d, head %q, %s", s.leaseFence, s.leaseExp, s.leaseToken != "", s.maxFence, s.head, strings.ReplaceAll(s.cps, "\n", " "))
		},
	}
	return nm.ToModel()
}
