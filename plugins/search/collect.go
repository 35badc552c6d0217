package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// maxLineChars is where a reported line is cut.
const maxLineChars = 500

// lineCutMarker ends a line that was cut.
const lineCutMarker = "… [line truncated]"

// outLine is a line of a file's part of the output: a match, or a context
// line around one.
type outLine struct {
	num   int
	text  string
	match bool
}

// fileResult is what one file contributes: its first matches (with their
// context lines) and how many matching lines it has in all.
type fileResult struct {
	key     string // the path as reported, which the output is sorted by
	lines   []outLine
	stored  int // matches in lines
	matches int // matching lines in the file
	size    int // about the bytes lines take in the output
}

// collector gathers the files' results from the walk's workers. The
// output is the first limit matches in path order, however the workers
// interleave: the collector keeps only the files that can still be in it
// and counts the rest, and tells the workers which files no longer need
// their lines (those ordered after the last file in the output so far).
type collector struct {
	limit   int
	context int // lines of context after a match

	mu     sync.Mutex
	files  []fileResult
	stored int
	size   int
	total  int
	seen   map[string]bool // the files counted, when the searched paths may overlap
	bound  atomic.Pointer[string]
}

func newCollector(limit, context int, dedupe bool) *collector {
	c := &collector{limit: limit, context: context}
	if dedupe {
		c.seen = map[string]bool{}
	}
	return c
}

// wants reports whether a file's lines can still be in the output.
func (c *collector) wants(key string) bool {
	b := c.bound.Load()
	return b == nil || comparePaths(key, *b) <= 0
}

// add records a file's result.
func (c *collector) add(r fileResult) {
	if r.matches == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen != nil {
		if c.seen[r.key] {
			return
		}
		c.seen[r.key] = true
	}
	c.total += r.matches
	if r.stored == 0 || !c.wants(r.key) {
		return
	}
	c.files = append(c.files, r)
	c.stored += r.stored
	c.size += r.size
	if c.stored > 2*c.limit || c.size > 2*maxOutputBytes {
		c.prune()
	}
}

// prune drops the files that the output cannot reach: those after the
// limit-th match or after maxOutputBytes of lines.
func (c *collector) prune() {
	c.sort()
	n, size := 0, 0
	for i := range c.files {
		n += c.files[i].stored
		size += c.files[i].size
		if n >= c.limit || size >= maxOutputBytes {
			clear(c.files[i+1:])
			c.files = c.files[:i+1]
			c.stored, c.size = n, size
			key := c.files[i].key
			c.bound.Store(&key)
			return
		}
	}
}

func (c *collector) sort() {
	slices.SortFunc(c.files, func(a, b fileResult) int { return comparePaths(a.key, b.key) })
}

// result returns the files' lines in path order, cut after the limit-th
// match (keeping its context after), and the number of matches left out.
func (c *collector) result() (files []fileResult, shown, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sort()
	for _, f := range c.files {
		if shown+f.stored <= c.limit {
			files = append(files, f)
			shown += f.stored
			continue
		}
		// This file holds the limit-th match: keep the lines up to it and
		// its context after, which stops before the next match.
		need := c.limit - shown
		var lines []outLine
		last := 0
		for _, l := range f.lines {
			if need == 0 && (l.match || l.num > last+c.context) {
				break
			}
			if l.match {
				need--
				last = l.num
			}
			lines = append(lines, l)
		}
		f.lines = lines
		files = append(files, f)
		shown = c.limit
		break
	}
	return files, shown, c.total
}

// formatMatches writes the output lines: "path:line:text" for matches,
// "path-line-text" for context, and "--" between groups that are not
// adjacent when there is context. It stops before a match once the output
// has maxOutputBytes, and returns the number of matches it wrote. Each
// line it writes is appended to *shown too.
func formatMatches(sb *strings.Builder, files []fileResult, context bool, shown *[]shownLine) (written int) {
	first := true
	for _, f := range files {
		key := textsafe.Name(f.key)
		prev := -1
		for _, l := range f.lines {
			if l.match && sb.Len() >= maxOutputBytes {
				return written
			}
			if context && !first && l.num != prev+1 {
				sb.WriteString("--\n")
			}
			first = false
			prev = l.num
			sb.WriteString(key)
			sep := byte('-')
			if l.match {
				sep = ':'
				written++
			}
			sb.WriteByte(sep)
			sb.WriteString(strconv.Itoa(l.num))
			sb.WriteByte(sep)
			sb.WriteString(l.text)
			sb.WriteByte('\n')
			*shown = append(*shown, shownLine{Path: f.key, Line: l.num, Text: l.text, Context: !l.match})
		}
	}
	return written
}

// lineText is a line as reported: without its "\r", cut at maxLineChars
// characters, valid UTF-8, and with its control characters escaped (see
// escapeControls).
func lineText(line []byte) string {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	cut := false
	if len(line) > maxLineChars {
		// Count characters only in lines that may be too long.
		chars := 0
		for i := 0; i < len(line); {
			if chars == maxLineChars {
				line, cut = line[:i], true
				break
			}
			_, size := utf8.DecodeRune(line[i:])
			i += size
			chars++
		}
	}
	s := string(line)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = escapeControls(s)
	if cut {
		s += lineCutMarker
	}
	return s
}

// escapeControls writes the control characters of a line, but tab, as
// escapes (\r, \x1b, \u0085, \u2028): a line of a file cannot end an
// output line early, or send a terminal escape sequence, and what it held
// can still be read.
func escapeControls(s string) string {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f || c == 0xc2 || c == 0xe2 {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case (r < 0x20 && r != '\t') || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case (0x80 <= r && r < 0xa0) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// comparePaths orders paths component by component, as ripgrep's
// --sort path does: "a/b" comes before "a-b" and "a.txt".
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if os.IsPathSeparator(ca) {
			return -1
		}
		if os.IsPathSeparator(cb) {
			return 1
		}
		return cmp.Compare(ca, cb)
	}
	return cmp.Compare(len(a), len(b))
}

// moreNote is the last line of capped output.
func moreNote(left, limit int, what string) string {
	return fmt.Sprintf("... %d more %s not shown (max_results %d)", left, what, limit)
}
