package difftest_test

// The divergences that are known and not fixed yet. Each names the steps,
// the engines that are wrong (only they may differ from the reference),
// and why, against docs/contract.md and docs/persistence.md. The test logs
// each one every time it is seen, and fails when one is no longer seen in
// the written script, so that this list stays true.

import (
	"regexp"
	"slices"
	"strings"
)

// known is one known divergence.
type known struct {
	// name identifies the entry in logs and reports.
	name string
	// steps are patterns of the step names it covers, in which * stands
	// for any text, slashes included.
	steps []string
	// engines are the engines that give the wrong outcome.
	engines []string
	// messageOnly limits the entry to outcomes that agree on everything
	// but the message: the same error sentinel and the same wire code.
	messageOnly bool
	// when, if set, limits the entry further: it must hold of the wrong
	// outcome got and the reference's ref (both as rendered).
	when func(got, ref string) bool
	// reason says which outcome is right, and why, and what the fix is.
	reason string
}

// knownDivergences is empty: every divergence the test has found is fixed.
// A new entry names its engines (e.g. "redis", "http/redis").
var knownDivergences = []known{}

// explains reports whether k explains engine e's outcome got against the
// reference ref at step name.
func (k *known) explains(name, e, got, ref string) bool {
	if !slices.Contains(k.engines, e) || k.messageOnly && errorHead(got) != errorHead(ref) || k.when != nil && !k.when(got, ref) {
		return false
	}
	for _, p := range k.steps {
		if match(p, name) {
			return true
		}
	}
	return false
}

// knownFor returns the entries of knownDivergences that explain d, or nil
// when some diverging engine is explained by none.
func knownFor(d *divergence) []*known {
	var out []*known
	for j, e := range d.envs {
		got, ref := d.outs[j].text, d.outs[d.ref[j]].text
		if got == ref {
			continue
		}
		found := false
		for i := range knownDivergences {
			k := &knownDivergences[i]
			if k.explains(d.step.name, e.name, got, ref) {
				found = true
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// errorHead is a rendered error without its message ("error <sentinel>
// code=<code>"), or "" for a result.
func errorHead(text string) string {
	if !strings.HasPrefix(text, "error ") {
		return ""
	}
	head, _, _ := strings.Cut(text, ":")
	return head
}

// match reports whether name matches pattern, in which each * stands for
// any text.
func match(pattern, name string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(name)
}
