package difftest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// TestDifferentialNamespaces opens namespaces at and around the bounds on
// every engine: a name is taken or refused alike in process (storeurl)
// and through HTTP (the client's check and the handler's). Only taken or
// refused is compared (N6): a refusal is a configuration error of its
// layer (storeurl.ErrBadURL in process, the client's error through
// HTTP), not a contract error with a sentinel and a code. The empty name
// is left out: through HTTP it means the server's default namespace.
func TestDifferentialNamespaces(t *testing.T) {
	engines := openEngines(t)
	names := []struct{ label, name string }{
		{"short", "ns-short"},
		{"256", strings.Repeat("n", 256)},
		{"257", strings.Repeat("n", 257)},
		{"max-id", strings.Repeat("m", driver.MaxIDBytes)},
		{"max-id+1", strings.Repeat("m", driver.MaxIDBytes+1)},
		{"2byte-max-id", strings.Repeat("é", driver.MaxIDBytes/2)},
		{"invalid-utf8", "ns\xff"},
		{"nul-braces-glob", "a\x00{b}*"},
	}
	for _, n := range names {
		var first string
		var outs []string
		for _, e := range engines {
			got := "taken"
			if err := e.tryNamespace(n.name); err != nil {
				got = "refused: " + clip(err.Error())
			}
			outs = append(outs, fmt.Sprintf("%-11s %s", e.name, got))
			got, _, _ = strings.Cut(got, ":")
			if first == "" {
				first = got
			} else if got != first {
				first = "differ"
			}
		}
		if first == "differ" {
			t.Errorf("namespace %s (%d bytes): the engines disagree:\n  %s", n.label, len(n.name), strings.Join(outs, "\n  "))
		}
	}
}
