package main

import (
	"slices"
	"strings"
)

// ignoreMatcher is the rules of one directory's ignore files, compiled
// once, so that deciding on an entry costs about the same with ten
// rules or a hundred thousand: the rules without wildcards are found by
// the name or path they match in a map, "*.ext" and "prefix*" by the
// name's ends, and the other globs through an index of a three-byte
// piece of literal text each holds, so that only those whose piece is in
// the entry's name or path are tried. Which rule decides is as with the
// rules in a list: the last one that matches (gitignore(5)).
type ignoreMatcher struct {
	rules []ignoreRule

	names    map[string]lastRule // unanchored rules without wildcards, by name
	paths    map[string]lastRule // anchored rules without wildcards, by path
	suffixes affixSet            // unanchored "*literal" rules, by the name's end
	prefixes affixSet            // unanchored "literal*" rules, by the name's start

	nameGlobs globIndex // the other unanchored rules, matched against the name
	pathGlobs globIndex // the other anchored rules, matched against the path
}

// lastRule is the last of the rules that one key selects, as its index
// and one (0: none): among all of them, and among those that match files
// too (that are not for directories only).
type lastRule struct{ any, file int32 }

func (l *lastRule) add(i int, dirOnly bool) {
	l.any = int32(i + 1)
	if !dirOnly {
		l.file = int32(i + 1)
	}
}

// get returns the index of the last rule that applies to an entry, or -1.
func (l lastRule) get(isDir bool) int {
	if isDir {
		return int(l.any) - 1
	}
	return int(l.file) - 1
}

// affixSet finds literal prefixes (or suffixes) of a name: one map look-up
// per length that some literal has.
type affixSet struct {
	byText  map[string]lastRule
	lengths []int
}

func (s *affixSet) add(text string, i int, dirOnly bool) {
	if s.byText == nil {
		s.byText = map[string]lastRule{}
	}
	l, ok := s.byText[text]
	if !ok && !slices.Contains(s.lengths, len(text)) {
		s.lengths = append(s.lengths, len(text))
	}
	l.add(i, dirOnly)
	s.byText[text] = l
}

// last returns the index of the last rule whose literal starts (or, with
// suffix, ends) name, or -1.
func (s *affixSet) last(name string, isDir, suffix bool) int {
	best := -1
	for _, n := range s.lengths {
		if n > len(name) {
			continue
		}
		key := name[:n]
		if suffix {
			key = name[len(name)-n:]
		}
		if l, ok := s.byText[key]; ok {
			best = max(best, l.get(isDir))
		}
	}
	return best
}

// globIndex holds glob rules by a three-byte piece of literal text that
// every path they match contains; those without one are tried always.
type globIndex struct {
	byPiece map[[3]byte][]int32 // rule indices, rising
	rest    []int32             // rule indices, rising
}

// indexedGlobs is how many globs a globIndex tries one by one before it
// is worth indexing them.
const indexedGlobs = 16

func (g *globIndex) add(pattern string, i int) {
	piece, ok := globPiece(pattern)
	if !ok {
		g.rest = append(g.rest, int32(i))
		return
	}
	if g.byPiece == nil {
		g.byPiece = map[[3]byte][]int32{}
	}
	g.byPiece[piece] = append(g.byPiece[piece], int32(i))
}

// finish puts all the globs in rest when there are few.
func (g *globIndex) finish() {
	n := len(g.rest)
	for _, is := range g.byPiece {
		n += len(is)
	}
	if n > indexedGlobs || g.byPiece == nil {
		return
	}
	for _, is := range g.byPiece {
		g.rest = append(g.rest, is...)
	}
	slices.Sort(g.rest)
	g.byPiece = nil
}

// last returns the index of the last rule above best that matches
// subject, or best.
func (g *globIndex) last(rules []ignoreRule, subject string, isDir bool, best int) int {
	try := func(is []int32) {
		for j := len(is) - 1; j >= 0; j-- {
			i := int(is[j])
			if i <= best {
				return
			}
			if r := &rules[i]; (!r.dirOnly || isDir) && wildmatch(r.pattern, subject) {
				best = i
				return
			}
		}
	}
	try(g.rest)
	if g.byPiece != nil {
		for k := 0; k+3 <= len(subject); k++ {
			if is, ok := g.byPiece[[3]byte{subject[k], subject[k+1], subject[k+2]}]; ok {
				try(is)
			}
		}
	}
	return best
}

// globPiece returns three bytes of literal text that every path a glob
// matches contains: from the longest run of literal characters within
// one path segment, the three rarest in source text. ok is false when no
// run is that long.
func globPiece(pattern string) (piece [3]byte, ok bool) {
	bestStart, bestLen := 0, 0
	start := 0
	for i := 0; i <= len(pattern); i++ {
		if i < len(pattern) && !strings.ContainsRune(`*?[\/`, rune(pattern[i])) {
			continue
		}
		if i-start > bestLen {
			bestStart, bestLen = start, i-start
		}
		if i < len(pattern) && pattern[i] == '[' {
			// Skip the class: what it matches is not known here.
			if _, n, ok := matchClass(pattern[i:], 0); ok {
				i += n - 1
			}
		}
		if i < len(pattern) && pattern[i] == '\\' {
			i++ // the escaped character
		}
		start = i + 1
	}
	if bestLen < 3 {
		return piece, false
	}
	run := pattern[bestStart : bestStart+bestLen]
	at, score := 0, -1
	for k := 0; k+3 <= len(run); k++ {
		s := int(byteRank[run[k]]) + int(byteRank[run[k+1]]) + int(byteRank[run[k+2]])
		if score < 0 || s < score {
			at, score = k, s
		}
	}
	return [3]byte{run[at], run[at+1], run[at+2]}, true
}

// compileIgnore compiles rules, in the order of their files and lines.
func compileIgnore(rules []ignoreRule) *ignoreMatcher {
	m := &ignoreMatcher{rules: rules}
	for i := range rules {
		r := &rules[i]
		p := r.pattern
		switch {
		case !hasWildcard(p) && r.anchored:
			if m.paths == nil {
				m.paths = map[string]lastRule{}
			}
			l := m.paths[p]
			l.add(i, r.dirOnly)
			m.paths[p] = l
		case !hasWildcard(p):
			if m.names == nil {
				m.names = map[string]lastRule{}
			}
			l := m.names[p]
			l.add(i, r.dirOnly)
			m.names[p] = l
		case r.anchored:
			m.pathGlobs.add(p, i)
		case len(p) > 1 && p[0] == '*' && !hasWildcard(p[1:]):
			m.suffixes.add(p[1:], i, r.dirOnly)
		case len(p) > 1 && p[len(p)-1] == '*' && !hasWildcard(p[:len(p)-1]):
			m.prefixes.add(p[:len(p)-1], i, r.dirOnly)
		default:
			m.nameGlobs.add(p, i)
		}
	}
	m.nameGlobs.finish()
	m.pathGlobs.finish()
	return m
}

// hasWildcard reports whether a gitignore pattern is more than literal
// text: it holds "*", "?", "[" or an escape.
func hasWildcard(p string) bool {
	return strings.ContainsAny(p, `*?[\`)
}

// last returns the index of the last rule that matches the entry (sub is
// its path relative to the rules' directory, name its name), or -1.
func (m *ignoreMatcher) last(sub, name string, isDir bool) int {
	best := -1
	if l, ok := m.names[name]; ok {
		best = max(best, l.get(isDir))
	}
	if l, ok := m.paths[sub]; ok {
		best = max(best, l.get(isDir))
	}
	best = max(best, m.suffixes.last(name, isDir, true), m.prefixes.last(name, isDir, false))
	best = m.nameGlobs.last(m.rules, name, isDir, best)
	return m.pathGlobs.last(m.rules, sub, isDir, best)
}
