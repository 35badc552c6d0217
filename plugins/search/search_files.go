package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

const defaultFileResults = 500

type searchFilesInput struct {
	Pattern       string      `json:"pattern" jsonschema:"A glob matched against paths relative to path: * and ? within a name, ** across directories, {a,b} alternatives, [abc] classes. Examples: **/*.go, src/**/*_test.go, {cmd,internal}/*.go, **/testdata/ (a trailing slash: directories only). *.go matches only directly in path; **/*.go at any depth."`
	Path          string      `json:"path,omitempty" jsonschema:"The directory to search from. Default: the first workspace root."`
	MaxResults    wholeNumber `json:"max_results,omitempty" jsonschema:"The most paths to list. Default 500, at most 10000."`
	IncludeHidden bool        `json:"include_hidden,omitempty" jsonschema:"Also match hidden files and directories (names starting with a dot); a pattern that names one, like .github/**, includes them anyway. .git is never listed."`
}

// searchFilesOutput is search_files' structured result.
type searchFilesOutput struct {
	Paths []string `json:"paths" jsonschema:"the paths shown, sorted"`
	Total int      `json:"total" jsonschema:"matching paths in all, shown or not"`
	Notes []string `json:"notes,omitempty" jsonschema:"what the search left out"`
}

var searchFiles = sdk.NewStructuredTool(sdk.Info{
	Name:  "search_files",
	Title: "Find files",
	Description: "Find files and directories whose paths match a glob (doublestar syntax: **/*.go, {a,b}/*.txt). " +
		"Answers with the matching paths, sorted, one per line, directories with a trailing /. " +
		"Skips .git, hidden entries (unless include_hidden) and what .gitignore, .ignore or .git/info/exclude files exclude, and does not descend into kernel file systems such as /proc mounted below path; symbolic links are listed but never followed.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, runSearchFiles)

// foundPath is a path search_files matched.
type foundPath struct {
	key   string // as reported, without the trailing / of a directory
	isDir bool
}

func runSearchFiles(ctx context.Context, in searchFilesInput) (string, searchFilesOutput, error) {
	var out searchFilesOutput
	limit, err := resultLimit(in.MaxResults, defaultFileResults)
	if err != nil {
		return "", out, err
	}
	pattern, err := checkGlob(in.Pattern)
	if err != nil {
		return "", out, err
	}
	ws, err := workspace.FromContext(ctx)
	if err != nil {
		return "", out, err
	}
	defer ws.Close()
	arg := in.Path
	if arg == "" {
		arg = ws.First()
	}
	base, err := ws.Resolve(arg)
	if err != nil {
		return "", out, err
	}
	info, err := base.Root.Stat(base.Rel)
	if err != nil {
		return "", out, pathError(arg, err)
	}
	if !info.IsDir() {
		return "", out, fmt.Errorf("%s is not a directory", textsafe.Name(arg))
	}

	g := newGlobWalk(pattern, in.IncludeHidden)
	start := &walkStart{ws: base.Root, rootPath: base.RootPath, rel: slashRel(base.Rel), baseRel: g.prefix, arg: arg}
	if g.prefix != "" {
		start.rel = workspace.JoinRel(start.rel, g.prefix)
		start.arg = filepath.FromSlash(g.prefix)
		if in.Path != "" {
			start.arg = filepath.Join(in.Path, start.arg)
		}
		info, err := base.Root.Stat(filepath.FromSlash(start.rel))
		if workspace.IsEscape(err) {
			return "", out, workspace.OutsideError(start.arg)
		}
		if err != nil || !info.IsDir() {
			return noFiles(in.Pattern, base), out, nil
		}
	}
	found, total, moved, report, err := g.run(ctx, start, limit)
	switch {
	case ctx.Err() != nil:
		return "", out, stopped(ctx.Err())
	case err != nil:
		return "", out, err
	}
	notes := walkNotes(report, moved, "path")
	if total == 0 {
		out.Notes = notes
		return strings.Join(append([]string{noFiles(in.Pattern, base)}, notes...), "\n"), out, nil
	}
	var sb strings.Builder
	size := 0
	for _, f := range found {
		size += len(f.key) + 2
	}
	sb.Grow(min(size, maxOutputBytes) + 4096)
	for i, f := range found {
		if sb.Len() >= maxOutputBytes {
			fmt.Fprintf(&sb, "... and %d more (the output stops after %d MiB: narrow the pattern)\n", total-i, maxOutputBytes>>20)
			break
		}
		path := f.key
		if f.isDir {
			path += "/"
		}
		sb.WriteString(textsafe.Name(path))
		sb.WriteByte('\n')
		out.Paths = append(out.Paths, path)
		if i+1 == limit && total > limit {
			fmt.Fprintf(&sb, "... and %d more (max_results %d)\n", total-limit, limit)
		}
	}
	for _, n := range notes {
		sb.WriteString(n)
		sb.WriteByte('\n')
	}
	out.Total, out.Notes = total, notes
	return strings.TrimSuffix(sb.String(), "\n"), out, nil
}

// globWalk is a search_files walk: where it starts and stops, what it
// matches.
type globWalk struct {
	pattern  string
	dirsOnly bool   // the pattern ended with "/"
	prefix   string // the pattern's leading directories without wildcards, where the walk starts
	opts     walkOptions
	// last is the pattern's last segment, which a path's name must match
	// for the path to match, when that is so (not "**", no braces, which
	// may hold a "/", no escapes); "" otherwise. Matching the name first
	// spares building the path of most entries.
	last string
}

func newGlobWalk(pattern string, hidden bool) *globWalk {
	g := &globWalk{dirsOnly: strings.HasSuffix(pattern, "/")}
	g.pattern = strings.TrimRight(pattern, "/")
	prefix, rest := doublestar.SplitPattern(g.pattern)
	if prefix == "." || strings.Contains(prefix, `\`) {
		prefix, rest = "", g.pattern
	}
	g.prefix = prefix
	if last := g.pattern[strings.LastIndexByte(g.pattern, '/')+1:]; last != "**" && !strings.ContainsAny(g.pattern, `{\`) {
		g.last = last
	}
	g.opts.hidden = hidden || namesHidden(rest)
	if !strings.Contains(rest, "**") {
		// No deeper than the pattern's segments.
		g.opts.maxDepth = strings.Count(rest, "/") + 1
	}
	return g
}

// run walks from start and returns the first limit matching paths,
// sorted, and how many match in all.
func (g *globWalk) run(ctx context.Context, start *walkStart, limit int) (found []foundPath, total int, moved int64, report walkReport, err error) {
	var mu sync.Mutex
	var states []*foundSet
	newState := func() *foundSet {
		p := &foundSet{limit: limit}
		mu.Lock()
		states = append(states, p)
		mu.Unlock()
		return p
	}
	visit := func(out *foundSet, e *entry) {
		isDir := e.typ.IsDir()
		if isDir || !g.dirsOnly {
			if g.last != "" && !doublestar.MatchUnvalidated(g.last, e.name) {
				return
			}
			base := e.baseRel()
			if !doublestar.MatchUnvalidated(g.pattern, base) {
				return
			}
			rel := base
			if e.dir.rel != e.dir.baseRel {
				rel = e.rel()
			}
			out.add(foundPath{key: displayPath(e.dir.start.rootPath, rel), isDir: isDir})
		}
	}
	report, err = walk(ctx, []*walkStart{start}, g.opts, newState, visit)
	if err != nil {
		return nil, 0, 0, report, err
	}
	all := &foundSet{limit: limit}
	for _, s := range states {
		all.dropped += s.dropped
		all.paths = append(all.paths, s.paths...)
	}
	all.trim()
	total = len(all.paths) + all.dropped
	if start.rootPath != string(filepath.Separator) {
		// A name listed while its directory was out of the root for a
		// moment is no name inside it: keep the names that are inside
		// the root after the walk, found from the root down.
		kept := keepInside(start.ws, all.paths, func(p foundPath) string { return rootRel(start.rootPath, p.key) })
		moved = int64(len(all.paths) - len(kept))
		total -= len(all.paths) - len(kept)
		all.paths = kept
	}
	return all.paths, total, moved, report, nil
}

// rootRel is the path relative to the workspace root of a path as
// displayPath reports it.
func rootRel(rootPath, key string) string {
	if !filepath.IsAbs(key) {
		return key
	}
	rel, err := filepath.Rel(rootPath, key)
	if err != nil {
		return key
	}
	return rel
}

// foundSet keeps the first paths of a walk in path order, and counts the
// others: its memory stays in proportion to the limit, however many
// paths match.
type foundSet struct {
	limit   int
	paths   []foundPath
	dropped int
}

func (s *foundSet) add(p foundPath) {
	s.paths = append(s.paths, p)
	if len(s.paths) >= 8*s.limit+64 {
		s.trim()
	}
}

// trim sorts the paths and keeps the first limit.
func (s *foundSet) trim() {
	slices.SortFunc(s.paths, func(a, b foundPath) int { return comparePaths(a.key, b.key) })
	if len(s.paths) > s.limit {
		s.dropped += len(s.paths) - s.limit
		clear(s.paths[s.limit:])
		s.paths = s.paths[:s.limit]
	}
}

// checkGlob validates a search_files pattern and returns it without a
// leading "./".
func checkGlob(pattern string) (string, error) {
	p := strings.TrimPrefix(pattern, "./")
	switch {
	case strings.Trim(p, "/") == "":
		return "", errors.New("pattern is empty")
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("pattern %q is absolute: the pattern matches paths relative to path, so put the directory in path", pattern)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return "", fmt.Errorf("pattern %q contains \"..\": put the directory to search in path", pattern)
	case !doublestar.ValidatePattern(p):
		return "", fmt.Errorf("invalid glob pattern %q", pattern)
	}
	return p, nil
}

// namesHidden reports whether a pattern names a hidden entry itself: a
// segment that starts with a dot.
func namesHidden(pattern string) bool {
	for seg := range strings.SplitSeq(pattern, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

func noFiles(pattern string, base workspace.Path) string {
	msg := fmt.Sprintf("No files matching %q in %s", pattern, textsafe.Name(displayArg(base)))
	if !strings.Contains(pattern, "/") {
		// Quoted, like the pattern above, when it could forge a line.
		hint := "**/" + pattern
		if textsafe.NeedsQuoting(hint) {
			hint = strconv.Quote(hint)
		}
		msg += fmt.Sprintf(" (the pattern matches paths relative to that directory; %s matches at any depth)", hint)
	}
	return msg
}
