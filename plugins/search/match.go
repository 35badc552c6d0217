package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher finds the lines of a buffer that match a query. It never runs a
// regular expression on a whole file when it can avoid it: a literal that
// every match contains (the whole query, for literal searches) is found
// first with a byte search, the bytes around it checked against what the
// regex requires there (its guard), and the expression runs only on the
// lines where both hold.
type matcher struct {
	// pre is a literal that every matching line contains; nil when the
	// query has none worth searching for.
	pre *finder
	// re decides on the lines that hold pre, or searches the whole buffer
	// when pre is nil. It is nil when pre is the query itself.
	re *regexp.Regexp
	// hazards are the UTF-8 encodings of the non-ASCII letters that fold
	// to an ASCII letter of a case-insensitive pre (the Kelvin sign for k,
	// the long s for s), which pre's ASCII folding does not see: the lines
	// that hold one are candidates too, decided by slow.
	hazards [][]byte
	slow    *regexp.Regexp
	// lineLocal is true when whether a line matches depends on the line
	// alone, and not on where the buffer it is searched in starts or
	// ends: eachLine finds the same lines in any run of whole lines of a
	// file as in the file whole. Only \A and \z tell a buffer's ends
	// from a line's.
	lineLocal bool
	// guard is what the bytes around pre must be for a match (see
	// guard); when it says all the regex says, re is nil.
	guard guard
	// run, when pre is nil, is a run of bytes that every match holds:
	// only the lines that hold one are candidates (see byteRun).
	run *byteRun
}

// newMatcher compiles a query: a literal unless isRegex, in RE2 syntax
// otherwise, matched case-insensitively (Unicode simple folding, like
// ripgrep's -i) when fold.
func newMatcher(query string, isRegex, fold bool) (*matcher, error) {
	return compileMatcher(query, isRegex, fold, true)
}

// compileMatcher is newMatcher, with guards only if guarded: tests
// compare.
func compileMatcher(query string, isRegex, fold, guarded bool) (*matcher, error) {
	if query == "" {
		return nil, errors.New("query is empty")
	}
	expr := query
	if !isRegex {
		if strings.ContainsAny(query, "\r\n") {
			return nil, errors.New("query contains a line break: search_text matches one line at a time")
		}
		expr = regexp.QuoteMeta(query)
	}
	flags := syntax.Perl
	prefix := "(?m)"
	if fold {
		flags |= syntax.FoldCase
		prefix = "(?mi)"
	}
	parsed, err := syntax.Parse(expr, flags)
	if err != nil {
		return nil, regexError(query, err)
	}
	if isRegex && matchesNewline(parsed) {
		return nil, fmt.Errorf(`invalid regex %q: a line break (\n) is not allowed: search_text matches one line at a time`, query)
	}
	re, err := regexp.Compile(prefix + expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v", query, err)
	}
	m := &matcher{re: re}
	if multi, err := syntax.Parse(prefix+expr, flags); err == nil {
		m.lineLocal = !hasTextAnchor(multi)
	}
	lit, litFold := requiredLiteral(parsed)
	whole := parsed.Op == syntax.OpLiteral && len(lit) == len(parsed.Rune)
	var g guard
	complete := false
	if guarded {
		g, complete = literalGuard(parsed, lit, litFold)
	}
	if len(lit) == 0 || (len(lit) == 1 && !whole && g.empty() && (litFold || lit[0] >= utf8.RuneSelf || byteRank[lit[0]] > rareEnough)) {
		// Nothing to look for, or a byte so common that looking for it
		// first would cost more than it saves (unless a guard makes
		// each place it is found cheap to pass by). A run of bytes that
		// every match holds may do instead, where the lines are decided
		// one by one anyway.
		if guarded && m.lineLocal {
			m.run = requiredRun(parsed)
		}
		return m, nil
	}
	m.pre = newFinder([]byte(string(lit)), litFold)
	m.guard = g
	// Each line holding the literal is decided on its own.
	m.lineLocal = true
	if whole || complete {
		m.re = nil
	}
	if litFold {
		m.hazards = foldHazards(lit)
		m.slow = re
	}
	return m, nil
}

// matchesNewline reports whether re requires a line break somewhere: a
// literal "\n", or a class of it alone. A line never holds one, so such
// a regex could only match across lines, which search_text does not do.
// Classes that hold more than the line break (\s, [^a]) stay: within a
// line they match the rest.
func matchesNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		return len(re.Rune) == 2 && re.Rune[0] == '\n' && re.Rune[1] == '\n'
	}
	for _, sub := range re.Sub {
		if matchesNewline(sub) {
			return true
		}
	}
	return false
}

// hasTextAnchor reports whether re holds \A or \z (or ^ or $ made to
// mean them with (?-m)).
func hasTextAnchor(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	return slices.ContainsFunc(re.Sub, hasTextAnchor)
}

// any reports whether eachLine finds a line in buf.
func (m *matcher) any(buf []byte) bool {
	found := false
	m.eachLine(buf, func(int, int) bool {
		found = true
		return false
	})
	return found
}

// rareEnough is the most common byte (by byteRank) that is worth looking
// for alone before running a regular expression: rarer than ".".
const rareEnough = 234

// eachLine calls fn with the start and end (the offset of its "\n", or
// len(buf)) of every matching line of buf, in order, until fn returns
// false.
func (m *matcher) eachLine(buf []byte, fn func(start, end int) bool) {
	if m.pre == nil {
		if m.run != nil {
			m.eachRunLine(buf, fn)
			return
		}
		m.eachRegexLine(buf, fn)
		return
	}
	hazards := m.hazardLines(buf)
	s := scanner{f: m.pre, buf: buf, lo: -2, up: -2}
	guarded := !m.guard.empty()
	for from := 0; from < len(buf); {
		start, end := len(buf)+1, len(buf)
		off := s.next(from)
		for guarded && off >= 0 && !m.guard.holds(buf, off, len(m.pre.lit)) {
			off = s.next(off + 1)
		}
		if off >= 0 {
			start, end = lineAt(buf, off)
		}
		// The lines before that one that only a hazard makes candidates.
		for len(hazards) > 0 && hazards[0] < start {
			hs := hazards[0]
			hazards = hazards[1:]
			if hs < from {
				continue
			}
			_, he := lineAt(buf, hs)
			if m.slow.Match(buf[hs:he]) && !fn(hs, he) {
				return
			}
			from = he + 1
		}
		if start > len(buf) {
			return
		}
		if m.re == nil || m.re.Match(buf[start:end]) {
			if !fn(start, end) {
				return
			}
		}
		from = end + 1
	}
}

// hazardLines returns the starts of the lines of buf that hold a hazard,
// in order.
func (m *matcher) hazardLines(buf []byte) []int {
	var starts []int
	for _, h := range m.hazards {
		for from := 0; from < len(buf); {
			i := bytes.Index(buf[from:], h)
			if i < 0 {
				break
			}
			start, end := lineAt(buf, from+i)
			starts = append(starts, start)
			from = end + 1
		}
	}
	if len(m.hazards) > 1 {
		slices.Sort(starts)
		starts = slices.Compact(starts)
	}
	return starts
}

// eachRegexLine is eachLine without a literal to look for.
func (m *matcher) eachRegexLine(buf []byte, fn func(start, end int) bool) {
	for from := 0; from <= len(buf); {
		loc := m.re.FindIndex(buf[from:])
		if loc == nil {
			return
		}
		off := from + loc[0]
		if off == len(buf) && (off == 0 || buf[off-1] == '\n') {
			// The empty "line" after the final newline is no line.
			return
		}
		// The match may run across lines: the line it starts in decides.
		start, end := lineAt(buf, off)
		if m.re.Match(buf[start:end]) {
			if !fn(start, end) {
				return
			}
		}
		from = end + 1
	}
}

// eachRunLine is eachLine without a literal but with a run to look for:
// the regex decides on each line that holds one. It finds the lines that
// eachRegexLine does when the matcher is lineLocal: both find the lines
// the regex matches on their own.
func (m *matcher) eachRunLine(buf []byte, fn func(start, end int) bool) {
	for from := 0; from < len(buf); {
		at := m.run.next(buf, from)
		if at < 0 {
			return
		}
		start, end := lineAt(buf, at)
		if (m.run.complete || m.re.Match(buf[start:end])) && !fn(start, end) {
			return
		}
		from = end + 1
	}
}

// lineAt returns the bounds of the line holding buf[off].
func lineAt(buf []byte, off int) (start, end int) {
	start = bytes.LastIndexByte(buf[:off], '\n') + 1
	if i := bytes.IndexByte(buf[off:], '\n'); i >= 0 {
		return start, off + i
	}
	return start, len(buf)
}

// finder searches for a literal, exactly or with ASCII case folding.
type finder struct {
	lit  []byte // lower-cased when fold
	fold bool
	// rare is the index in lit of its rarest byte, which a folding search
	// looks for first, in both cases: rareLo and rareUp.
	rare           int
	rareLo, rareUp byte
}

func newFinder(lit []byte, fold bool) *finder {
	f := &finder{lit: lit, fold: fold}
	if !fold {
		for i, c := range lit {
			if byteRank[c] < byteRank[lit[f.rare]] {
				f.rare = i
			}
		}
		return f
	}
	f.lit = bytes.ToLower(lit)
	best := -1
	for i, c := range f.lit {
		score := int(byteRank[c]) + int(byteRank[upper(c)])
		if best < 0 || score < best {
			best, f.rare = score, i
		}
	}
	f.rareLo, f.rareUp = f.lit[f.rare], upper(f.lit[f.rare])
	return f
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// scanner finds a finder's literal in one buffer, keeping the positions of
// the rare byte it has found ahead between calls.
type scanner struct {
	f      *finder
	buf    []byte
	lo, up int // the next rareLo and rareUp at or after the last search; -1 for none, -2 for unknown
}

// next returns the offset of the literal's first occurrence at or after
// from, or -1.
func (s *scanner) next(from int) int {
	f, buf := s.f, s.buf
	if !f.fold {
		i := indexRare(buf[from:], f.lit, f.rare)
		if i < 0 {
			return -1
		}
		return from + i
	}
	n := len(f.lit)
	start := from + f.rare           // where the rare byte can first be
	end := len(buf) - n + f.rare + 1 // and where it can no longer be
	for start < end {
		s.lo = nextByte(buf, start, end, f.rareLo, s.lo)
		p := s.lo
		if f.rareUp != f.rareLo {
			s.up = nextByte(buf, start, end, f.rareUp, s.up)
			if p < 0 || (s.up >= 0 && s.up < p) {
				p = s.up
			}
		}
		if p < 0 {
			return -1
		}
		if at := p - f.rare; equalFoldASCII(buf[at:at+n], f.lit) {
			return at
		}
		start = p + 1
	}
	return -1
}

// indexRare is bytes.Index(s, lit), looking for lit[rare], its rarest
// byte, first, as ripgrep does: bytes.Index looks for the first byte,
// which in "func main" is ten times as common as "m". After many
// candidates that are not lit, it leaves the rest to bytes.Index, as
// bytes.Index itself does before its vectorized search.
func indexRare(s, lit []byte, rare int) int {
	n := len(lit)
	if n <= 1 || len(s) < 64 {
		return bytes.Index(s, lit)
	}
	c := lit[rare]
	fails := 0
	for i := 0; i+n <= len(s); {
		j := bytes.IndexByte(s[i+rare:len(s)-n+rare+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if bytes.Equal(s[i:i+n], lit) {
			return i
		}
		i++
		if fails++; fails > 4+i>>4 {
			if k := bytes.Index(s[i:], lit); k >= 0 {
				return i + k
			}
			return -1
		}
	}
	return -1
}

// nextByte returns the offset of the first c in buf[start:end], reusing
// known when it is still ahead (or known to be absent).
func nextByte(buf []byte, start, end int, c byte, known int) int {
	if known == -1 || known >= start {
		if known >= end {
			return -1
		}
		return known
	}
	i := bytes.IndexByte(buf[start:end], c)
	if i < 0 {
		return -1
	}
	return start + i
}

// equalFoldASCII reports whether s equals lower, an ASCII lower-case
// string, folding s's ASCII letters.
func equalFoldASCII(s, lower []byte) bool {
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// foldHazards returns the UTF-8 encodings of the non-ASCII runes that fold
// to a rune of lit.
func foldHazards(lit []rune) [][]byte {
	var out [][]byte
	seen := map[rune]bool{}
	for _, r := range lit {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf && !seen[f] {
				seen[f] = true
				out = append(out, utf8.AppendRune(nil, f))
			}
		}
	}
	return out
}

// requiredLiteral returns the longest literal that every match of re
// contains, and whether it is matched case-insensitively; a literal
// matched case-insensitively is ASCII.
func requiredLiteral(re *syntax.Regexp) (lit []rune, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return re.Rune, false
		}
		return longestASCII(re.Rune), true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			l, f := requiredLiteral(sub)
			if len(l) > len(lit) || (len(l) == len(lit) && fold && !f) {
				lit, fold = l, f
			}
		}
	}
	return lit, fold
}

// longestASCII returns the longest run of ASCII runes in rs.
func longestASCII(rs []rune) []rune {
	var best []rune
	start := 0
	for i := 0; i <= len(rs); i++ {
		if i == len(rs) || rs[i] >= utf8.RuneSelf {
			if i-start > len(best) {
				best = rs[start:i]
			}
			start = i + 1
		}
	}
	return best
}
