package blobs

// FileBucket invariants:
//
// Layout. Under the bucket directory, a key's segments but the last are
// directories under d/, and its last segment N is a file under o/<fan>/, where
// <fan> is the lowercase hex of N's first two bytes (one for a one-byte N):
//
//	sandbox-files/sha256/3fa9…  →  d/sandbox-files/d/sha256/o/3366/3fa9…
//	readme                      →  o/7265/readme
//	tmp/<random>.part              uploads in flight (or debris: see below)
//	locks/00 … locks/15            lock files of Put, Touch and DeleteOlder
//	ckptstore-bucket               marker naming the layout
//
// Objects and key directories live in separate trees (o/ and d/), so a key
// can be an object and a prefix of other keys at once ("a" and "a/b"), as
// on S3. The fan-out keeps directories small — at a million
// content-addressed keys each o/<fan>/ holds about 4,000 files — which is
// what bounds List's memory: it holds one sorted fan-out directory and the
// d/ names of each level it is in, never a whole prefix.
//
// Order. Directory entries are sorted by name, but a key directory S stands for keys
// S+"/…", and "a-b" < "a/x" although "a" < "a-b". List therefore sorts d/
// names as S+"/" and merges them with the object names of the same level;
// hex fan-out names sort like the bytes they encode, prefixes first.
//
// Atomicity. Put writes tmp/<random>.part, fsyncs it, and renames it into
// place; rename within one file system is atomic, so readers see the old
// object or the new one, never a part. Every path goes through an os.Root,
// so no key, symlink or ".." can reach outside the bucket directory.
// Emptied directories are kept: removing them would race with a Put that
// just created them, and they cost only an inode each.
//
// Debris. A Put killed before its rename leaves its tmp/<random>.part behind,
// and nothing else would ever name it. A Put holds a flock on its part from
// creation to close, so a part whose lock is free belongs to no live Put
// (the kernel drops a dead process's locks). RemoveDebris, which OpenFile
// and the sweep run, unlinks a part only when its lock is free AND its
// mtime is older than StalePartAge by the bucket's clock. A Put holds the
// lock through its rename, and after locking a new part checks that the
// path still names it (a RemoveDebris may have unlinked it just before),
// so on Unix a live upload never loses its part whatever the clocks say;
// where flock does not exist the age alone decides. RemoveDebris unlinks
// paths under tmp/ only, so a completed object (which a rename moved out
// of tmp/) is never touched.
//
// Freshness. Touch sets the file's mtime. POSIX has no "unlink if older",
// so DeleteOlder's stat and unlink, Touch, and Put's rename into place take
// the key's lock (a flock on locks/NN by a hash of the key, and a mutex
// within the process): a touch comes before the check, and keeps the
// object, or after the unlink, and fails with ErrNotFound.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	fileMarker        = "ckptstore-bucket"
	fileMarkerContent = "ckptstore file bucket, layout 1\n"
	fileTmpDir        = "tmp"
)

// StalePartAge is how long an upload's part must go unwritten before
// RemoveDebris may take it for the debris of a killed Put. A live Put
// writes its part as the bytes arrive, so its mtime stays recent; on Unix
// a live Put also holds the part's flock, which keeps it whatever its age.
// Elsewhere a Put whose body stalls for longer than this can lose its part
// to a sweep: it then fails (the rename finds nothing), and stores nothing.
const StalePartAge = time.Hour

// DebrisRemover is implemented by a bucket that can be left with debris by
// a writer that died mid-upload (a file bucket's tmp/*.part). The sweep
// calls it.
type DebrisRemover interface {
	// RemoveDebris removes the leftovers of uploads that will never finish
	// and returns how many it removed. It never touches an object, nor the
	// upload of a live writer.
	RemoveDebris(ctx context.Context) (int, error)
}

var _ DebrisRemover = (*FileBucket)(nil)

// ErrNotBucket is returned by OpenFile for a non-empty directory that holds
// no file bucket, so a mistyped path cannot scatter objects into, or list,
// an unrelated directory.
var ErrNotBucket = errors.New("blobs: directory is not a ckptstore file bucket")

// FileOptions configures OpenFile. The zero value opens an existing
// directory and fsyncs every Put.
type FileOptions struct {
	// Create makes the directory (and its parents) when it is missing.
	Create bool
	// NoSync skips the fsync of each object and its directory in Put. A
	// crash may then lose or truncate recent objects. For tests and
	// benchmarks only.
	NoSync bool
	// Now, when set, stamps each Put's and Touch's ModTime (the file's
	// mtime); nil means time.Now. Tests pass their own clock to make
	// objects old without sleeping.
	Now func() time.Time
}

// FileBucket is a Bucket kept in a local directory. Create one with
// OpenFile; Close releases its directory handle.
type FileBucket struct {
	root    *os.Root
	dir     string
	opts    FileOptions
	stripes [fileLockStripes]lockStripe
}

// OpenFile opens the file bucket in dir. An empty directory becomes a new
// bucket; a non-empty one must already be a bucket (ErrNotBucket).
func OpenFile(dir string, opts FileOptions) (*FileBucket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if opts.Create {
		if err := os.MkdirAll(abs, 0o777); err != nil {
			return nil, fmt.Errorf("blobs: create file bucket: %w", err)
		}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("blobs: open file bucket: %w", err)
	}
	b := &FileBucket{root: root, dir: abs, opts: opts}
	if err := b.init(); err != nil {
		root.Close()
		return nil, err
	}
	// Best effort: a bucket opened by a reader without write access must
	// still open, and the sweep removes what this leaves and reports why.
	_, _ = b.RemoveDebris(context.Background())
	return b, nil
}

// RemoveDebris implements DebrisRemover: it removes every tmp/*.part that
// no live Put holds (its flock is free) and that was last written more
// than StalePartAge ago by the bucket's clock. See the Debris invariant.
func (b *FileBucket) RemoveDebris(ctx context.Context) (int, error) {
	d, err := b.root.Open(fileTmpDir)
	if err != nil {
		return 0, fmt.Errorf("blobs: remove debris: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, fmt.Errorf("blobs: remove debris: %w", err)
	}
	cutoff := b.now().Add(-StalePartAge)
	removed := 0
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if !strings.HasSuffix(name, ".part") {
			continue
		}
		ok, err := b.removePart(filepath.Join(fileTmpDir, name), cutoff)
		if err != nil {
			errs = append(errs, fmt.Errorf("blobs: remove debris %s: %w", name, err))
		}
		if ok {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// removePart unlinks the part p if its lock is free and it was last
// written before cutoff, holding the lock while it checks and unlinks.
func (b *FileBucket) removePart(p string, cutoff time.Time) (bool, error) {
	f, err := b.root.Open(p)
	if isMissing(err) {
		return false, nil // renamed into place or removed meanwhile
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	free, err := tryFlock(f)
	if err != nil || !free {
		return false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || !fi.ModTime().Before(cutoff) {
		return false, nil
	}
	if err := b.root.Remove(p); err != nil {
		if isMissing(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (b *FileBucket) init() error {
	marker, err := b.root.ReadFile(fileMarker)
	switch {
	case err == nil:
		if string(marker) != fileMarkerContent {
			return fmt.Errorf("%w: %s: unknown layout %q", ErrNotBucket, b.dir, marker)
		}
	case errors.Is(err, fs.ErrNotExist):
		f, err := b.root.Open(".")
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(1)
		f.Close()
		if err != nil && err != io.EOF {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %s is not empty and has no %s file", ErrNotBucket, b.dir, fileMarker)
		}
		if err := b.root.WriteFile(fileMarker, []byte(fileMarkerContent), 0o666); err != nil {
			return fmt.Errorf("blobs: create file bucket: %w", err)
		}
	default:
		return err
	}
	for _, dir := range []string{fileTmpDir, fileLockDir} {
		if err := b.root.MkdirAll(dir, 0o777); err != nil {
			return fmt.Errorf("blobs: create file bucket: %w", err)
		}
	}
	return nil
}

func openFileURL(u *url.URL) (*FileBucket, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w: file URL %q names host %q; want file:///abs/dir", ErrInvalidURL, u.String(), u.Host)
	}
	if u.Path == "" || !path.IsAbs(u.Path) {
		return nil, fmt.Errorf("%w: file URL %q needs an absolute path: file:///abs/dir", ErrInvalidURL, u.String())
	}
	q := u.Query()
	if err := CheckQuery(q, "create", "nosync"); err != nil {
		return nil, err
	}
	var opts FileOptions
	var err error
	if opts.Create, err = BoolParam(q, "create"); err != nil {
		return nil, err
	}
	if opts.NoSync, err = BoolParam(q, "nosync"); err != nil {
		return nil, err
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[2] == ':' {
		p = p[1:] // file:///C:/dir names C:/dir
	}
	return OpenFile(filepath.FromSlash(p), opts)
}

// Dir returns the bucket's absolute directory.
func (b *FileBucket) Dir() string { return b.dir }

// Close releases the bucket's directory handle and lock files. Calls after
// Close fail.
func (b *FileBucket) Close() error {
	for i := range b.stripes {
		st := &b.stripes[i]
		st.mu.Lock()
		if st.f != nil {
			st.f.Close()
			st.f = nil
		}
		st.mu.Unlock()
	}
	return b.root.Close()
}

// fanOut names the o/ subdirectory of an object whose last segment is name.
func fanOut(name string) string {
	return hex.EncodeToString([]byte(name[:min(2, len(name))]))
}

// objectPath maps a key to its path relative to the bucket directory.
func objectPath(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	segs := strings.Split(key, "/")
	parts := make([]string, 0, 2*len(segs)+1)
	for _, s := range segs[:len(segs)-1] {
		parts = append(parts, "d", s)
	}
	name := segs[len(segs)-1]
	parts = append(parts, "o", fanOut(name), name)
	p := filepath.Join(parts...)
	// Segments are never "", "." or "..", but a segment may hold the
	// platform's own separator (a backslash on Windows): refuse anything
	// that would not stay a plain relative path.
	if filepath.Separator != '/' && strings.ContainsRune(key, filepath.Separator) || !filepath.IsLocal(p) {
		return "", fmt.Errorf("%w: %q cannot be stored in a file bucket here", ErrInvalidKey, key)
	}
	return p, nil
}

// keyPath is objectPath at the start of an operation on ctx: an invalid
// key is reported before a done context.
func keyPath(ctx context.Context, key string) (string, error) {
	p, err := objectPath(key)
	if err != nil {
		return "", err
	}
	return p, ctx.Err()
}

func isMissing(err error) bool {
	// ENOTDIR: a component of the path is a file, so the object is absent.
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Get implements Bucket. The returned *os.File reads the object as it was
// when Get opened it, even if it is replaced or deleted meanwhile.
func (b *FileBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := keyPath(ctx, key)
	if err != nil {
		return nil, err
	}
	f, err := b.root.Open(p)
	if isMissing(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Head implements Bucket.
func (b *FileBucket) Head(ctx context.Context, key string) (Object, error) {
	p, err := keyPath(ctx, key)
	if err != nil {
		return Object{}, err
	}
	fi, err := b.root.Stat(p)
	if isMissing(err) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, err
	}
	if !fi.Mode().IsRegular() {
		return Object{}, ErrNotFound
	}
	return Object{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Put implements Bucket.
func (b *FileBucket) Put(ctx context.Context, key string, r io.Reader) (err error) {
	p, err := keyPath(ctx, key)
	if err != nil {
		return err
	}
	f, tmp, err := b.createPart()
	if err != nil {
		return fmt.Errorf("blobs: put %q: %w", key, err)
	}
	published, closed := false, false
	defer func() {
		if !closed {
			f.Close()
		}
		if !published {
			b.root.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		return fmt.Errorf("blobs: put %q: %w", key, err)
	}
	if !b.opts.NoSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("blobs: put %q: %w", key, err)
		}
	}
	if !partLocked {
		// Where the part has no lock to keep, close before the rename,
		// which some systems refuse on an open file.
		closed = true
		if err := f.Close(); err != nil {
			return fmt.Errorf("blobs: put %q: %w", key, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := b.root.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("blobs: put %q: %w", key, err)
	}
	if err := b.publish(key, tmp, p); err != nil {
		return fmt.Errorf("blobs: put %q: %w", key, err)
	}
	published = true
	if !closed {
		// The lock was held through the rename: RemoveDebris never saw
		// this part unlocked. A close error cannot undo the rename, and
		// the bytes are fsynced (unless NoSync): reporting the put as
		// failed would leave an object its caller believes absent.
		closed = true
		_ = f.Close()
	}
	if !b.opts.NoSync {
		// Make the rename itself durable.
		if err := b.syncDir(dir); err != nil {
			return fmt.Errorf("blobs: put %q: %w", key, err)
		}
	}
	return nil
}

// maxPartAttempts bounds createPart's retries; each needs a RemoveDebris
// to unlink the new part in the instant before it is locked.
const maxPartAttempts = 8

// createPart creates a new upload part under tmp/ and takes its lock,
// which says to RemoveDebris "a live Put writes this"; the kernel drops it
// with the process, or when the part is closed.
func (b *FileBucket) createPart() (*os.File, string, error) {
	for attempt := 1; ; attempt++ {
		tmp := filepath.Join(fileTmpDir, rand.Text()+".part")
		f, err := b.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err != nil {
			return nil, "", err
		}
		if err := flock(f); err != nil {
			f.Close()
			b.root.Remove(tmp)
			return nil, "", err
		}
		// A RemoveDebris that took the lock before this Put did may have
		// unlinked the part (by a bucket clock far ahead): the lock then
		// guards nothing, so start again under a new name.
		held, err := f.Stat()
		if err != nil {
			f.Close()
			b.root.Remove(tmp)
			return nil, "", err
		}
		if now, err := b.root.Stat(tmp); err == nil && os.SameFile(held, now) {
			return f, tmp, nil
		}
		f.Close()
		if attempt == maxPartAttempts {
			return nil, "", fmt.Errorf("upload parts removed as debris %d times in a row", attempt)
		}
	}
}

// publish renames the finished upload tmp to p under the key's lock,
// stamping it first with the time of publication, not of the last write:
// an upload that wrote early and published late must not set back the
// ModTime of an object a capture has freshened meanwhile (see
// MemBucket.stamp), and under the lock the stamps follow the order of the
// renames and touches.
func (b *FileBucket) publish(key, tmp, p string) error {
	unlock, err := b.lock(key)
	if err != nil {
		return err
	}
	defer unlock()
	t := b.now()
	if err := b.root.Chtimes(tmp, t, t); err != nil {
		return err
	}
	return b.root.Rename(tmp, p)
}

func (b *FileBucket) syncDir(dir string) error {
	d, err := b.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete implements Bucket.
func (b *FileBucket) Delete(ctx context.Context, key string) error {
	p, err := keyPath(ctx, key)
	if err != nil {
		return err
	}
	if err := b.root.Remove(p); err != nil && !isMissing(err) {
		return fmt.Errorf("blobs: delete %q: %w", key, err)
	}
	return nil
}

// List implements Bucket.
func (b *FileBucket) List(ctx context.Context, prefix string) iter.Seq2[Object, error] {
	if err := ValidatePrefix(prefix); err != nil {
		return ErrSeq(err)
	}
	return func(yield func(Object, error) bool) {
		w := fileWalk{b: b, ctx: ctx, prefix: prefix, yield: yield}
		if err := w.walk(".", ""); err != nil && err != errStop {
			yield(Object{}, err)
		}
	}
}

// errStop ends a walk whose consumer stopped iterating.
var errStop = errors.New("stop")

type fileWalk struct {
	b      *FileBucket
	ctx    context.Context
	prefix string
	yield  func(Object, error) bool
	n      int
}

// overlaps reports whether some key starting with s can start with prefix.
func overlaps(s, prefix string) bool {
	return strings.HasPrefix(s, prefix) || strings.HasPrefix(prefix, s)
}

// readDir returns the entries of a bucket directory sorted by name; a
// missing one is empty.
func (w *fileWalk) readDir(dir string) ([]os.DirEntry, error) {
	f, err := w.b.root.Open(dir)
	if isMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// walk yields, in key order, the objects under the key directory dir (a
// path relative to the bucket) whose keys start with keyPrefix.
func (w *fileWalk) walk(dir, keyPrefix string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	// Key directories, ordered by the keys they hold: S+"/".
	dents, err := w.readDir(filepath.Join(dir, "d"))
	if err != nil {
		return err
	}
	subdirs := make([]string, 0, len(dents))
	for _, e := range dents {
		if e.IsDir() && overlaps(keyPrefix+e.Name()+"/", w.prefix) {
			subdirs = append(subdirs, e.Name()+"/")
		}
	}
	slices.Sort(subdirs)
	next := 0
	// descend walks every key directory whose keys sort before name.
	descend := func(name string, all bool) error {
		for ; next < len(subdirs) && (all || subdirs[next] < name); next++ {
			s := subdirs[next]
			if err := w.walk(filepath.Join(dir, "d", s[:len(s)-1]), keyPrefix+s); err != nil {
				return err
			}
		}
		return nil
	}

	fans, err := w.readDir(filepath.Join(dir, "o"))
	if err != nil {
		return err
	}
	for _, fan := range fans {
		start, err := hex.DecodeString(fan.Name())
		if err != nil || !fan.IsDir() || !overlaps(keyPrefix+string(start), w.prefix) {
			continue
		}
		fdir := filepath.Join(dir, "o", fan.Name())
		ents, err := w.readDir(fdir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := e.Name()
			key := keyPrefix + name
			if !strings.HasPrefix(key, w.prefix) || fanOut(name) != fan.Name() || !e.Type().IsRegular() {
				continue
			}
			if err := descend(name, false); err != nil {
				return err
			}
			if w.n++; w.n%256 == 0 {
				if err := w.ctx.Err(); err != nil {
					return err
				}
			}
			fi, err := e.Info()
			if isMissing(err) {
				continue // deleted since the directory was read
			}
			if err != nil {
				return err
			}
			if ValidateKey(key) != nil {
				continue // not written by this package
			}
			if !w.yield(Object{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil) {
				return errStop
			}
		}
	}
	return descend("", true)
}

// now is the time Put and Touch stamp objects with.
func (b *FileBucket) now() time.Time {
	if b.opts.Now != nil {
		return b.opts.Now()
	}
	return time.Now()
}

// Touch implements Toucher by setting the file's modification time. Unless
// NoSync is set, it fsyncs the file so that the new time survives a crash:
// a checkpoint appended after a touch must not find its blob old again.
func (b *FileBucket) Touch(ctx context.Context, key string) error {
	p, err := keyPath(ctx, key)
	if err != nil {
		return err
	}
	unlock, err := b.lock(key)
	if err != nil {
		return fmt.Errorf("blobs: touch %q: %w", key, err)
	}
	defer unlock()
	t := b.now()
	if err := b.root.Chtimes(p, t, t); err != nil {
		if isMissing(err) {
			return ErrNotFound
		}
		return fmt.Errorf("blobs: touch %q: %w", key, err)
	}
	if !b.opts.NoSync {
		f, err := b.root.Open(p)
		if isMissing(err) {
			return ErrNotFound // deleted right after the touch
		}
		if err != nil {
			return fmt.Errorf("blobs: touch %q: %w", key, err)
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("blobs: touch %q: %w", key, err)
		}
	}
	return nil
}

// DeleteOlder implements OlderDeleter: the ModTime check and the unlink
// happen under the key's lock, which Put (around its rename into place)
// and Touch take too, so neither can come between them. The lock is a
// flock on one of the bucket's lock files (locks/NN), so it holds across
// processes sharing the directory, plus a mutex for this process's
// goroutines. Readers take no lock: unlink and rename are atomic, so they
// see the object or its absence, never anything between.
func (b *FileBucket) DeleteOlder(ctx context.Context, key string, before time.Time) (bool, error) {
	p, err := keyPath(ctx, key)
	if err != nil {
		return false, err
	}
	unlock, err := b.lock(key)
	if err != nil {
		return false, fmt.Errorf("blobs: delete %q: %w", key, err)
	}
	defer unlock()
	fi, err := b.root.Stat(p)
	switch {
	case isMissing(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("blobs: delete %q: %w", key, err)
	case !fi.Mode().IsRegular() || !fi.ModTime().Before(before):
		return false, nil
	}
	if err := b.root.Remove(p); err != nil {
		if isMissing(err) {
			return false, nil
		}
		return false, fmt.Errorf("blobs: delete %q: %w", key, err)
	}
	return true, nil
}

// fileLockStripes is how many lock files a bucket spreads its keys over:
// enough that unrelated keys rarely wait on each other, few enough that a
// bucket holds few file descriptors.
const fileLockStripes = 16

// fileLockDir holds the lock files.
const fileLockDir = "locks"

// lockStripe serializes the writers of the keys that hash to it.
type lockStripe struct {
	mu sync.Mutex
	f  *os.File // opened on first use
}

// lock takes key's lock and returns its release.
func (b *FileBucket) lock(key string) (func(), error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	st := &b.stripes[h.Sum32()%fileLockStripes]
	st.mu.Lock()
	if st.f == nil {
		f, err := b.root.OpenFile(filepath.Join(fileLockDir, fmt.Sprintf("%02d", h.Sum32()%fileLockStripes)), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			st.mu.Unlock()
			return nil, err
		}
		st.f = f
	}
	if err := flock(st.f); err != nil {
		st.mu.Unlock()
		return nil, err
	}
	return func() {
		funlock(st.f)
		st.mu.Unlock()
	}, nil
}
