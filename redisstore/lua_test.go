package redisstore

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	rawIndex  = regexp.MustCompile(`\b(KEYS|ARGV)\[\s*\d`)
	namedUse  = regexp.MustCompile(`\b([KA])\.([A-Za-z_]\w*)`)
	prologued = regexp.MustCompile(`(\w+) = (KEYS|ARGV)\[(\d+)\]|(\w+) = (\d+)`)
)

// Every script's body names its parameters (K.x, A.y) and never indexes
// KEYS or ARGV by a literal; every name it uses is a field of its struct,
// every field is used, and the prologue maps the struct's fields, in
// order, onto exactly the KEYS and ARGV that build fills.
func TestScriptParameters(t *testing.T) {
	if len(allScripts) < 13 {
		t.Fatalf("%d scripts registered, want every script", len(allScripts))
	}
	for _, sc := range allScripts {
		t.Run(sc.name, func(t *testing.T) {
			if m := rawIndex.FindString(sc.body); m != "" {
				t.Errorf("the body indexes %s… by number; use the named parameters", m)
			}
			declared := map[string]bool{}
			var keys, args []string
			rest := ""
			for _, p := range params(sc.params) {
				kind := "A"
				if p.isKey {
					kind = "K"
					keys = append(keys, p.name)
				} else {
					args = append(args, p.name)
				}
				if p.rest {
					rest = p.name
				}
				declared[kind+"."+p.name] = true
			}
			used := map[string]bool{}
			for _, m := range namedUse.FindAllStringSubmatch(sc.body, -1) {
				n := m[1] + "." + m[2]
				used[n] = true
				if !declared[n] {
					t.Errorf("the body uses %s, which %v does not fill", n, sc.params)
				}
			}
			for n := range declared {
				if !used[n] {
					t.Errorf("%v fills %s, which the body never uses", sc.params, n)
				}
			}
			if rest != "" && !strings.Contains(sc.body, "ARGV[") {
				t.Errorf("the rest parameter %s is never read from ARGV", rest)
			}
			// The prologue: the i-th key field is KEYS[i], the j-th other
			// field ARGV[j] (or, for the rest, the index j itself).
			var gotKeys, gotArgs []string
			for _, m := range prologued.FindAllStringSubmatch(sc.prologue, -1) {
				switch {
				case m[2] == "KEYS":
					if n, _ := strconv.Atoi(m[3]); n != len(gotKeys)+1 {
						t.Errorf("prologue: %s = KEYS[%d], want KEYS[%d]", m[1], n, len(gotKeys)+1)
					}
					gotKeys = append(gotKeys, m[1])
				case m[2] == "ARGV":
					if n, _ := strconv.Atoi(m[3]); n != len(gotArgs)+1 {
						t.Errorf("prologue: %s = ARGV[%d], want ARGV[%d]", m[1], n, len(gotArgs)+1)
					}
					gotArgs = append(gotArgs, m[1])
				default:
					if n, _ := strconv.Atoi(m[5]); m[4] != rest || n != len(gotArgs)+1 {
						t.Errorf("prologue: %s = %d, want the rest %q at %d", m[4], n, rest, len(gotArgs)+1)
					}
					gotArgs = append(gotArgs, m[4])
				}
			}
			if !slices.Equal(gotKeys, keys) || !slices.Equal(gotArgs, args) {
				t.Errorf("prologue names KEYS %q and ARGV %q, the struct %q and %q", gotKeys, gotArgs, keys, args)
			}
		})
	}
}

// build fills one KEYS entry per key field and one ARGV entry per other
// field, in field order, and spreads the rest at the end.
func TestBuildFillsEveryParameter(t *testing.T) {
	k, a := build(pruneBatchArgs{Thread: "t", List: "l", Refs: "r", RefKeys: "rk", Op: "o",
		TTL: "1", Now: "2", Token: "tok", Fence: "3", ThreadID: "th", CP: "c:", IDs: []any{"x", "y"}})
	if want := []string{"t", "l", "r", "rk", "o"}; !slices.Equal(k, want) {
		t.Fatalf("KEYS %q, want %q", k, want)
	}
	want := []any{"1", "2", "tok", "3", "th", "c:", "x", "y"}
	if !slices.Equal(a, want) {
		t.Fatalf("ARGV %q, want %q", a, want)
	}
	_, a = build(forkArgs{WriterMatches: true})
	if a[7] != "1" {
		t.Fatalf("a true bool is ARGV %q, want \"1\"", a[7])
	}
	_, a = build(pruneArgs{Keep: 12})
	if a[5] != "12" {
		t.Fatalf("an int is ARGV %q, want \"12\"", a[5])
	}
	for _, sc := range allScripts {
		var nk, na int
		for _, p := range params(sc.params) {
			if p.isKey {
				nk++
			} else if !p.rest {
				na++
			}
		}
		if nk == 0 {
			t.Errorf("%s has no KEYS: a cluster could not route it", sc.name)
		}
		if c := strings.Count(sc.prologue, "KEYS["); c != nk {
			t.Errorf("%s: the prologue reads %d KEYS, the struct has %d", sc.name, c, nk)
		}
		if c := strings.Count(sc.prologue, "ARGV["); c != na {
			t.Errorf("%s: the prologue reads %d ARGV, the struct has %d", sc.name, c, na)
		}
	}
}
