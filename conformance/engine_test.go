package conformance_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
)

const engineChildEnv = "CONFORMANCE_ENGINE_CHILD"

// TestRunEngine runs RunEngine on memstore tenants, and in child processes
// (a failing suite fails its test) on broken engines, whose runs must
// fail: one whose Check reports a planted problem after every case, one
// whose tenants keep no persistence, one whose tenants lost their streams,
// one whose streams go untested (EngineOptions.Streams unset), one whose
// stream driver holds a leaked stream that only streams.Check sees, and
// one whose peer does. Each child runs one short group of the suites,
// enough to see the failure.
func TestRunEngine(t *testing.T) {
	if os.Getenv(engineChildEnv) != "" {
		t.Skip("in a RunEngine child process")
	}
	conformance.RunEngine(t, memTenant(nil), conformance.EngineOptions{Streams: true})
	for _, c := range []struct{ kind, run, want string }{
		{"broken-check", "^TestRunEngineChild$/^InstanceStore$", "Check: \"planted\": a problem"},
		{"no-persistence", "^TestRunEngineChild$/^Persistence$/^Metadata$", "the tenant has no persistence driver"},
		{"no-streams", "^TestRunEngineChild$/^InstanceStore$", "the tenant has no stream driver"},
		{"streams-untested", "^TestRunEngineChild$/^InstanceStore$", "EngineOptions.Streams is false"},
		{"leaked-stream", "^TestRunEngineChild$/^Streams$/^AppendRead$", "streams.Check: " + leaked + ": soft-deleted, and no fork reads it"},
		{"leaked-peer", "^TestRunEngineChild$/^StreamsPort$/^ToPeer$", "the peer's streams.Check: " + leaked + ": soft-deleted"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run="+c.run)
		cmd.Env = append(os.Environ(), engineChildEnv+"="+c.kind)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("%s: the suites passed (err %v); RunEngine must fail them.\n%s", c.kind, err, tail(out))
			continue
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s: the failure does not say %q:\n%s", c.kind, c.want, tail(out))
		}
	}
}

// TestRunEngineChild runs RunEngine on the broken engine the environment
// names.
func TestRunEngineChild(t *testing.T) {
	kind := os.Getenv(engineChildEnv)
	if kind == "" {
		t.Skip("only runs as a child of TestRunEngine")
	}
	o := conformance.EngineOptions{Streams: kind != "streams-untested"}
	if kind == "leaked-peer" {
		o.StreamsPeer = func(t *testing.T) streams.Driver {
			d := memstore.NewStreams()
			leak(t, d)
			return d
		}
	}
	conformance.RunEngine(t, memTenant(func(t *testing.T, ten *storeurl.Tenant) {
		switch kind {
		case "broken-check":
			ten.Store = ckptstore.New(brokenCheck{ten.Store.Driver()})
		case "no-persistence":
			ten.Persistence = nil
		case "no-streams":
			ten.Streams = nil
		case "leaked-stream":
			leak(t, ten.Streams)
		}
	}), o)
}

// leaked is the name of the stream leak plants.
const leaked = streams.NamelessPrefix + "1"

// leak loads into d a soft-deleted stream that no fork reads: its data
// is leaked, which streams.Check reports and no suite case looks at.
func leak(t *testing.T, d streams.Driver) {
	t.Helper()
	rec := &streams.StreamRecord{Name: leaked, ContentType: "text/plain", Deleted: true}
	if _, err := streams.Load(context.Background(), d.(streams.Porter), []streams.Record{{Stream: rec}}); err != nil {
		t.Fatal(err)
	}
}

// memTenant opens a fresh memstore tenant through storeurl, then lets
// breakIt change it.
func memTenant(breakIt func(*testing.T, *storeurl.Tenant)) conformance.OpenTenant {
	return func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
		ten := conformance.OpenURL("mem")(t, lease)
		if breakIt != nil {
			breakIt(t, ten)
		}
		return ten
	}
}

// brokenCheck is a checkpoint driver whose Check always finds a problem.
type brokenCheck struct{ driver.Store }

func (brokenCheck) Check(context.Context) ([]driver.Problem, error) {
	return []driver.Problem{{Key: "planted", What: "a problem"}}, nil
}
