package host

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// A toolPattern selects tools the way the permission rules name them
// (host/policy): a tool's name, a glob over names (github_*), every tool
// of an MCP server (mcp:SERVER), or those of its tools a glob matches
// (mcp:SERVER/list_*, by the name the tool is registered under or the
// one the server gives it).
type toolPattern struct {
	text string
	// source is "mcp:SERVER", or "".
	source string
	// glob is a glob over tool names; "" with a source: all its tools.
	glob string
	// exact: text is a tool's name, matched as it is.
	exact bool
}

// parseToolPattern reads what Enable and Disable take.
func parseToolPattern(text string) (toolPattern, error) {
	p := toolPattern{text: text}
	if server, ok := strings.CutPrefix(text, MCPSourcePrefix); ok {
		server, glob, hasGlob := strings.Cut(server, "/")
		if server == "" || strings.ContainsAny(server, "*?[ ") {
			return p, fmt.Errorf("%s: want mcp:SERVER or mcp:SERVER/TOOL, with a server's name", textsafe.Name(text))
		}
		if hasGlob && !toolcall.ValidGlob(glob) {
			return p, fmt.Errorf("%s: %s is not a tool name or a glob over tool names (letters, digits, _, -, * and ?)", textsafe.Name(text), textsafe.Name(glob))
		}
		p.source, p.glob = MCPSourcePrefix+server, glob
		return p, nil
	}
	if !strings.ContainsAny(text, "*?") {
		p.exact = true
		return p, nil
	}
	if !toolcall.ValidGlob(text) {
		return p, fmt.Errorf("%s is not a tool name or a glob over tool names (letters, digits, _, -, * and ?)", textsafe.Name(text))
	}
	p.glob = text
	return p, nil
}

// matches reports whether the pattern selects the tool registered as
// name.
func (p toolPattern) matches(e *entry, name string) bool {
	switch {
	case p.exact:
		return name == p.text
	case p.source != "":
		if e.plugin != p.source {
			return false
		}
		if p.glob == "" {
			return true
		}
		if ok, _ := path.Match(p.glob, name); ok {
			return true
		}
		if t, isSource := e.tool.(*sourceTool); isSource && t.remote != name {
			ok, _ := path.Match(p.glob, t.remote)
			return ok
		}
		return false
	}
	ok, _ := path.Match(p.glob, name)
	return ok
}

// noMatch is the error of a pattern that selects no registered tool:
// ErrToolNotFound, saying what was looked for.
func (r *ToolRegistry) noMatchLocked(p toolPattern) error {
	switch {
	case p.exact:
		return fmt.Errorf("%w: %s", ErrToolNotFound, textsafe.Name(p.text))
	case p.source != "":
		server := strings.TrimPrefix(p.source, MCPSourcePrefix)
		if !slices.ContainsFunc(r.reports, func(rep SourceReport) bool { return rep.MCP == server }) {
			return fmt.Errorf("%w: %s matches no tool: no MCP server %s was loaded", ErrToolNotFound, textsafe.Name(p.text), textsafe.Name(server))
		}
		return fmt.Errorf("%w: %s matches none of the tools of MCP server %s", ErrToolNotFound, textsafe.Name(p.text), textsafe.Name(server))
	}
	return fmt.Errorf("%w: %s matches no tool", ErrToolNotFound, textsafe.Name(p.text))
}

// sourceFailedLocked reports whether the source ("mcp:SERVER") was to be
// loaded and could not be: its tools are not there to choose, and its
// failure was reported already.
func (r *ToolRegistry) sourceFailedLocked(source string) bool {
	failed := false
	for _, rep := range r.reports {
		if rep.MCP == "" || MCPSourcePrefix+rep.MCP != source {
			continue
		}
		if rep.Err == nil {
			return false
		}
		failed = true
	}
	return failed
}

// choice is one Enable or Disable the user made: the registry remembers
// them, in order, so that a tool of a source that comes later (an MCP
// server's tools/list_changed) comes as the user left the tools it
// names.
type choice struct {
	pattern toolPattern
	enabled bool
}

// rememberLocked records a choice; an earlier choice of the same
// pattern is forgotten.
func (r *ToolRegistry) rememberLocked(p toolPattern, enabled bool) {
	r.chosen = slices.DeleteFunc(r.chosen, func(c choice) bool { return c.pattern.text == p.text })
	r.chosen = append(r.chosen, choice{p, enabled})
}

// applyChoicesLocked sets whether a tool registered now is enabled as the
// last choice that names it says; a tool a choice enabled is offered even
// when its source's tools are deferred.
func (r *ToolRegistry) applyChoicesLocked(e *entry, name string) {
	for i := len(r.chosen) - 1; i >= 0; i-- {
		if c := r.chosen[i]; c.pattern.matches(e, name) {
			e.enabled = c.enabled
			if c.enabled {
				r.markLoadedLocked(e, name)
			}
			return
		}
	}
}

// choose enables or disables every tool text selects (a name, a glob,
// mcp:SERVER or mcp:SERVER/GLOB) and remembers it. Enabling also offers
// the tools when their source's tools are deferred, and re-enables a
// source disabled after repeated crashes. A pattern that selects nothing
// is ErrToolNotFound, unless it names an MCP server that failed to load.
func (r *ToolRegistry) choose(text string, enabled bool) error {
	p, err := parseToolPattern(text)
	if err != nil {
		return err
	}
	var resets []*toolSource
	flipped := false
	r.mu.Lock()
	d := r.deferStateLocked()
	matched := 0
	for _, name := range r.order {
		e := r.entries[name]
		if !p.matches(e, name) {
			continue
		}
		matched++
		held := r.holdsLocked(d, e, name)
		if e.enabled != enabled {
			e.enabled, flipped = enabled, true
		}
		if enabled {
			if r.markLoadedLocked(e, name) && held {
				flipped = true
			}
			if e.source != nil && !slices.Contains(resets, e.source) {
				resets = append(resets, e.source)
			}
		}
	}
	if matched == 0 && (p.source == "" || !r.sourceFailedLocked(p.source)) {
		err := r.noMatchLocked(p)
		r.mu.Unlock()
		return err
	}
	r.rememberLocked(p, enabled)
	r.mu.Unlock()
	for _, s := range resets {
		s.reset()
	}
	if flipped {
		r.changed()
	}
	return nil
}

// Filters of an MCP server's tools (MCPServer.Tools, DisabledTools).

// checkToolFilters checks the globs of the server's Tools and
// DisabledTools.
func (s *MCPServer) checkToolFilters() error {
	for _, list := range []struct {
		key   string
		globs []string
	}{{"tools", s.Tools}, {"disabledTools", s.DisabledTools}} {
		for _, g := range list.globs {
			if err := checkNameGlob(g); err != nil {
				return fmt.Errorf("its %s: %w", list.key, err)
			}
		}
	}
	return nil
}

// checkNameGlob checks a name or a glob over a server's tool names.
func checkNameGlob(g string) error {
	if g == "" {
		return errors.New("an empty tool name")
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%s is not a valid glob", textsafe.Name(g))
	}
	return nil
}

// filterTools is desc with only the tools the server's Tools (when set)
// and DisabledTools let through, by the names the server gives them, and
// the names of those left out. It is an error when none is left.
func (s *MCPServer) filterTools(desc *description) (*description, []string, error) {
	if len(s.Tools) == 0 && len(s.DisabledTools) == 0 {
		return desc, nil, nil
	}
	out := *desc
	out.Tools = nil
	var left []string
	for _, t := range desc.Tools {
		if (len(s.Tools) == 0 || matchAny(s.Tools, t.Name)) && !matchAny(s.DisabledTools, t.Name) {
			out.Tools = append(out.Tools, t)
		} else {
			left = append(left, textsafe.Name(t.Name))
		}
	}
	if len(out.Tools) == 0 && len(desc.Tools) > 0 {
		return nil, left, fmt.Errorf("its tools and disabledTools leave none of its %d tools", len(desc.Tools))
	}
	return &out, left, nil
}

func matchAny(globs []string, name string) bool {
	return slices.ContainsFunc(globs, func(g string) bool {
		ok, _ := path.Match(g, name)
		return ok
	})
}

// unmatchedFilters are the entries of the server's Tools and
// DisabledTools that match none of its tools.
func (s *MCPServer) unmatchedFilters(desc *description) []string {
	var out []string
	for _, g := range append(slices.Clone(s.Tools), s.DisabledTools...) {
		if !slices.ContainsFunc(desc.Tools, func(t toolSpec) bool { ok, _ := path.Match(g, t.Name); return ok }) {
			out = append(out, textsafe.Name(g))
		}
	}
	return out
}

// filterMCP applies the server's filters to what it lists, and logs the
// filters that match none of its tools. left are the tools left out.
func (r *ToolRegistry) filterMCP(proc *toolSource, desc *description) (out *description, left []string, err error) {
	k, ok := proc.kind.(mcpKind)
	if !ok || desc == nil {
		return desc, nil, nil
	}
	if unmatched := k.server.unmatchedFilters(desc); len(unmatched) > 0 {
		r.logger.Warn("a tools or disabledTools entry matches none of the MCP server's tools", "server", k.server.Name, "entries", strings.Join(unmatched, ", "))
	}
	return k.server.filterTools(desc)
}

// filterLoad applies each described server's filters (an error when
// they leave none of its tools), and returns the tools each left out.
func (r *ToolRegistry) filterLoad(l *load) [][]string {
	left := make([][]string, len(l.procs))
	for i, proc := range l.procs {
		if l.errs[i] == nil && l.descs[i] != nil {
			l.descs[i], left[i], l.errs[i] = r.filterMCP(proc, l.descs[i])
		}
	}
	return left
}

// recordLeftOut records, in the reports of a load, the tools each
// server's filters left out.
func (r *ToolRegistry) recordLeftOut(l *load, reports []SourceReport, left [][]string) {
	for i, proc := range l.procs {
		if len(left[i]) > 0 {
			reports[i].LeftOut = left[i]
			r.setLeftOut(proc, left[i])
		}
	}
}

// allowedMCP is what a server lists again, filtered as at load; when
// the filters leave none of its tools, none.
func (r *ToolRegistry) allowedMCP(proc *toolSource, desc *description) *description {
	out, left, err := r.filterMCP(proc, desc)
	r.setLeftOut(proc, left)
	if err != nil {
		r.logger.Warn("an MCP server lists no tool its configuration lets through", "server", proc.name, "reason", err)
		empty := *desc
		empty.Tools = nil
		return &empty
	}
	return out
}

// setLeftOut records, in the source's report, the tools its filters left
// out.
func (r *ToolRegistry) setLeftOut(proc *toolSource, left []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.reports {
		if r.reports[i].Path == proc.path {
			r.reports[i].LeftOut = left
		}
	}
}
