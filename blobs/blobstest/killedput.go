package blobstest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
)

// killedPutEnv names the file bucket a re-executed test binary streams
// its put into (see PutChild).
const killedPutEnv = "CKPTSTORE_BLOBSTEST_KILLED_PUT_DIR"

// KilledPutBytes is how many bytes the killed put has streamed when it is
// killed.
const KilledPutBytes = 64 << 10

// PutChild makes this test binary, when KillPutMidStream started it, the
// writer that gets killed: it opens the file bucket, starts a Put whose
// body yields KilledPutBytes and then never ends, says so on stdout, and
// waits for SIGKILL. Otherwise it returns at once. Call it first in the
// package's TestMain.
func PutChild() {
	dir := os.Getenv(killedPutEnv)
	if dir == "" {
		return
	}
	b, err := blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	err = b.Put(context.Background(), blobs.FilesPrefix+"sha256/killed", &stallingBody{n: KilledPutBytes})
	fmt.Println("put returned:", err) // it must not: the body never ends
	os.Exit(2)
}

// stallingBody yields n bytes, then reports on stdout that they are
// written (io.Copy writes each read before the next) and blocks forever.
type stallingBody struct{ n int }

func (s *stallingBody) Read(p []byte) (int, error) {
	if s.n == 0 {
		fmt.Println("streaming")
		for {
			// Asleep, not blocked: the runtime must not end the process as
			// deadlocked before the kill comes.
			time.Sleep(time.Hour)
		}
	}
	k := min(len(p), s.n)
	clear(p[:k])
	s.n -= k
	return k, nil
}

// KillPutMidStream re-executes the test binary (whose TestMain calls
// PutChild) as a process that streams a Put into the file bucket in dir,
// kills it with SIGKILL once KilledPutBytes are written, and returns the
// path of the part it left in dir/tmp.
func KillPutMidStream(t *testing.T, dir string) string {
	t.Helper()
	before := map[string]bool{}
	for _, p := range parts(t, dir) {
		before[p] = true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedPutEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "streaming\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the writer did not start streaming: %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if runtime.GOOS != "windows" && cmd.ProcessState.Exited() {
		// It ended on its own, not by the kill: not the crash under test.
		t.Fatalf("the writer exited (%v) before it was killed", cmd.ProcessState)
	}
	var left []string
	for _, p := range parts(t, dir) {
		if !before[p] {
			left = append(left, p)
		}
	}
	if len(left) != 1 {
		t.Fatalf("the killed put left parts %q, want one", left)
	}
	fi, err := os.Stat(left[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != KilledPutBytes {
		t.Fatalf("the killed put's part holds %d bytes, want %d", fi.Size(), KilledPutBytes)
	}
	return left[0]
}

// parts lists the upload parts in the file bucket in dir.
func parts(t *testing.T, dir string) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(dir, "tmp", "*.part"))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
