package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// killable is a ckptserver child process that a test kills with SIGKILL,
// as a crash would, and starts again at the same address.
type killable struct {
	bin  string
	args []string
	addr string // host:port: a free one at the first start, kept after
	url  string
	cmd  *exec.Cmd
	errs *logBuf // stderr of the current process
}

// startKillable runs bin with args (and --listen) and waits for its
// address line; the process is killed when the test ends.
func startKillable(t *testing.T, bin string, args ...string) *killable {
	t.Helper()
	k := &killable{bin: bin, args: args, addr: "127.0.0.1:0"}
	k.start(t)
	t.Cleanup(k.kill)
	return k
}

// start starts the process at k.addr.
func (k *killable) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(k.bin, append([]string{"--listen", k.addr}, k.args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.errs = &logBuf{}
	cmd.Stderr = k.errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.cmd = cmd
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		k.kill()
		t.Fatalf("ckptserver %v: no address line: %v\n%s", k.args, err, k.errs.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		k.kill()
		t.Fatalf("first line %q", line)
	}
	k.url = url
	k.addr = strings.TrimPrefix(url, "http://")
}

// kill sends SIGKILL and waits for the process to exit; it does nothing
// when none runs.
func (k *killable) kill() {
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Kill() // SIGKILL on Unix
	_ = k.cmd.Wait()
	k.cmd = nil
}

// killRun is the shape of a kill fault run: a streamstest.Producers run
// through srv in namespace ns, faulted once per entry of faults after
// every step appends, and checked after a last step.
func killRun(t *testing.T, srv *killable, ns, name string, step int64, faults []func()) streamstest.Report {
	t.Helper()
	run := streamstest.Producers{
		URL: srv.url + "/streams", Header: http.Header{"Ckpt-Namespace": {ns}}, Name: name,
		Streams: 2, PerStream: 6,
	}.Start(t)
	n := int64(0)
	for i, fault := range append(faults, nil) {
		n += step
		if err := run.WaitAcked(n, time.Minute); err != nil {
			run.Stop()
			t.Fatalf("before fault %d: %v\nckptserver's log:\n%s", i, err, srv.errs.String())
		}
		if fault != nil {
			fault()
		}
	}
	rep := run.Check(t, run.Stop())
	if rep.DuplicatesFound != 0 {
		t.Errorf("%d appends stored twice", rep.DuplicatesFound)
	}
	return rep
}

// serverKills is how many times a kill run kills its ckptserver: 3, or
// $CKPT_STREAMS_KILLS for a longer run.
func serverKills(t *testing.T) int {
	t.Helper()
	v := os.Getenv("CKPT_STREAMS_KILLS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("CKPT_STREAMS_KILLS=%q: want a count of kills, at least 1", v)
	}
	return n
}

// TestStreamsKillRedis is the producer fault run on a redis-server with
// appendonly yes and appendfsync always, through a real ckptserver
// process: 12 producers append to 2 streams while the ckptserver is
// killed with SIGKILL and restarted (3 times, or $CKPT_STREAMS_KILLS),
// and after every third kill the redis-server too (restarted from its
// AOF). Every acknowledged append is stored once, at its acknowledged
// offset, in seq order; the cut appends are retried.
func TestStreamsKillRedis(t *testing.T) {
	r := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	if got, err := r.Client(t, nil).ConfigGet(context.Background(), "appendfsync").Result(); err != nil || got["appendfsync"] != "always" {
		t.Fatalf("appendfsync = %v, %v: want always", got, err)
	}
	srv := startKillable(t, ckptserverBinary(t), "--dev", "--store", "redis://"+r.Addr+"/0?prefix=kill")
	var faults []func()
	redisKills := 0
	for i := range serverKills(t) {
		faults = append(faults, func() {
			srv.kill()
			srv.start(t)
		})
		if i%3 == 2 {
			redisKills++
			faults = append(faults, func() {
				r.Kill()
				r.Restart(t)
			})
		}
	}
	rep := killRun(t, srv, "kill", "redis", 300, faults)
	t.Logf("kills: %d of ckptserver, %d of redis-server (AOF always); %v", len(faults)-redisKills, redisKills, rep)
	if rep.Failures["cut"] == 0 {
		t.Errorf("no append was cut by a kill: the kills did not land mid-append")
	}
}
