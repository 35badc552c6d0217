package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

const (
	defaultTextResults = 200
	maxContext         = 50
)

type searchTextInput struct {
	Query           string      `json:"query" jsonschema:"The text to find: a literal string, or an RE2 regular expression when regex is true. It is matched within single lines, so it cannot hold a line break (\\n)."`
	Paths           []string    `json:"paths,omitempty" jsonschema:"Files or directories to search. Default: the first workspace root."`
	Regex           bool        `json:"regex,omitempty" jsonschema:"Treat query as an RE2 regular expression (Go syntax). Default false: a literal string."`
	CaseInsensitive bool        `json:"case_insensitive,omitempty" jsonschema:"Match letters of either case. Default false."`
	Include         string      `json:"include,omitempty" jsonschema:"Search only files matching this glob: without a slash it matches file names at any depth (*.go, *.{c,h}); with one, paths relative to the searched directory (src/**/*.ts)."`
	Context         wholeNumber `json:"context,omitempty" jsonschema:"Lines of context to show before and after each match (0 to 50). Default 0."`
	MaxResults      wholeNumber `json:"max_results,omitempty" jsonschema:"The most matching lines to show. Default 200, at most 10000."`
	IncludeHidden   bool        `json:"include_hidden,omitempty" jsonschema:"Also search hidden files and directories (names starting with a dot). .git is never searched."`
}

// searchTextOutput is search_text's structured result.
type searchTextOutput struct {
	Lines []shownLine `json:"lines" jsonschema:"the lines shown, in order"`
	Total int         `json:"total" jsonschema:"matching lines in all, shown or not"`
	Notes []string    `json:"notes,omitempty" jsonschema:"what the search left out"`
}

// shownLine is a line search_text shows.
type shownLine struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Text    string `json:"text"`
	Context bool   `json:"context,omitempty" jsonschema:"a context line, not a match"`
}

var searchText = sdk.NewStructuredTool(sdk.Info{
	Name:  "search_text",
	Title: "Search file contents",
	Description: "Search file contents for a literal string or a regular expression, like ripgrep. " +
		"Answers with matching lines as path:line:text, sorted by path and line (context lines as path-line-text, groups separated by --). " +
		"Directories are searched recursively, skipping binary files, .git, hidden files (unless include_hidden), files that .gitignore, .ignore or .git/info/exclude files exclude, and kernel file systems such as /proc mounted below the searched directory; " +
		"symbolic links to directories are not followed. Long lines are cut at 500 characters.",
	Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
}, runSearchText)

func runSearchText(ctx context.Context, in searchTextInput) (string, searchTextOutput, error) {
	var out searchTextOutput
	limit, err := resultLimit(in.MaxResults, defaultTextResults)
	if err != nil {
		return "", out, err
	}
	if in.Context < 0 || in.Context > maxContext {
		return "", out, fmt.Errorf("context must be between 0 and %d", maxContext)
	}
	around := int(in.Context)
	m, err := newMatcher(in.Query, in.Regex, in.CaseInsensitive)
	if err != nil {
		return "", out, err
	}
	include, err := newIncludeFilter(in.Include)
	if err != nil {
		return "", out, err
	}
	ws, err := workspace.FromContext(ctx)
	if err != nil {
		return "", out, err
	}
	defer ws.Close()

	starts, files, display, err := resolveSearchPaths(ws, in.Paths)
	if err != nil {
		return "", out, err
	}

	s := &textSearch{m: m, include: include, context: around, limit: limit, coll: newCollector(limit, around, len(display) > 1)}
	defer s.release()
	var notes []string
	w := s.newWorker()
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return "", out, stopped(err)
		}
		binary, err := s.explicitFile(w, p)
		if err != nil {
			return "", out, err
		}
		if binary {
			notes = append(notes, fmt.Sprintf("(skipped binary file %s)", textsafe.Name(p.Display())))
		}
	}
	var report walkReport
	if len(starts) > 0 {
		report, err = walk(ctx, starts, walkOptions{hidden: in.IncludeHidden}, s.newWorker, s.visit)
		if ctx.Err() != nil {
			return "", out, stopped(ctx.Err())
		}
		if err != nil {
			return "", out, err
		}
	}
	if err := ctx.Err(); err != nil {
		return "", out, stopped(err)
	}

	results, _, total := s.coll.result()
	if n := s.unreadable.Load(); n > 0 {
		notes = append(notes, fmt.Sprintf("(%d files could not be read)", n))
	}
	if n := s.tooLarge.Load(); n > 0 {
		notes = append(notes, fmt.Sprintf("(%d files larger than %d MiB skipped)", n, maxFileSize>>20))
	}
	if n := s.noEnd.Load(); n > 0 {
		notes = append(notes, fmt.Sprintf("(%d files of no stated size, such as those of /proc, skipped after %d MiB)", n, maxGeneratedSize>>20))
	}
	notes = append(notes, walkNotes(report, s.moved.Load(), "paths")...)
	var sb strings.Builder
	if total == 0 {
		fmt.Fprintf(&sb, "No matches for %q in %s\n", in.Query, strings.Join(display, ", "))
	} else {
		size := 0
		for _, f := range results {
			size += f.size
		}
		sb.Grow(min(size, maxOutputBytes) + 4096)
		written := formatMatches(&sb, results, around > 0, &out.Lines)
		switch {
		case written < min(limit, total):
			// Cut for size, before max_results.
			fmt.Fprintf(&sb, "... %d more matches not shown (the output stops after %d MiB: narrow the search)\n", total-written, maxOutputBytes>>20)
		case total > written:
			sb.WriteString(moreNote(total-written, limit, "matches"))
			sb.WriteByte('\n')
		}
	}
	for _, n := range notes {
		sb.WriteString(n)
		sb.WriteByte('\n')
	}
	out.Total, out.Notes = total, notes
	return strings.TrimSuffix(sb.String(), "\n"), out, nil
}

// resolveSearchPaths places search_text's paths in the workspace: the
// directories to walk, the files to search, and how to name them all.
func resolveSearchPaths(ws *workspace.Workspace, args []string) (starts []*walkStart, files []workspace.Path, display []string, err error) {
	if len(args) == 0 {
		args = []string{ws.First()}
	}
	for _, arg := range args {
		p, err := ws.Resolve(arg)
		if err != nil {
			return nil, nil, nil, err
		}
		info, err := p.Root.Stat(p.Rel)
		if err != nil {
			return nil, nil, nil, pathError(arg, err)
		}
		switch {
		case info.IsDir():
			starts = append(starts, &walkStart{ws: p.Root, rootPath: p.RootPath, rel: slashRel(p.Rel), arg: arg})
		case info.Mode().IsRegular():
			files = append(files, p)
		default:
			return nil, nil, nil, fmt.Errorf("%s is not a file or a directory", textsafe.Name(arg))
		}
		display = append(display, textsafe.Name(displayArg(p)))
	}
	return starts, files, display, nil
}

// walkNotes are the notes on what a search left out: moved counts the
// paths that were not inside the roots after they were read (see place);
// what names the argument that includes a kernel file system.
func walkNotes(r walkReport, moved int64, what string) []string {
	var notes []string
	if moved > 0 {
		notes = append(notes, fmt.Sprintf("(%d paths left out: they moved out of the workspace roots, or were removed, during the search)", moved))
	}
	if len(r.skipped) > 0 {
		names := make([]string, len(r.skipped))
		for i, s := range r.skipped {
			names[i] = textsafe.Name(s)
		}
		notes = append(notes, fmt.Sprintf("(kernel file systems not searched: %s; name one in %s to search it)", strings.Join(names, ", "), what))
	}
	return notes
}

func stopped(err error) error {
	return fmt.Errorf("search stopped: %w", err)
}

// slashRel is a root-relative path as the walk writes it: slash-separated,
// "" for the root.
func slashRel(rel string) string {
	if rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// displayArg is how a searched path is named in a message: a root by its
// absolute path, anything else as the tools report paths.
func displayArg(p workspace.Path) string {
	if p.IsRoot() {
		return p.Abs
	}
	return p.Display()
}

// displayPath is how a file found by a walk is reported: relative to its
// root when that is shorter, like workspace.Path.Display.
func displayPath(rootPath, rel string) string {
	rel = filepath.FromSlash(rel)
	if rootPath != "" && rel != "." && filepath.IsLocal(rel) && filepath.Clean(rel) == rel {
		// The path joined to the root is longer, whatever the root: the
		// walk's paths, without a join to allocate.
		return rel
	}
	if abs := filepath.Join(rootPath, rel); len(abs) <= len(rel) {
		return abs
	}
	return rel
}

// includeFilter is search_text's include glob.
type includeFilter struct {
	pattern string
	byName  bool // no slash: the glob matches names, at any depth
}

func newIncludeFilter(pattern string) (*includeFilter, error) {
	if pattern == "" {
		return nil, nil
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("invalid include glob %q", pattern)
	}
	return &includeFilter{pattern: pattern, byName: !strings.Contains(pattern, "/")}, nil
}

func (f *includeFilter) match(e *entry) bool {
	if f.byName {
		return doublestar.MatchUnvalidated(f.pattern, e.name)
	}
	return doublestar.MatchUnvalidated(f.pattern, e.baseRel())
}
