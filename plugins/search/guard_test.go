package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLiteralGuard(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr          string
		fold          bool
		before, after int
		complete      bool
	}{
		"runs around":           {`[A-Z]{5,}_[A-Z]+`, false, 5, 1, true},
		"exact repeats":         {`[0-9]{2}x[a-f]{3}`, false, 2, 3, true},
		"open repeat inside":    {`a[0-9]+_b`, false, 1, 0, false},
		"literal neighbours":    {`ab[cd]_e[fg]`, false, 0, 4, true},
		"a star":                {`_[a-z]*`, false, 0, 0, true},
		"an optional part":      {`[xy]?foo`, false, 0, 0, true},
		"an anchor":             {`^[A-Z]+_`, false, 1, 0, false},
		"a word boundary":       {`\b[a-z]_`, false, 1, 0, false},
		"any character":         {`._[a-z]`, false, 0, 1, false},
		"a group":               {`([A-Z]+)_(x)`, false, 1, 1, true},
		"an alternation":        {`(a|bc)_[d-f]`, false, 0, 1, false},
		"non-ASCII class":       {`[é-ü]_[d-f]`, false, 0, 1, false},
		"folded":                {`[a-c]_[D-F]`, true, 1, 1, true},
		"folded to non-ASCII":   {`[k]_[s]`, true, 0, 0, false},
		"too long":              {`[a-z]{40}_`, false, maxGuard, 0, false},
		"no literal":            {`[a-z]+`, false, 0, 0, false},
		"the literal in a plus": {`(ab)+[cd]`, false, 0, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			re := parseRegexp(t, tc.expr, tc.fold)
			lit, fold := requiredLiteral(re)
			g, complete := literalGuard(re, lit, fold)
			if len(g.before) != tc.before || len(g.after) != tc.after || complete != tc.complete {
				t.Errorf("literalGuard(%q) around %q: %d before, %d after, complete %v; want %d, %d, %v",
					tc.expr, string(lit), len(g.before), len(g.after), complete, tc.before, tc.after, tc.complete)
			}
		})
	}
}

// guardQueries are regexes whose literal has neighbours a guard can tell.
var guardQueries = []string{
	`[A-Z]{5,}_[A-Z]+`, `[AB]{2,}_[AB]+`, `[ab]{2}_`, `_[ab]*`, `[ab]?_`, `\d+_`, `_\d{2}`, `a[^b]_`, `a[\t ]+b`,
	`[ab]\s_`, `(?i)[ab]_[k]`, `(?i)k_s`, `(?i)AB_`, `^[ab]+_`, `_[ab]$`, `\b[ab]_`, `[ab]{40}_`, `([ab]+)_(a)`,
	`a[\n ]b`, `[^_]_[^_]`, `[ab]_[ab]_`, `x{2}_.`, `é[ab]_`, `[ab]_é`, `(?i)é_[ab]`, `_[ab]{1,3}a`,
	// Without a literal: runs.
	`[AB]{3,}[01]`, `[ab]{2}`, `\d{2,}`, `[AB]{4}`, `a{3,}`, `(?i)[ab]{3}`, `[^a]{3}`, `^[ab]{2,}$`, `\b[ab]{3}\b`, `([ab]{2})+x`, `[ab]{2,}\z`,
	`x[ab]{2,}[01]{2}`, `[ab]{2,}[b_]`, `[AB]{2,}[01]*x`, `[01]?[AB]{3,}`, `[AB ]{3,}[01]+`, `(?i)x[ab]{2,}_`,
}

// TestGuardsNeverChangeResults: the lines a matcher finds are the same
// with guards and without, and those that Go's regexp finds line by
// line, over random text rich in what the guards look at.
func TestGuardsNeverChangeResults(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "b", "A", "B", "_", "_", "k", "K", "\u212a", "s", "\u017f", " ", "\t", "\n", "\n", "\r", "é", "x", "0", "1"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(160) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		buf := []byte(sb.String())
		for _, q := range guardQueries {
			for _, fold := range []bool{false, true} {
				checkGuard(t, q, fold, buf)
			}
		}
	}
}

// checkGuard compares the lines found in buf with guards, without them,
// and by Go's regexp line by line.
func checkGuard(t *testing.T, query string, fold bool, buf []byte) {
	t.Helper()
	with, err := compileMatcher(query, true, fold, true)
	if err != nil {
		return
	}
	without, err := compileMatcher(query, true, fold, false)
	if err != nil {
		t.Fatalf("query %q: with guards it compiles, without: %v", query, err)
	}
	lines := func(m *matcher) []string {
		var got []string
		m.eachLine(buf, func(start, end int) bool {
			got = append(got, string(buf[start:end]))
			return true
		})
		return got
	}
	got, want := lines(with), lines(without)
	if !slices.Equal(got, want) {
		t.Fatalf("query %q (fold %v) in %q:\nwith guards    %q\nwithout guards %q", query, fold, buf, got, want)
	}
	if without.pre != nil {
		if ref := referenceLines(buf, query, true, fold); !slices.Equal(got, ref) {
			t.Fatalf("query %q (fold %v) in %q:\nmatcher %q\nregexp  %q", query, fold, buf, got, ref)
		}
	}
}

// FuzzGuard: whatever the regex and the text, guards change no line
// found.
func FuzzGuard(f *testing.F) {
	for _, q := range guardQueries {
		f.Add(q, "AAAAA_B\nxx_y\nABCDE_\n_ab a\tb a\nb", false)
	}
	f.Add(`(?i)[a-k]{2}K`, "ak\u212a AKK\n", true)
	f.Add(`[^a]{3}b`, "\n\nxb\nabcb", false)
	f.Fuzz(func(t *testing.T, query, text string, fold bool) {
		if len(query) > 100 || len(text) > 4096 || !utf8.ValidString(query) {
			return
		}
		checkGuard(t, query, fold, []byte(text))
	})
}

// TestByteRun: a run's next finds the first run of its length, as looking
// at every byte does, from any offset.
func TestByteRun(t *testing.T) {
	t.Parallel()
	var set byteSet
	for _, c := range []byte("ab") {
		set.add(c)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for range 2000 {
		buf := make([]byte, rng.IntN(60))
		for i := range buf {
			buf[i] = "abx\n"[rng.IntN(4)]
		}
		r := byteRun{set: set, n: 1 + rng.IntN(5)}
		from := rng.IntN(len(buf) + 1)
		want := -1
		for i := from; i+r.n <= len(buf) && want < 0; i++ {
			if strings.Trim(string(buf[i:i+r.n]), "ab") == "" {
				want = i
			}
		}
		if got := r.next(buf, from); got != want {
			t.Fatalf("run of %d from %d in %q: %d, want %d", r.n, from, buf, got, want)
		}
	}
}

func TestRequiredRun(t *testing.T) {
	t.Parallel()
	type run struct {
		n, before, after int
		complete         bool
	}
	for expr, want := range map[string]run{
		`[A-Z]{5,}[0-9]+`:   {5, 0, 1, true},
		`\d{2}x{3}`:         {3, 0, 0, false},
		`[a-z]+`:            {},
		`(?i)[k]{3}`:        {},
		`[é]{3}`:            {},
		`(ab){3}`:           {},
		`a|b{3}`:            {},
		`([0-9]{4})-`:       {4, 0, 0, false},
		`ab[A-Z]{2,}`:       {2, 2, 0, true},
		`[a-c]{2,}[c-e]`:    {2, 0, 0, false},
		`^[A-Z]{2,}[0-9]`:   {2, 0, 1, false},
		`x[A-Z]{2,}[0-9]?y`: {2, 1, 0, false},
	} {
		re := parseRegexp(t, expr, false)
		var got run
		if r := requiredRun(re); r != nil {
			got = run{r.n, len(r.guard.before), len(r.guard.after), r.complete}
		}
		if got != want {
			t.Errorf("requiredRun(%q) = %+v, want %+v", expr, got, want)
		}
	}
}
