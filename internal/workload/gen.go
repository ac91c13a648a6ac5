package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
)

// Key prefixes of the contract (docs/contract.md, "Validation").
const (
	FilesKeyPrefix     = "sandbox-files/sha256/"
	ArtifactsKeyPrefix = "sandbox-artifacts/sha256/"
)

// Shape of a generated checkpoint. File entries take about a quarter of the
// payload (an entry is ~150 bytes of JSON) and the conversation the rest,
// which is roughly what a coding agent's checkpoint looks like: a few dozen
// files and a long message history.
const (
	bytesPerFile  = 600 // payload bytes per file entry: one entry in four bytes' worth
	filesPerDir   = 16
	entryOverhead = 50  // JSON bytes of a file entry beyond its path and key
	dirOverhead   = 30  // JSON bytes of a dir entry beyond its path
	artOverhead   = 150 // JSON bytes of an artifact beyond its key and id
	cpOverhead    = 150 // JSON bytes of a checkpoint's own fields beyond its ids
)

// GenOptions shape the checkpoints of a Gen. The zero value makes minimal
// checkpoints (one file, an empty conversation) with no sharing.
type GenOptions struct {
	// Namespace names the run. Its hash is the tag that starts every blob
	// digest, and the global blobs derive from it, so the processes of one
	// namespace share them. "" is a valid namespace.
	Namespace string
	// Payload is the distribution of a checkpoint's approximate JSON size.
	Payload SizeDist
	// BlobShare is the probability, in [0, 1], that a file keeps the blob
	// key it had in the parent checkpoint (the file did not change during
	// the run); otherwise it gets a fresh key (it was rewritten).
	BlobShare float64
	// GlobalBlobs is how many namespace-wide blobs every checkpoint also
	// references (a shared base image, vendored dependencies): hot keys
	// whose counts every append of every thread moves.
	GlobalBlobs int
	// ArtifactRate is the probability, in [0, 1], that a checkpoint carries
	// one artifact with a fresh key.
	ArtifactRate float64
	// Files fixes the number of file entries; 0 derives it from the payload
	// size (about a quarter of the payload is file entries).
	Files int
}

// Gen makes checkpoints. A Gen is not safe for concurrent use: give each
// worker its own (they draw from one namespace but never collide).
type Gen struct {
	opts   GenOptions
	tag    string // 8 hex digits: the namespace's tag
	idBase string // random; makes ids unique across Gens and processes
	n      uint64
	rng    *rand.Rand
	global []string
	sizes  map[string]int // payload size per thread
}

// NewGen returns a Gen seeded from the system's random source.
func NewGen(opts GenOptions) *Gen {
	return NewGenSeed(opts, rand.Uint64(), rand.Uint64())
}

// NewGenSeed returns a Gen whose draws and ids follow from the seeds, for
// reproducible benchmarks. Two Gens with equal seeds make equal ids, so
// give every Gen of a store different seeds.
func NewGenSeed(opts GenOptions, seed1, seed2 uint64) *Gen {
	g := &Gen{
		opts:  opts,
		tag:   Tag(opts.Namespace),
		rng:   rand.New(rand.NewPCG(seed1, seed2)),
		sizes: map[string]int{},
	}
	var b [6]byte
	binary.LittleEndian.PutUint32(b[:], g.rng.Uint32())
	binary.LittleEndian.PutUint16(b[4:], uint16(g.rng.Uint32()))
	g.idBase = hex.EncodeToString(b[:]) + "."
	for i := range opts.GlobalBlobs {
		g.global = append(g.global, GlobalBlobKey(opts.Namespace, i))
	}
	return g
}

// Tag returns the 8 hex digits that start every blob digest of namespace.
func Tag(namespace string) string {
	sum := sha256.Sum256([]byte("ckptstore-workload/" + namespace))
	return hex.EncodeToString(sum[:4])
}

// GlobalBlobKey returns the i-th namespace-wide blob key of namespace.
func GlobalBlobKey(namespace string, i int) string {
	sum := sha256.Sum256([]byte("ckptstore-workload/" + namespace + "/global/" + strconv.Itoa(i)))
	return FilesKeyPrefix + Tag(namespace) + hex.EncodeToString(sum[4:])
}

// OwnsKey reports whether key is a blob key of namespace's tag.
func OwnsKey(tag, key string) bool {
	return strings.HasPrefix(key, FilesKeyPrefix+tag) || strings.HasPrefix(key, ArtifactsKeyPrefix+tag)
}

// Tag returns the Gen's blob key tag.
func (g *Gen) Tag() string { return g.tag }

// Rand returns the Gen's random source, for callers that draw their own
// decisions (undo, prune) from the same seeded stream.
func (g *Gen) Rand() *rand.Rand { return g.rng }

// GlobalKeys returns the namespace-wide blob keys every checkpoint uses.
func (g *Gen) GlobalKeys() []string { return g.global }

// NewID returns a checkpoint id no Gen has returned before.
func (g *Gen) NewID() string {
	g.n++
	return g.idBase + strconv.FormatUint(g.n, 36)
}

func (g *Gen) freshKey(prefix string) string {
	b := make([]byte, 0, 32)
	for range 4 {
		b = binary.LittleEndian.AppendUint64(b, g.rng.Uint64())
	}
	return prefix + g.tag + hex.EncodeToString(b[:28])
}

// size returns the thread's payload size. A thread keeps one size: its
// workspace and history grow slowly, they do not jump between a small and
// a large sandbox from one run to the next, and only then do consecutive
// checkpoints share their files' keys. The size follows from the thread's
// name, so every Gen (and process) of a namespace agrees on it.
func (g *Gen) size(thread string) int {
	if n, ok := g.sizes[thread]; ok {
		return n
	}
	if len(g.sizes) > 1<<16 { // forks make threads without end; keep the cache bounded
		clear(g.sizes)
	}
	sum := sha256.Sum256([]byte(thread))
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
	n := g.opts.Payload.Draw(r)
	g.sizes[thread] = n
	return n
}

// Next returns a new checkpoint of thread, of the thread's payload size
// (drawn once per thread from GenOptions.Payload), with the id and parent
// given, and
// the blob keys it uses that no earlier checkpoint used (a harness uploads
// those before it appends). prev is the parent checkpoint when the caller
// has it (nil otherwise): its files are what the new checkpoint shares
// keys with.
func (g *Gen) Next(thread, id, parent string, prev *ckptstore.Checkpoint) (cp *ckptstore.Checkpoint, fresh []string) {
	size := g.size(thread)
	nFiles := max(1, size/bytesPerFile)
	if g.opts.Files > 0 {
		nFiles = g.opts.Files
	}
	nDirs := (nFiles + filesPerDir - 1) / filesPerDir

	var prevFiles []ckptstore.Entry
	if prev != nil {
		for _, e := range prev.Files {
			if e.Kind == ckptstore.KindFile && strings.HasPrefix(e.Path, "src/") {
				prevFiles = append(prevFiles, e)
			}
		}
	}

	// used tracks the JSON bytes of everything but the conversation, which
	// pads the checkpoint out to its payload size.
	used := cpOverhead + len(id) + len(thread) + len(parent) + len("run-") + len(id)
	files := make([]ckptstore.Entry, 0, 1+nDirs+nFiles+len(g.global)+1)
	files = append(files, ckptstore.Entry{Path: "src", Kind: ckptstore.KindDir})
	for d := range nDirs {
		files = append(files, ckptstore.Entry{Path: "src/d" + strconv.Itoa(d), Kind: ckptstore.KindDir})
	}
	for _, e := range files {
		used += len(e.Path) + dirOverhead
	}
	for i := range nFiles {
		path := "src/d" + strconv.Itoa(i/filesPerDir) + "/f" + strconv.Itoa(i) + ".txt"
		e := ckptstore.Entry{Path: path, Kind: ckptstore.KindFile}
		if i < len(prevFiles) && prevFiles[i].Path == path && g.rng.Float64() < g.opts.BlobShare {
			e.BlobKey, e.Size = prevFiles[i].BlobKey, prevFiles[i].Size
		} else {
			e.BlobKey, e.Size = g.freshKey(FilesKeyPrefix), int64(100+g.rng.IntN(100_000))
			fresh = append(fresh, e.BlobKey)
		}
		used += len(path) + len(e.BlobKey) + entryOverhead
		files = append(files, e)
	}
	if len(g.global) > 0 {
		files = append(files, ckptstore.Entry{Path: "vendor", Kind: ckptstore.KindDir})
		used += len("vendor") + dirOverhead
		for i, k := range g.global {
			e := ckptstore.Entry{Path: "vendor/g" + strconv.Itoa(i) + ".bin", Kind: ckptstore.KindFile, BlobKey: k, Size: 1 << 20}
			files = append(files, e)
			used += len(e.Path) + len(k) + entryOverhead
		}
	}
	now := float64(time.Now().UnixMilli())
	var arts []ckptstore.Artifact
	if g.rng.Float64() < g.opts.ArtifactRate {
		k := g.freshKey(ArtifactsKeyPrefix)
		fresh = append(fresh, k)
		used += len(k) + 2*len(id) + artOverhead
		arts = []ckptstore.Artifact{{
			ArtifactID: id + "-a", Name: "report.md", MimeType: "text/markdown",
			Size: int64(g.rng.IntN(50_000)), BlobKey: k, CreatedAt: now,
		}}
	}
	return &ckptstore.Checkpoint{
		ID:                 id,
		ThreadID:           thread,
		ParentCheckpointID: parent,
		CreatedAt:          now,
		Reason:             ckptstore.ReasonAutomatic,
		SourceRunID:        "run-" + id,
		Files:              files,
		Conversation:       Conversation(size - used),
		Artifacts:          arts,
	}, fresh
}

// Conversation returns a JSON array of about n bytes (at least its
// framing): one user message whose content pads it out.
func Conversation(n int) []byte {
	const head, tail = `[{"role":"user","content":"`, `"}]`
	pad := max(0, n-len(head)-len(tail))
	b := make([]byte, 0, len(head)+pad+len(tail))
	b = append(b, head...)
	for pad > 0 {
		k := min(pad, len(filler))
		b = append(b, filler[:k]...)
		pad -= k
	}
	return append(b, tail...)
}

// filler is conversation padding: plain letters, so it needs no JSON
// escaping and does not compress to nothing the way one repeated byte does.
var filler = func() string {
	const words = "the agent read the file ran the tests and wrote a patch "
	return strings.Repeat(words, 4096/len(words)+1)
}()
