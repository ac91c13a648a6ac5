package memkv

// The shard model: where a FoundationDB cluster's write load would land.
//
// FoundationDB's data distribution cuts the keyspace into contiguous
// shards, each stored by one storage team, and every mutation goes to the
// team of the shard its key (or each shard its cleared range) falls in. A
// store whose writes all touch one small range therefore runs at one
// team's speed however large the cluster. memkv cannot measure a cluster,
// but it can count where the mutations fall: Shards cuts the current keys
// into ranges of equal key counts and, from then on, every applied commit
// adds its mutations and bytes to the range of each key it writes.
//
// The model's limits, against real data distribution:
//
//   - FoundationDB splits by bytes, not keys: a shard is split when it
//     grows past a size target that rises with the square root of the
//     database's size, (MIN_SHARD_BYTES + 45 × √dbBytes) × 4 capped at
//     MAX_SHARD_BYTES = 500 MB (ServerKnobs: SHARD_BYTES_PER_SQRT_BYTES =
//     45, SHARD_BYTES_RATIO = 4; MIN_SHARD_BYTES is 10 MB in 7.x, 200 KB
//     in older releases), and merged below a fraction of it. Key-count
//     quantiles are the same cut when values have similar sizes; with a
//     few large values (checkpoint chunks) FoundationDB's shards hold
//     fewer keys there. The question asked here, "does every writer
//     touch one range?", has the same answer under both cuts.
//   - FoundationDB also splits a shard whose write bandwidth exceeds
//     SHARD_MAX_BYTES_PER_KSEC (1 GB per 1000 s, i.e. 1 MB/s), into pieces
//     under SHARD_SPLIT_BYTES_PER_KSEC (250 KB/s). memkv never re-splits by
//     itself: call Shards again to re-split. Splitting does not cure the
//     pattern this model exists to find, though: when new keys always
//     land after every existing key (a time-ordered range), every split
//     leaves the newest piece taking all the writes, so the last shard
//     stays hot whatever data distribution does.
//   - Each range stands for one storage team. Real teams hold many
//     shards and data distribution balances shards across teams, so a
//     hot range is a lower bound on a team's share, and a range's share of
//     mutations is not a measure of a team's CPU or disk time (large
//     values cost more than small ones: see the byte counts).
//   - A ClearRange counts once in every range it overlaps, as the cluster
//     sends it to every team of those shards. Atomic operations count as
//     one mutation each, like Set and Clear. Reads are not counted.
//   - Counts cover applied commits only: a commit refused by a conflict
//     or an injected not_committed never reached the storage servers.

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
)

// shardModel is the current cut and its counters. It is read and written
// under DB.mu only.
type shardModel struct {
	// bounds[i] is the first key of range i+1; range 0 starts at "" and
	// the last ends at the end of the keyspace.
	bounds    [][]byte
	keys      []int // keys in each range when the cut was made
	mutations []int64
	bytes     []int64
}

// ShardStat is one range of the shard model and the load that landed in
// it since the cut (or the last ResetShardStats).
type ShardStat struct {
	// Begin is the range's first key ("" for the first range); End the
	// first key after it (nil for the last range: the end of the keyspace).
	Begin, End []byte
	// Keys is how many keys the range held when Shards made the cut.
	Keys int
	// Mutations counts every Set, Clear, Add, CompareAndClear landing in
	// the range, and every ClearRange overlapping it.
	Mutations int64
	// Bytes counts the keys and values (operands for atomic operations,
	// begin and end for cleared ranges) of those mutations.
	Bytes int64
}

// ShardReport is the load of every range of the shard model.
type ShardReport struct {
	Shards []ShardStat
	// Mutations and Bytes are the sums over every range. A ClearRange
	// that overlaps several ranges counts in each.
	Mutations, Bytes int64
	// Hottest is the index of the range with the most mutations (the first
	// of equals), or -1 when nothing was counted.
	Hottest int
	// HottestShare is the hottest range's fraction of Mutations, in [0, 1];
	// HottestBytesShare the largest fraction of Bytes in one range.
	HottestShare, HottestBytesShare float64
}

// FairShare is the fraction of the writes one range would take if the
// load were spread evenly: 1 / len(Shards).
func (r ShardReport) FairShare() float64 {
	if len(r.Shards) == 0 {
		return 0
	}
	return 1 / float64(len(r.Shards))
}

// String is the one-line summary that loadgen and the benchmarks print:
// "hottest range: X % of writes".
func (r ShardReport) String() string {
	if len(r.Shards) == 0 {
		return "hottest range: no shard model (call Shards)"
	}
	if r.Hottest < 0 {
		return fmt.Sprintf("hottest range: no writes yet (%d ranges)", len(r.Shards))
	}
	return fmt.Sprintf("hottest range: %.1f %% of writes (%.1f× the fair share of %d ranges; %.1f %% of bytes in the range with the most), range %d of [%q, %q)",
		100*r.HottestShare, r.HottestShare/r.FairShare(), len(r.Shards), 100*r.HottestBytesShare,
		r.Hottest, r.Shards[r.Hottest].Begin, r.Shards[r.Hottest].End)
}

// Shards cuts the committed keys into n ranges of (as near as possible)
// equal key counts, replaces the previous cut and starts counting the
// mutations of every later commit from zero. It returns the n-1
// boundaries (copies): range i+1 starts at boundary i. With fewer distinct
// cut points than n (fewer keys than ranges) there are fewer ranges; an
// empty database is one range. n < 1 turns the model off.
//
// The cut walks every key under the commit lock: O(keys), so call it
// between phases of a test or benchmark, not on a hot path.
func (db *DB) Shards(n int) [][]byte {
	db.mu.Lock()
	defer db.mu.Unlock()
	if n < 1 {
		db.shards = nil
		return nil
	}
	total := db.master.Len()
	var bounds [][]byte
	var counts []int
	if total > 0 {
		// Boundary j (1 ≤ j < n) is the key at index ⌊j × total / n⌋.
		next, j, i := total/n, 1, 0
		last := 0
		db.master.Ascend(func(it *item) bool {
			for j < n && i == next {
				if i > last { // skip empty ranges when total < n
					bounds = append(bounds, clone(it.key))
					counts = append(counts, i-last)
					last = i
				}
				j++
				next = j * total / n
			}
			i++
			return j < n
		})
		counts = append(counts, total-last)
	} else {
		counts = []int{0}
	}
	db.shards = &shardModel{
		bounds:    bounds,
		keys:      counts,
		mutations: make([]int64, len(counts)),
		bytes:     make([]int64, len(counts)),
	}
	out := make([][]byte, len(bounds))
	for i, b := range bounds {
		out[i] = clone(b)
	}
	return out
}

// ShardStats returns the load counted since the cut or the last
// ResetShardStats. Without a cut (Shards never called, or called with
// n < 1) the report has no ranges.
func (db *DB) ShardStats() ShardReport {
	db.mu.Lock()
	defer db.mu.Unlock()
	r := ShardReport{Hottest: -1}
	m := db.shards
	if m == nil {
		return r
	}
	var hotBytes int64
	for i := range m.keys {
		st := ShardStat{Keys: m.keys[i], Mutations: m.mutations[i], Bytes: m.bytes[i]}
		if i > 0 {
			st.Begin = clone(m.bounds[i-1])
		} else {
			st.Begin = []byte{}
		}
		if i < len(m.bounds) {
			st.End = clone(m.bounds[i])
		}
		r.Shards = append(r.Shards, st)
		r.Mutations += st.Mutations
		r.Bytes += st.Bytes
		if st.Mutations > 0 && (r.Hottest < 0 || st.Mutations > r.Shards[r.Hottest].Mutations) {
			r.Hottest = i
		}
		hotBytes = max(hotBytes, st.Bytes)
	}
	if r.Mutations > 0 {
		r.HottestShare = float64(r.Shards[r.Hottest].Mutations) / float64(r.Mutations)
	}
	if r.Bytes > 0 {
		r.HottestBytesShare = float64(hotBytes) / float64(r.Bytes)
	}
	return r
}

// ResetShardStats zeroes the shard counters and keeps the cut.
func (db *DB) ResetShardStats() {
	db.mu.Lock()
	defer db.mu.Unlock()
	if m := db.shards; m != nil {
		clear(m.mutations)
		clear(m.bytes)
	}
}

// shardOf returns the range holding key. Called with DB.mu held.
func (m *shardModel) shardOf(key []byte) int {
	// The number of boundaries at or below key.
	return sort.Search(len(m.bounds), func(i int) bool { return bytes.Compare(m.bounds[i], key) > 0 })
}

// count adds one mutation of key carrying n bytes.
func (m *shardModel) count(key []byte, n int) {
	i := m.shardOf(key)
	m.mutations[i]++
	m.bytes[i] += int64(n)
}

// countRange adds the clear of the non-empty range r to every range it
// overlaps.
func (m *shardModel) countRange(begin, end []byte) {
	first := m.shardOf(begin)
	// The last range that holds a key below end: the number of boundaries
	// strictly below end.
	last, _ := slices.BinarySearchFunc(m.bounds, end, bytes.Compare)
	n := int64(len(begin) + len(end))
	for i := first; i <= last; i++ {
		m.mutations[i]++
		m.bytes[i] += n
	}
}
