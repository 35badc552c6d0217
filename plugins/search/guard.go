package main

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// A guard is what the bytes next to a regex's required literal must be
// in every match, read from the regex's syntax tree: in
// `[A-Z]{5,}_[A-Z]+` the literal is "_", the five bytes before it must
// be upper-case letters and the byte after it one too. The matcher
// checks the guard at each place it finds the literal, a few byte
// comparisons, and runs the regex only on the lines where it holds, as
// ripgrep's literal optimizations narrow a search before its regex
// engine runs; a guard that says all the regex says (complete) spares
// the regex altogether.
type guard struct {
	before []byteSet // before[i]: the byte i+1 places before the literal
	after  []byteSet // after[i]: the byte i places after the literal's end
}

// byteSet is a set of bytes.
type byteSet [4]uint64

// add adds c to the set, unless it is a line break: a match that
// search_text reports lies within a line.
func (s *byteSet) add(c byte) {
	if c != '\n' {
		s[c>>6] |= 1 << (c & 63)
	}
}

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func (g *guard) empty() bool { return len(g.before) == 0 && len(g.after) == 0 }

// maxGuard is the most bytes a guard checks on each side.
const maxGuard = 32

// holds reports whether the guard holds around the literal at buf[at:at+n].
func (g *guard) holds(buf []byte, at, n int) bool {
	if at < len(g.before) || at+n+len(g.after) > len(buf) {
		return false
	}
	for i := range g.before {
		if !g.before[i].has(buf[at-1-i]) {
			return false
		}
	}
	end := at + n
	for i := range g.after {
		if !g.after[i].has(buf[end+i]) {
			return false
		}
	}
	return true
}

// literalGuard returns the guard of lit in re, a parsed regex (with its
// ^ and $ at the ends of the text): the bytes next to lit that every
// match must hold, where re is a sequence with lit, matched with fold as
// requiredLiteral says, as one of its parts; an empty guard otherwise.
// complete is true when the guard and the literal say all that re says:
// a line holds a match exactly when it holds lit with the guard around.
func literalGuard(re *syntax.Regexp, lit []rune, fold bool) (g guard, complete bool) {
	items := sequence(re, nil)
	for i, it := range items {
		if it.Op != syntax.OpLiteral || !slices.Equal(it.Rune, lit) || (it.Flags&syntax.FoldCase != 0) != fold {
			continue
		}
		before := slices.Clone(items[:i])
		slices.Reverse(before)
		var whole [2]bool
		g.before, whole[0] = byteSets(before, true)
		g.after, whole[1] = byteSets(items[i+1:], false)
		return g, whole[0] && whole[1]
	}
	return guard{}, false
}

// sequence appends to items the parts of re in order, a sequence seen
// through its groups.
func sequence(re *syntax.Regexp, items []*syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			items = sequence(sub, items)
		}
		return items
	case syntax.OpCapture:
		return sequence(re.Sub[0], items)
	}
	return append(items, re)
}

// byteSets returns the sets of the bytes that items, the parts of a
// sequence in the order they are read outwards from the literal (so
// backwards when reversed), match one after the other, for as long as
// each matches a known number of ASCII bytes: it stops at the first
// that does not (the first of an open repeat counts, up to its least
// number). whole is true when the sets say all the items say.
func byteSets(items []*syntax.Regexp, reversed bool) (sets []byteSet, whole bool) {
	for i, it := range items {
		if len(sets) >= maxGuard {
			return sets[:maxGuard], false
		}
		last := i == len(items)-1
		switch it.Op {
		case syntax.OpLiteral:
			runes := it.Rune
			if reversed {
				runes = slices.Clone(runes)
				slices.Reverse(runes)
			}
			for _, r := range runes {
				s, ok := runeSet(r, it.Flags&syntax.FoldCase != 0)
				if !ok {
					return sets, false
				}
				sets = append(sets, s)
			}
			if len(sets) > maxGuard {
				return sets[:maxGuard], false
			}
		case syntax.OpCharClass:
			s, ok := classSet(it)
			if !ok {
				return sets, false
			}
			sets = append(sets, s)
		case syntax.OpRepeat, syntax.OpPlus, syntax.OpStar, syntax.OpQuest:
			least, most := repeatBounds(it)
			s, ok := oneByte(it.Sub[0])
			if !ok {
				return sets, false
			}
			for range min(least, maxGuard+1) {
				sets = append(sets, s)
			}
			if len(sets) > maxGuard {
				return sets[:maxGuard], false
			}
			if most != least {
				// What comes after the least number is not known; it
				// says no more than the least number does only when
				// nothing else follows.
				return sets, last
			}
		default:
			// ^, $, \b, an alternation, any character, ...
			return sets, false
		}
	}
	return sets, true
}

// repeatBounds returns the least and most times a repeat matches its
// part; most is -1 for no limit.
func repeatBounds(re *syntax.Regexp) (least, most int) {
	switch re.Op {
	case syntax.OpPlus:
		return 1, -1
	case syntax.OpStar:
		return 0, -1
	case syntax.OpQuest:
		return 0, 1
	}
	return re.Min, re.Max
}

// oneByte returns the set of the bytes re matches when it always matches
// exactly one ASCII byte.
func oneByte(re *syntax.Regexp) (byteSet, bool) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	switch {
	case re.Op == syntax.OpCharClass:
		return classSet(re)
	case re.Op == syntax.OpLiteral && len(re.Rune) == 1:
		return runeSet(re.Rune[0], re.Flags&syntax.FoldCase != 0)
	}
	return byteSet{}, false
}

// runeSet returns the set of the one rune r, and of those it folds to
// with fold; ok is false unless they are all ASCII.
func runeSet(r rune, fold bool) (s byteSet, ok bool) {
	if r >= utf8.RuneSelf {
		return s, false
	}
	s.add(byte(r))
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				return s, false
			}
			s.add(byte(f))
		}
	}
	return s, true
}

// classSet returns the set of a character class; ok is false unless it
// holds only ASCII characters.
func classSet(re *syntax.Regexp) (s byteSet, ok bool) {
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi >= utf8.RuneSelf {
			return s, false
		}
		for c := lo; c <= hi; c++ {
			s.add(byte(c))
		}
	}
	return s, true
}

// A byteRun is a run of bytes of one set that every match of a regex
// holds, for a regex without a literal to look for: `[A-Z]{5,}[0-9]+`
// holds five upper-case letters in a row. next finds one by looking at
// every n-th byte only, as a run of n must cover one of them: a regex
// without a literal, which Go's regexp would run over every byte, is run
// only on the lines that hold such a run. A run of an open repeat can
// have a guard: when the part next to it cannot match a byte of the run,
// a match's run is the whole run found, and the bytes around it are
// checked as a literal's guard.
type byteRun struct {
	set byteSet
	n   int
	// guard is checked around the whole run; complete is as for
	// literalGuard.
	guard    guard
	complete bool
}

// requiredRun returns the longest run of one byte set that a part of re,
// a parsed regex, matches in every match: a repeat, at least twice, of a
// part that matches one ASCII byte; nil when there is none.
func requiredRun(re *syntax.Regexp) *byteRun {
	items := sequence(re, nil)
	best := -1
	var r byteRun
	for i, it := range items {
		switch it.Op {
		case syntax.OpRepeat, syntax.OpPlus:
		default:
			continue
		}
		least, _ := repeatBounds(it)
		s, ok := oneByte(it.Sub[0])
		if !ok || least < 2 || (best >= 0 && least <= r.n) {
			continue
		}
		best, r = i, byteRun{set: s, n: least}
	}
	if best < 0 {
		return nil
	}
	if _, most := repeatBounds(items[best]); most < 0 {
		before := slices.Clone(items[:best])
		slices.Reverse(before)
		var whole [2]bool
		r.guard.before, whole[0] = byteSets(before, true)
		r.guard.after, whole[1] = byteSets(items[best+1:], false)
		if len(r.guard.before) > 0 && r.guard.before[0].meets(&r.set) {
			r.guard.before, whole[0] = nil, false
		}
		if len(r.guard.after) > 0 && r.guard.after[0].meets(&r.set) {
			r.guard.after, whole[1] = nil, false
		}
		r.complete = whole[0] && whole[1]
	}
	return &r
}

// meets reports whether s and t have a byte in common.
func (s *byteSet) meets(t *byteSet) bool {
	return s[0]&t[0] != 0 || s[1]&t[1] != 0 || s[2]&t[2] != 0 || s[3]&t[3] != 0
}

// next returns the offset of the first run of at least n bytes of the
// set in buf[from:] with the guard around it, or -1; buf[from-1], if
// any, is not in the set. It reads every n-th byte; on one in the set it
// reads around it for the run.
func (r *byteRun) next(buf []byte, from int) int {
	guarded := !r.guard.empty()
	for i := from + r.n - 1; i < len(buf); {
		if !r.set.has(buf[i]) {
			i += r.n
			continue
		}
		lo := i
		for lo > from && r.set.has(buf[lo-1]) {
			lo--
		}
		hi := i + 1
		for hi < len(buf) && (guarded || hi-lo < r.n) && r.set.has(buf[hi]) {
			hi++
		}
		if hi-lo >= r.n && (!guarded || r.guard.holds(buf, lo, hi-lo)) {
			return lo
		}
		// buf[hi] is not in the set: a run starts after it.
		i = hi + r.n
	}
	return -1
}
