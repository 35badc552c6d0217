package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// A listing is built once, as list_dir's structured result (a
// dirListing), and its text is rendered from it, so that the two cannot
// say different things.

// dirListing is list_dir's structured result: the listing its text
// shows, as data.
type dirListing struct {
	Path    string      `json:"path" jsonschema:"The directory listed, relative to its workspace root, as the text names it."`
	Entries []dirEntry1 `json:"entries" jsonschema:"The directory's entries in name order, as the text lists them. Each has a name (Go-quoted when it is not UTF-8) and a type: file (with its size in bytes, unless names_only), directory (with children, its own entries, when depth reaches into it; truncated when max_entries cut them short), symlink (with its target, never followed, unless it could not be read), other (kind says which: fifo, socket, device, character device) or unknown. error says why an entry could not be examined, or a directory could not be listed."`
	// Truncated is the top level's own: entries have theirs.
	Truncated bool `json:"truncated" jsonschema:"max_entries left out some of the directory's own entries."`
	More      int  `json:"more" jsonschema:"Entries past max_entries, at every level: counted, not listed. The listing stops there, in the order of the text."`
	Hidden    int  `json:"hidden" jsonschema:"Hidden entries of the directory itself left out (include_hidden lists them)."`
	Excluded  int  `json:"excluded" jsonschema:"Entries exclude left out, at every level listed."`
}

// The types of entryInfo.
const (
	typeFile      = "file"
	typeDirectory = "directory"
	typeSymlink   = "symlink"
	typeOther     = "other"
	typeUnknown   = "unknown"
)

// entryInfo is what a listing says of an entry at any level (described
// once, in dirListing.Entries: the levels repeat it).
type entryInfo struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Kind   string `json:"kind,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Target string `json:"target,omitempty"`
	Error  string `json:"error,omitempty"`

	// The name or the target was not UTF-8, and is given Go-quoted,
	// ready for the text.
	nameQuoted, targetQuoted bool
}

// dirEntry is an entry of a level that depth may reach below: a
// directory there has the entries of the next level, of type C.
type dirEntry[C any] struct {
	entryInfo
	Children  []C  `json:"children,omitzero"`
	Truncated bool `json:"truncated,omitempty"`
}

// The levels of a listing, one type each, maxListDepth of them: an
// output schema is inferred from a Go type, which then cannot be
// recursive. The deepest level is never entered.
type (
	dirEntry1 = dirEntry[dirEntry2]
	dirEntry2 = dirEntry[dirEntry3]
	dirEntry3 = dirEntry[dirEntry4]
	dirEntry4 = dirEntry[dirEntry5]
	dirEntry5 = entryInfo
)

// levelLister lists one level of a listing, as walkLevel does, into
// entries of type E.
type levelLister[E any] func(l *lister, rel, sub string, level int) ([]E, bool, error)

// listLevels lists the levels of a listing, each with its own type.
var listLevels = listDirs(listDirs(listDirs(listDirs(listLeaves))))

// listDirs is the levelLister of a level whose directories hold the
// entries next lists.
func listDirs[C any](next levelLister[C]) levelLister[dirEntry[C]] {
	return func(l *lister, rel, sub string, level int) ([]dirEntry[C], bool, error) {
		wrap := func(info entryInfo) dirEntry[C] { return dirEntry[C]{entryInfo: info} }
		enter := func(e *dirEntry[C], rel, sub string) error {
			children, cut, err := next(l, rel, sub, level+1)
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			// A directory that vanished or cannot be read is kept with
			// the reason, which the text gives in its place.
			e.Children, e.Truncated = children, cut
			if err != nil {
				e.Error = err.Error()
			}
			return nil
		}
		return walkLevel(l, rel, sub, level, wrap, enter)
	}
}

// listLeaves lists the deepest level, which depth never goes below.
func listLeaves(l *lister, rel, sub string, level int) ([]entryInfo, bool, error) {
	return walkLevel(l, rel, sub, level, func(info entryInfo) entryInfo { return info }, nil)
}

// text renders the listing for a model: one entry a line, a tree
// indented two spaces a level, and the notes on what was left out.
func (d *dirListing) text(limit int) string {
	if len(d.Entries) == 0 && d.More == 0 {
		return d.emptyText()
	}
	r := &textRenderer{limit: limit}
	r.out.Grow(32 * len(d.Entries)) // a line is rarely longer
	renderLevels(r, d.Entries, "")
	if d.More > 0 {
		fmt.Fprintf(&r.out, "... and %d more\n", d.More)
	}
	return r.out.String()
}

// textRenderer writes a listing's entries as text.
type textRenderer struct {
	out   strings.Builder
	shown int // entries written
	limit int
}

// levelRenderer writes the entries of one level, and those below, at
// indent.
type levelRenderer[E any] func(r *textRenderer, entries []E, indent string)

// renderLevels renders the levels of a listing.
var renderLevels = renderDirs(renderDirs(renderDirs(renderDirs(renderLeaves))))

// renderDirs is the levelRenderer of a level whose directories hold
// entries that next renders.
func renderDirs[C any](next levelRenderer[C]) levelRenderer[dirEntry[C]] {
	return func(r *textRenderer, entries []dirEntry[C], indent string) {
		for i := range entries {
			e := &entries[i]
			r.entry(&e.entryInfo, indent)
			if len(e.Children) > 0 {
				next(r, e.Children, indent+"  ")
			}
		}
	}
}

// renderLeaves renders the deepest level.
func renderLeaves(r *textRenderer, entries []entryInfo, indent string) {
	for i := range entries {
		r.entry(&entries[i], indent)
	}
}

// entry writes e's line at indent. A directory that could not be listed
// is followed by the reason, unless the limit was reached with it.
func (r *textRenderer) entry(e *entryInfo, indent string) {
	out := &r.out
	out.WriteString(indent)
	if e.nameQuoted {
		out.WriteString(e.Name)
	} else {
		out.WriteString(textsafe.Name(e.Name))
	}
	switch e.Type {
	case typeUnknown:
		out.WriteString(" [")
		out.WriteString(e.Error)
		out.WriteString("]")
	case typeSymlink:
		out.WriteString(" -> ")
		switch {
		case e.Target == "":
			out.WriteString("?")
		case e.targetQuoted:
			out.WriteString(e.Target)
		default:
			out.WriteString(textsafe.Name(e.Target))
		}
	case typeDirectory:
		out.WriteString("/")
	case typeFile:
		if e.Size != nil {
			out.WriteString(" (")
			out.WriteString(formatSize(*e.Size))
			out.WriteString(")")
		}
	default:
		out.WriteString(" [")
		out.WriteString(e.Kind)
		out.WriteString("]")
	}
	out.WriteString("\n")
	r.shown++
	if e.Type == typeDirectory && e.Error != "" && r.shown < r.limit {
		out.WriteString(indent)
		out.WriteString("  [cannot list: ")
		out.WriteString(e.Error)
		out.WriteString("]\n")
	}
}

// emptyText is the answer for a listing that shows no entry: what, if
// anything, was left out.
func (d *dirListing) emptyText() string {
	name := textsafe.Name(d.Path)
	var apart []string
	switch d.Hidden {
	case 0:
	case 1:
		apart = append(apart, "1 hidden entry (set include_hidden to list it)")
	default:
		apart = append(apart, countEntries(d.Hidden, "hidden")+" (set include_hidden to list them)")
	}
	if d.Excluded > 0 {
		apart = append(apart, countEntries(d.Excluded, "excluded"))
	}
	if len(apart) == 0 {
		return name + " is empty"
	}
	return name + " is empty apart from " + strings.Join(apart, " and ")
}

// countEntries says how many entries of a kind: "1 hidden entry", "2
// hidden entries".
func countEntries(n int, kind string) string {
	if n == 1 {
		return "1 " + kind + " entry"
	}
	return fmt.Sprintf("%d %s entries", n, kind)
}

// excludeRule is one of list_dir's exclude patterns.
type excludeRule struct {
	pattern string // a valid doublestar glob
	byName  bool   // without a slash: it matches names, at every level
	dirOnly bool   // written with a trailing slash: it matches directories
}

// newExcludeRules checks and prepares list_dir's exclude patterns. A
// pattern without a slash matches an entry's name; one with a slash its
// path relative to the listed directory, a leading / or ./ anchoring it
// there; a trailing slash restricts a pattern to directories.
func newExcludeRules(patterns []string) ([]excludeRule, error) {
	rules := make([]excludeRule, 0, len(patterns))
	for _, p := range patterns {
		r := excludeRule{pattern: p}
		if trimmed, ok := strings.CutSuffix(r.pattern, "/"); ok {
			r.pattern, r.dirOnly = trimmed, true
		}
		r.byName = !strings.Contains(r.pattern, "/")
		r.pattern = strings.TrimPrefix(strings.TrimPrefix(r.pattern, "./"), "/")
		switch {
		case r.pattern == "":
			return nil, fmt.Errorf("exclude pattern %s matches nothing: give a glob such as node_modules, *.log or src/gen", toolcall.Quote(p))
		case !doublestar.ValidatePattern(r.pattern):
			return nil, fmt.Errorf("exclude pattern %s is not a valid glob: check that each [ and { is closed and that it does not end in \\", toolcall.Quote(p))
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// excluded reports whether an exclude rule matches the entry name at
// path (relative to the listed directory); dir says it is a directory.
func excluded(rules []excludeRule, path, name string, dir bool) bool {
	for _, r := range rules {
		if r.dirOnly && !dir {
			continue
		}
		subject := path
		if r.byName {
			subject = name
		}
		if doublestar.MatchUnvalidated(r.pattern, subject) {
			return true
		}
	}
	return false
}
