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
	"github.com/ckptstore/ckptstore/storeurl"
)

const engineChildEnv = "CONFORMANCE_ENGINE_CHILD"

// TestRunEngine runs RunEngine on memstore tenants, and in child processes
// (a failing suite fails its test) on two broken engines, whose runs must
// fail: one whose Check reports a planted problem after every case, one
// whose tenants keep no persistence. Each child runs one short group of
// the suites, enough to see the failure.
func TestRunEngine(t *testing.T) {
	if os.Getenv(engineChildEnv) != "" {
		t.Skip("in a RunEngine child process")
	}
	conformance.RunEngine(t, memTenant(nil), conformance.EngineOptions{})
	for _, c := range []struct{ kind, run, want string }{
		{"broken-check", "^TestRunEngineChild$/^InstanceStore$", "Check: \"planted\": a problem"},
		{"no-persistence", "^TestRunEngineChild$/^Persistence$/^Metadata$", "the tenant has no persistence driver"},
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
	conformance.RunEngine(t, memTenant(func(ten *storeurl.Tenant) {
		switch kind {
		case "broken-check":
			ten.Store = ckptstore.New(brokenCheck{ten.Store.Driver()})
		case "no-persistence":
			ten.Persistence = nil
		}
	}), conformance.EngineOptions{})
}

// memTenant opens a fresh memstore tenant through storeurl, then lets
// breakIt change it.
func memTenant(breakIt func(*storeurl.Tenant)) conformance.OpenTenant {
	return func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
		o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ten, err := o.Namespace("conformance", lease)
		if err != nil {
			t.Fatal(err)
		}
		if breakIt != nil {
			breakIt(ten)
		}
		return ten
	}
}

// brokenCheck is a checkpoint driver whose Check always finds a problem.
type brokenCheck struct{ driver.Store }

func (brokenCheck) Check(context.Context) ([]driver.Problem, error) {
	return []driver.Problem{{Key: "planted", What: "a problem"}}, nil
}
