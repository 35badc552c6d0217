package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

// Deferred tools. Every tool a model request offers costs its schema's
// tokens in every request: ten MCP servers of 15 tools each are some
// 40,000 tokens. Past a size, the tools of MCP servers are deferred: the
// request offers one search tool, find_tools, in their place, whose call
// finds tools by what they do and loads them, so that the next request
// offers them one by one (EnabledSchemas). The rest of the registry sees
// a deferred tool as any enabled tool: it is listed (Tools, with
// ToolInfo.Deferred) and it runs.

// DeferMode says whether an MCP server's tools are deferred
// (MCPServer.Defer).
type DeferMode int

const (
	// DeferAuto defers the server's tools while the tools of every such
	// server together are larger than Options.DeferTokens, or while the
	// registry's enabled tools are more than a request may carry.
	DeferAuto DeferMode = iota
	// DeferAlways defers the server's tools whatever their size.
	DeferAlways
	// DeferNever offers the server's tools one by one, always.
	DeferNever
)

// DefaultDeferTokens is the size past which the tools of MCP servers are
// deferred, unless Options.DeferTokens says otherwise: 10,000 tokens,
// some 40 KB of names, descriptions and schemas (5% of a 200,000-token
// context window, a third of a 32,000-token one).
const DefaultDeferTokens = 10000

// maxOfferedTools is the most tools a request may offer: OpenAI's chat
// completions take at most 128. Past it, the tools of DeferAuto servers
// are deferred whatever their size.
const maxOfferedTools = 128

// FindToolsName is the name of the search tool a registry offers while it
// defers tools. A tool of that name from elsewhere takes precedence:
// then nothing is deferred.
const FindToolsName = "find_tools"

// deferMode is how the source's tools are deferred.
func (p *toolSource) deferMode() DeferMode {
	if k, ok := p.kind.(mcpKind); ok {
		return k.server.Defer
	}
	return DeferNever
}

// tokens estimates what a tool's schema costs in a request: its bytes
// over 4, the JSON around them counted too.
func (e *entry) tokens() int {
	f := e.schema.Function
	return (len(f.Name) + len(f.Description) + len(f.Parameters) + 60) / 4
}

// deferState is what deferral makes of the registry now.
type deferState struct {
	// active: the search tool can be offered (its name is free, and the
	// user did not disable it).
	active bool
	// autoOver: the tools of DeferAuto servers are deferred.
	autoOver bool
}

func (r *ToolRegistry) deferStateLocked() deferState {
	var d deferState
	if e, taken := r.entries[FindToolsName]; taken && e != r.finder {
		return d
	}
	if r.finder != nil && r.entries[FindToolsName] == r.finder {
		d.active = r.finder.enabled
	} else {
		d.active = r.chosenEnabledLocked(&entry{}, FindToolsName, true)
	}
	if !d.active || r.deferTokens < 0 {
		return d
	}
	tokens, count := 0, 0
	// The size is the tools' all, loaded or not: loading some does not
	// bring the others back one by one.
	for _, e := range r.entries {
		if !e.enabled || e == r.finder {
			continue
		}
		count++
		if e.source != nil && e.source.deferMode() == DeferAuto {
			tokens += e.tokens()
		}
	}
	d.autoOver = tokens > 0 && (tokens > r.deferTokens || count > maxOfferedTools)
	return d
}

// chosenEnabledLocked is whether the user's last choice that names the
// tool enabled it, or def when none does.
func (r *ToolRegistry) chosenEnabledLocked(e *entry, name string, def bool) bool {
	for i := len(r.chosen) - 1; i >= 0; i-- {
		if r.chosen[i].pattern.matches(e, name) {
			return r.chosen[i].enabled
		}
	}
	return def
}

// defersLocked reports whether the tool's source has its tools deferred
// now.
func (r *ToolRegistry) defersLocked(d deferState, e *entry) bool {
	if !d.active || e.source == nil {
		return false
	}
	switch e.source.deferMode() {
	case DeferAlways:
		return true
	case DeferAuto:
		return d.autoOver
	}
	return false
}

// holdsLocked reports whether an enabled tool is held back from the
// requests: its source's tools are deferred and it was not loaded.
func (r *ToolRegistry) holdsLocked(d deferState, e *entry, name string) bool {
	return e.enabled && !r.loaded[name] && r.defersLocked(d, e)
}

// markLoadedLocked has a deferrable tool, registered as name, offered
// from now on, and reports whether it was not before.
func (r *ToolRegistry) markLoadedLocked(e *entry, name string) bool {
	if e.source == nil || e.source.deferMode() == DeferNever || r.loaded[name] {
		return false
	}
	if r.loaded == nil {
		r.loaded = map[string]bool{}
	}
	r.loaded[name] = true
	return true
}

// reconcileLocked registers the search tool while a tool is held back,
// and unregisters it once none is.
func (r *ToolRegistry) reconcileLocked() {
	if e, taken := r.entries[FindToolsName]; taken && e != r.finder {
		if !r.finderWarned && r.deferTokens >= 0 {
			r.finderWarned = true
			r.logger.Warn("no tool is deferred: the name of the search tool is taken", "tool", FindToolsName, "source", e.plugin)
		}
		return
	}
	d := r.deferStateLocked()
	held := false
	for _, name := range r.order {
		if r.holdsLocked(d, r.entries[name], name) {
			held = true
			break
		}
	}
	present := r.finder != nil && r.entries[FindToolsName] == r.finder
	switch {
	case held && !present:
		if r.finder == nil {
			e, err := newEntry(r.newFinder())
			if err != nil {
				panic(err) // the tool is the host's own
			}
			r.finder = e
		}
		r.finder.enabled = true
		r.entries[FindToolsName] = r.finder
		r.order = append(r.order, FindToolsName)
	case !held && present:
		delete(r.entries, FindToolsName)
		r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == FindToolsName })
	}
}

// offeredLocked are the schemas a request carries: the enabled tools not
// held back, and the search tool, which lists those that are.
func (r *ToolRegistry) offeredLocked() []ChatTool {
	d := r.deferStateLocked()
	schemas := make([]ChatTool, 0, len(r.order))
	finderAt := -1
	var held []string
	for _, name := range r.order {
		e := r.entries[name]
		switch {
		case !e.enabled:
		case e == r.finder:
			finderAt = len(schemas)
			schemas = append(schemas, e.schema)
		case r.holdsLocked(d, e, name):
			held = append(held, name)
		default:
			schemas = append(schemas, e.schema)
		}
	}
	if finderAt >= 0 {
		if len(held) == 0 {
			return slices.Delete(schemas, finderAt, finderAt+1)
		}
		s := schemas[finderAt]
		s.Function.Description = r.finderDescriptionLocked(held)
		schemas[finderAt] = s
	}
	return schemas
}

// The search tool.

const findToolsDescription = "Find tools that are not in your tool list yet, and load them. " +
	"To keep requests small, the tools of some MCP servers are not listed one by one. " +
	"query: words for what you need (\"create issue\"), tool names (\"list_issues, get_issue\"), " +
	"or a pattern (github_*, mcp:SERVER for all of a server's tools, mcp:SERVER/list_*). " +
	"The tools found are loaded: from your next step on they are in your tool list, and you call them as any other."

// maxFinderListing bounds the names the search tool's description lists;
// past it, it gives each server's count of tools.
const maxFinderListing = 4096

// finderDescriptionLocked is the search tool's description: what it does
// and the tools held back, by source.
func (r *ToolRegistry) finderDescriptionLocked(held []string) string {
	var sources []string
	bySource := map[string][]string{}
	for _, name := range held {
		src := r.entries[name].plugin
		if bySource[src] == nil {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], name)
	}
	var b strings.Builder
	b.WriteString(findToolsDescription)
	b.WriteString(" Not loaded yet:")
	for _, src := range sources {
		fmt.Fprintf(&b, "\n%s (%d): %s", textsafe.Name(src), len(bySource[src]), strings.Join(bySource[src], ", "))
	}
	if b.Len()-len(findToolsDescription) <= maxFinderListing {
		return b.String()
	}
	b.Reset()
	b.WriteString(findToolsDescription)
	b.WriteString(" Not loaded yet, by server (search them by words, or load one's tools with mcp:SERVER):")
	for _, src := range sources {
		fmt.Fprintf(&b, "\n%s: %d tools", textsafe.Name(src), len(bySource[src]))
	}
	return b.String()
}

type findInput struct {
	Query string `json:"query" jsonschema:"words for what you need, tool names separated by commas, or a pattern: github_*, mcp:SERVER, mcp:SERVER/list_*"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many tools (default 5 for words, 20 for names or a pattern; at most 20)"`
}

// maxFound bounds the tools one search loads.
const maxFound = 20

// newFinder is the search tool of the registry.
func (r *ToolRegistry) newFinder() ExecutableTool {
	return sdk.NewTool(sdk.Info{
		Name:        FindToolsName,
		Title:       "Find tools",
		Description: findToolsDescription,
		// It changes which tools the registry offers, and nothing else.
		Annotations: sdk.Annotations{ReadOnly: true, Idempotent: true},
	}, func(_ context.Context, in findInput) (string, error) {
		return r.find(in.Query, in.Limit)
	})
}

type candidate struct {
	name string
	e    *entry
}

// find loads the deferred tools the query selects, and says which.
func (r *ToolRegistry) find(query string, limit int) (string, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return "", errors.New("an empty query: give words for what you need, tool names, or a pattern such as mcp:SERVER")
	}
	r.mu.Lock()
	d := r.deferStateLocked()
	var cands []candidate
	for _, name := range r.order {
		if e := r.entries[name]; e.enabled && r.defersLocked(d, e) {
			cands = append(cands, candidate{name, e})
		}
	}
	found, more, err := selectTools(cands, query, limit)
	loaded := 0
	for _, c := range found {
		if r.markLoadedLocked(c.e, c.name) {
			loaded++
		}
	}
	r.mu.Unlock()
	if err != nil {
		return "", err
	}
	if loaded > 0 {
		r.changed()
	}
	if len(found) == 0 {
		return fmt.Sprintf("No deferred tool matches %q. find_tools' description lists them: try other words, their names, or mcp:SERVER.", query), nil
	}
	var b strings.Builder
	noun := "tools"
	if len(found) == 1 {
		noun = "tool"
	}
	fmt.Fprintf(&b, "Loaded %d %s; from your next step on they are in your tool list, with their parameters:", len(found), noun)
	for _, c := range found {
		fmt.Fprintf(&b, "\n- %s (%s): %s", c.name, textsafe.Name(c.e.plugin), excerpt(c.e.schema.Function.Description, 200))
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n%d more match: ask again with narrower words or a larger limit (at most %d).", more, maxFound)
	}
	return b.String(), nil
}

// selectTools picks the candidates the query selects, at most limit of
// them, and says how many more it selects. A query is a pattern
// (mcp:SERVER, a glob), names (all of its words are tools' names), or
// words, which rank the tools by where they occur: in the name, the
// source's name, the description.
func selectTools(cands []candidate, query string, limit int) (found []candidate, more int, err error) {
	take := func(sel []candidate, def int) ([]candidate, int, error) {
		if limit <= 0 {
			limit = def
		}
		limit = min(limit, maxFound)
		if len(sel) > limit {
			return sel[:limit], len(sel) - limit, nil
		}
		return sel, 0, nil
	}
	if strings.HasPrefix(query, MCPSourcePrefix) || strings.ContainsAny(query, "*?") {
		p, err := parseToolPattern(query)
		if err != nil {
			return nil, 0, err
		}
		var sel []candidate
		for _, c := range cands {
			if p.matches(c.e, c.name) {
				sel = append(sel, c)
			}
		}
		return take(sel, maxFound)
	}
	words := strings.FieldsFunc(query, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	var named []candidate
	for _, w := range words {
		i := slices.IndexFunc(cands, func(c candidate) bool { return c.name == w })
		if i < 0 {
			named = nil
			break
		}
		if !slices.ContainsFunc(named, func(c candidate) bool { return c.name == w }) {
			named = append(named, cands[i])
		}
	}
	if len(named) > 0 {
		return take(named, maxFound)
	}

	terms := searchTerms(query)
	type scored struct {
		candidate
		score, hits int
	}
	var sel []scored
	for _, c := range cands {
		name := strings.ToLower(c.name)
		parts := nameParts(c.name)
		source := strings.ToLower(strings.TrimPrefix(c.e.plugin, MCPSourcePrefix))
		desc := strings.ToLower(c.e.schema.Function.Description)
		s := scored{candidate: c}
		for _, t := range terms {
			score := 0
			for i, form := range t {
				// A word as written counts more than its other forms.
				w := 2
				if i > 0 {
					w = 1
				}
				switch {
				case name == form:
					score = max(score, 12*w)
				case slices.Contains(parts, form):
					score = max(score, 6*w)
				case strings.Contains(name, form):
					score = max(score, 4*w)
				case source == form || strings.Contains(source, form):
					score = max(score, 3*w)
				case strings.Contains(desc, form):
					score = max(score, w)
				}
			}
			if score > 0 {
				s.score += score
				s.hits++
			}
		}
		if s.score > 0 {
			sel = append(sel, s)
		}
	}
	slices.SortStableFunc(sel, func(a, b scored) int {
		if a.hits != b.hits {
			return b.hits - a.hits
		}
		return b.score - a.score
	})
	out := make([]candidate, len(sel))
	for i, s := range sel {
		out[i] = s.candidate
	}
	return take(out, 5)
}

// searchTerms are the query's words, lower case, each with the forms it
// is looked for in (the word, and without a plural's s).
func searchTerms(query string) [][]string {
	var terms [][]string
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		forms := []string{w}
		if s, ok := strings.CutSuffix(w, "s"); ok && len(s) >= 3 {
			forms = append(forms, s)
		}
		terms = append(terms, forms)
	}
	return terms
}

// stopWords are left out of a search: they occur in every description.
var stopWords = map[string]bool{"the": true, "a": true, "an": true, "of": true, "to": true, "in": true, "for": true, "and": true, "or": true, "on": true, "with": true, "tool": true, "tools": true}

// nameParts are the words of a tool's name, lower case: split at _, -
// and the changes of case.
func nameParts(name string) []string {
	var parts []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return parts
}

// excerpt is the start of a description on one line, cut to about max
// bytes on a rune boundary.
func excerpt(desc string, max int) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if len(desc) <= max {
		return textsafe.Name(desc)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(desc[cut]) {
		cut--
	}
	return textsafe.Name(strings.TrimSpace(desc[:cut]) + "…")
}
