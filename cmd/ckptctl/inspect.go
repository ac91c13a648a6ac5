package main

// The read-only commands: threads, list, get, head, refs, check; and the
// paging helpers the migration commands share.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/streams"
)

// threadSeq yields every thread id of s in byte order, one Threads page at
// a time.
func threadSeq(ctx context.Context, s *store) iter.Seq2[string, error] {
	return pageSeq(func(after string) ([]string, string, error) {
		return s.Threads(ctx, after, driver.MaxPageLimit)
	})
}

// checkpointSeq yields the checkpoints of thread in List order (or its
// reverse), a page of pageSize at a time through ListPage; a store without
// Pager is read with one List.
func checkpointSeq(ctx context.Context, s *ckptstore.Store, thread string, pageSize int, reverse bool) iter.Seq2[*ckptstore.Checkpoint, error] {
	return pageSeq(func(after string) ([]*ckptstore.Checkpoint, string, error) {
		return s.ListPage(ctx, thread, ckptstore.ListOptions{Limit: pageSize, Reverse: reverse, After: after})
	})
}

// pageSeq yields the elements of the pages page returns, starting after
// "" and then after each page's cursor, until a page's cursor is "".
func pageSeq[T any](page func(after string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for after := ""; ; {
			items, next, err := page(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, x := range items {
				if !yield(x, nil) {
					return
				}
			}
			if after = next; next == "" {
				return
			}
		}
	}
}

func runThreads(ctx context.Context, e *env, s *store, _ []string) error {
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	for id, err := range threadSeq(ctx, s) {
		if err != nil {
			return err
		}
		fmt.Fprintln(w, id)
	}
	return nil
}

func runList(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "list", "the store URL")
	asJSON := f.Bool("json", false, "print each checkpoint as one line of JSON (the @tanstack/ai-sandbox shape)")
	reverse := f.Bool("reverse", false, "newest first")
	page := f.Int("page", driver.DefaultPageLimit, "checkpoints read per ListPage call (1.."+strconv.Itoa(driver.MaxPageLimit)+")")
	pos, err := f.parse(args, 1)
	if err != nil {
		return err
	}
	if _, err := driver.PageLimit(*page); err != nil || *page == 0 {
		return usageErr("--page must be in 1..%d, got %d", driver.MaxPageLimit, *page)
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	if !*asJSON {
		fmt.Fprintln(w, "ID\tCREATED_AT\tREASON\tPARENT\tFILES\tARTIFACTS\tLABEL")
	}
	for cp, err := range checkpointSeq(ctx, s.Store, pos[0], *page, *reverse) {
		if err != nil {
			return err
		}
		if *asJSON {
			b, err := cp.MarshalJSON()
			if err != nil {
				return err
			}
			w.Write(b)
			w.WriteByte('\n')
			continue
		}
		parent := cp.ParentCheckpointID
		if parent == "" {
			parent = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", cp.ID, strconv.FormatFloat(cp.CreatedAt, 'f', -1, 64),
			cp.Reason, parent, len(cp.Files), len(cp.Artifacts), cp.Label)
	}
	return nil
}

func runGet(ctx context.Context, e *env, s *store, pos []string) error {
	cp, err := s.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	if cp == nil {
		return fmt.Errorf("no checkpoint %q", pos[0])
	}
	b, err := cp.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

func runHead(ctx context.Context, e *env, s *store, pos []string) error {
	head, err := s.GetHead(ctx, pos[0])
	if err != nil || head == "" {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, head)
	return err
}

func runRefs(ctx context.Context, e *env, s *store, _ []string) error {
	refs, err := s.ListBlobReferences(ctx)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	for _, r := range refs {
		fmt.Fprintf(w, "%s\t%d\n", r.Key, r.References)
	}
	return nil
}

// runCheck calls the store's consistency checker, Check(ctx), when it has
// one (fdbstore and redisstore, whose one Check covers their persistence
// keys too), and its persistence driver's when that is a checker of its
// own, and prints each broken invariant.
// A checker that reports its progress (driver.ProgressChecker) gets
// progress lines every --progress.
func runCheck(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "check", "the store URL")
	every := f.Duration("progress", 2*time.Second, "interval of the progress lines on stderr (0 = none)")
	if _, err := f.parse(args, 0); err != nil {
		return err
	}
	if *every < 0 {
		return usageErr("--progress must not be negative")
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if s.server {
		return serverCheck(ctx, e, s)
	}
	prog := newProgress(e, "check", *every)
	problems, err := callCheck(ctx, s.Store, prog.checkTick)
	if err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	// The persistence driver's keys, through the same interface, when
	// the driver checks them itself; fdbstore's and redisstore's store
	// checkers have read them already.
	if c, ok := s.persist.(driver.Checker); ok {
		ps, err := checkProblems(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: persistence: %w", s.desc, err)
		}
		for _, p := range ps {
			problems = append(problems, "persistence: "+p)
		}
	}
	// The streams of the --namespace tenant, through their driver's
	// Porter: one walk for every engine.
	if sp, ok := s.streams.(streams.Porter); ok {
		ps, err := streams.Check(ctx, sp)
		if err != nil {
			return fmt.Errorf("%s: streams: %w", s.desc, err)
		}
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("streams: %q: %s", p.Stream, p.What))
		}
	}
	for _, p := range problems {
		fmt.Fprintln(e.stdout, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %d broken invariants", s.desc, len(problems))
	}
	fmt.Fprintf(e.stdout, "%s: no broken invariant\n", s.desc)
	return nil
}

// serverCheck runs check through a ckptserver (/v1/check): the server
// runs the engine's checkers on the tenant's namespace and lists at most
// httpstore.MaxCheckProblems problems, counting the rest. It reports no
// progress: the server sends nothing until the check is done.
func serverCheck(ctx context.Context, e *env, s *store) error {
	rep, err := s.client.Check(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", s.desc, err)
	}
	for _, p := range rep.Checkpoints {
		fmt.Fprintln(e.stdout, p.String())
	}
	for _, p := range rep.Persistence {
		fmt.Fprintln(e.stdout, "persistence: "+p.String())
	}
	for _, p := range rep.Streams {
		fmt.Fprintln(e.stdout, "streams: "+p.String())
	}
	if rep.More > 0 {
		fmt.Fprintf(e.stdout, "… and %d more (the server lists the first %d)\n", rep.More, httpstore.MaxCheckProblems)
	}
	if n := rep.Len(); n > 0 {
		return fmt.Errorf("%s: %d broken invariants", s.desc, n)
	}
	fmt.Fprintf(e.stdout, "%s: no broken invariant\n", s.desc)
	return nil
}

// errNoChecker is callCheck's answer for a store without a checker.
var errNoChecker = errors.New("this store has no checker")

// callCheck runs st's checker (a driver.Checker) and returns the problems
// it reported, one string each. report, when not nil, takes the progress
// of a driver.ProgressChecker.
func callCheck(ctx context.Context, st *ckptstore.Store, report func(driver.CheckProgress)) ([]string, error) {
	c, ok := st.Driver().(driver.Checker) // the checker is the backend's own
	if !ok {
		return nil, errNoChecker
	}
	if pc, ok := c.(driver.ProgressChecker); ok && report != nil {
		ps, err := pc.CheckProgress(ctx, report)
		return problemStrings(ps), err
	}
	return checkProblems(ctx, c)
}

func problemStrings(ps []driver.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// checkProblems runs c and returns its problems, one string each.
func checkProblems(ctx context.Context, c driver.Checker) ([]string, error) {
	ps, err := c.Check(ctx)
	return problemStrings(ps), err
}
