package main

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRequiredLiteral(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		expr string
		fold bool
		want string
		// wantFold is whether the literal is matched ignoring case.
		wantFold bool
	}{
		"literal":             {"func main", false, "func main", false},
		"longest of a concat": {`func \w+Handler`, false, "Handler", false},
		"a capture":           {`(hello)\s+`, false, "hello", false},
		"a plus":              {`(abc)+x`, false, "abc", false},
		"a repeat":            {`(abcd){2,3}`, false, "abcd", false},
		"an optional part":    {`(abcdef)?xy`, false, "xy", false},
		"a star":              {`(abcdef)*`, false, "", false},
		"one byte":            {`[A-Z]+_\d`, false, "_", false},
		"an alternation":      {`foo|bar`, false, "", false},
		"no literal":          {`\d+`, false, "", false},
		"folded":              {`hello\s`, true, "HELLO", true},
		"folded in the query": {`(?i)hello`, false, "HELLO", true},
		"non-ASCII folded":    {`(?i)école\d`, false, "COLE", true},
		"only non-ASCII":      {`(?i)éà\d`, false, "", false},
		"non-ASCII exact":     {`école\d`, false, "école", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			re := parseRegexp(t, tc.expr, tc.fold)
			lit, fold := requiredLiteral(re)
			if f := fold && len(lit) > 0; string(lit) != tc.want || f != tc.wantFold {
				t.Errorf("requiredLiteral(%q) = %q, fold %v; want %q, %v", tc.expr, string(lit), f, tc.want, tc.wantFold)
			}
		})
	}
}

// TestMatcherAgainstRegexp compares the matcher's lines with those that
// Go's regexp finds line by line, over random text that is rich in the
// cases that need care: letters of both cases, the Kelvin sign and the
// long s (which fold to k and s), line ends at every place.
func TestMatcherAgainstRegexp(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "b", "A", "B", "k", "K", "\u212a", "s", "S", "\u017f", " ", "\n", "\n", "\r", "é", "É", "x", "0", "1", ".", "_"}
	queries := []struct {
		query string
		regex bool
	}{
		{"ab", false}, {"a", false}, {"kas", false}, {"sk", false}, {"é", false}, {"a.b", false}, {"ab ba", false},
		{"bbb", false}, {"x", false}, {"0x", false}, {"éab", false}, {"Éé", false},
		{`a\s*b`, true}, {`^a`, true}, {`b$`, true}, {`k+s`, true}, {`[ab]{2}`, true}, {`a.b`, true},
		{`(ab|ba)x`, true}, {`x*`, true}, {`\bab\b`, true}, {`s\s+k`, true}, {`\d\d`, true}, {`^$`, true}, {`é.`, true}, {`[ab]_\w`, true}, {`x?_`, true},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(120) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		buf := []byte(sb.String())
		for _, q := range queries {
			for _, fold := range []bool{false, true} {
				m, err := newMatcher(q.query, q.regex, fold)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				m.eachLine(buf, func(start, end int) bool {
					got = append(got, string(buf[start:end]))
					return true
				})
				if want := referenceLines(buf, q.query, q.regex, fold); !slices.Equal(got, want) {
					t.Fatalf("query %q (regex %v, fold %v) in %q:\ngot  %q\nwant %q", q.query, q.regex, fold, buf, got, want)
				}
			}
		}
	}
}

// referenceLines is what the matcher should find: the lines (without
// their "\n") that the expression matches, one at a time.
func referenceLines(buf []byte, query string, isRegex, fold bool) []string {
	expr := query
	if !isRegex {
		expr = regexp.QuoteMeta(query)
	}
	if fold {
		expr = "(?i)" + expr
	}
	re := regexp.MustCompile(expr)
	lines := bytes.Split(buf, []byte("\n"))
	if len(buf) == 0 || buf[len(buf)-1] == '\n' {
		lines = lines[:len(lines)-1]
	}
	var out []string
	for _, l := range lines {
		if re.Match(l) {
			out = append(out, string(l))
		}
	}
	return out
}

func TestFinderFold(t *testing.T) {
	t.Parallel()
	f := newFinder([]byte("ErrOrs.NeW"), true)
	buf := []byte("x errors.new ERRORS.NEW errors-new Errors.New")
	s := scanner{f: f, buf: buf, lo: -2, up: -2}
	var got []int
	for from := 0; ; {
		i := s.next(from)
		if i < 0 {
			break
		}
		got = append(got, i)
		from = i + 1
	}
	if want := []int{2, 13, 35}; !slices.Equal(got, want) {
		t.Errorf("fold finder offsets = %v, want %v", got, want)
	}
}

// TestIndexRare: indexRare finds what bytes.Index finds, whichever byte
// it looks for first.
func TestIndexRare(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		s := make([]byte, rng.IntN(300))
		for i := range s {
			s[i] = "abcm "[rng.IntN(5)]
		}
		lit := make([]byte, 1+rng.IntN(5))
		for i := range lit {
			lit[i] = "abcm "[rng.IntN(5)]
		}
		want := bytes.Index(s, lit)
		for rare := range lit {
			if got := indexRare(s, lit, rare); got != want {
				t.Fatalf("indexRare(%q, %q, %d) = %d, want %d", s, lit, rare, got, want)
			}
		}
	}
}
