// Package policy decides, before a tool runs, whether the call is allowed,
// must be asked about, or is denied, by rules such as Claude Code's:
//
//	run_bash(git status*)      a command line, read as a shell reads it
//	write_file(src/**)         a path, as resolved inside the roots
//	query(sql=SELECT*)         a top-level string argument of any other tool
//	github_*                   every tool whose name matches
//	mcp:github                 every tool of one MCP server
//
// A policy holds three lists of rules: deny beats ask, ask beats allow,
// and within one list the most specific matching rule is the one
// reported. A command line is allowed only when every command it runs is
// (git status; rm -rf x never passes run_bash(git status*)), and denied
// or asked about when any one of them is.
package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agenthost/agenthost/internal/toolcall"
)

// Effect is what a rule, or a policy, decides of a call.
type Effect int

const (
	// None: no rule matches; the approval mode decides.
	None Effect = iota
	Allow
	Ask
	Deny
)

func (e Effect) String() string {
	switch e {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "none"
}

// BashTool is the tool whose specifier is a command pattern.
const BashTool = "run_bash"

// FileTools are the tools whose specifier is a path glob, matched
// against every path argument of a call.
var FileTools = map[string]bool{
	"read_file": true, "read_multiple_files": true, "write_file": true, "edit_file": true,
	"list_dir": true, "file_info": true, "mkdir": true, "remove": true, "move": true,
	"search_text": true, "search_files": true,
}

// Rule is one rule: a tool pattern, and what the call's arguments must
// be (Spec) when it has one.
type Rule struct {
	// Text is the rule as written.
	Text string
	// Tool is a glob over tool names, as registered; "" in a rule over
	// every tool of a source.
	Tool string
	// Source is "mcp:SERVER" for a rule over one server's tools (all of
	// them, or those Tool matches: mcp:SERVER/TOOL).
	Source string
	// Spec is what is between the parentheses; HasSpec says there were
	// parentheses.
	Spec    string
	HasSpec bool
	// args are the ARG=GLOB pairs of a Spec over arguments.
	args []argPattern
}

type argPattern struct{ name, glob string }

// Parse reads a rule: TOOL or TOOL(SPECIFIER).
func Parse(text string) (Rule, error) {
	r := Rule{Text: text}
	s := strings.TrimSpace(text)
	if s == "" {
		return r, errors.New("an empty rule")
	}
	if open := strings.IndexByte(s, '('); open >= 0 {
		if !strings.HasSuffix(s, ")") {
			return r, fmt.Errorf("rule %q: a specifier must end with \")\"", text)
		}
		r.Spec, r.HasSpec = strings.TrimSpace(s[open+1:len(s)-1]), true
		s = strings.TrimSpace(s[:open])
		if r.Spec == "" {
			return r, fmt.Errorf("rule %q: empty parentheses (write %s alone for every call)", text, s)
		}
	} else if strings.ContainsAny(s, ")") {
		return r, fmt.Errorf("rule %q: \")\" without \"(\"", text)
	}
	if server, ok := strings.CutPrefix(s, "mcp:"); ok {
		server, tool, hasTool := strings.Cut(server, "/")
		if server == "" || strings.ContainsAny(server, "*?[ ") {
			return r, fmt.Errorf("rule %q: want mcp:SERVER or mcp:SERVER/TOOL, with a server's name", text)
		}
		if hasTool && !toolcall.ValidGlob(tool) {
			return r, fmt.Errorf("rule %q: %q is not a tool name or a glob over tool names", text, tool)
		}
		r.Source, r.Tool = "mcp:"+server, tool
	} else {
		if !toolcall.ValidGlob(s) {
			return r, fmt.Errorf("rule %q: %q is not a tool name or a glob over tool names", text, s)
		}
		r.Tool = s
	}
	if !r.HasSpec {
		return r, nil
	}
	switch {
	case r.Source == "" && r.Tool == BashTool:
		if _, err := commands(strings.ReplaceAll(r.Spec, "*", "x")); err != nil {
			return r, fmt.Errorf("rule %q: the command pattern does not parse: %v", text, err)
		}
	case r.Source == "" && FileTools[r.Tool]:
		if !doublestar.ValidatePattern(filepath.ToSlash(r.Spec)) {
			return r, fmt.Errorf("rule %q: %q is not a valid path glob", text, r.Spec)
		}
	default:
		for _, pair := range strings.Split(r.Spec, ",") {
			name, glob, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || name == "" {
				if r.Tool != "" && !strings.ContainsAny(r.Tool, "*?[") {
					return r, fmt.Errorf("rule %q: want ARG=GLOB pairs for %s's arguments", text, r.Tool)
				}
				r.args = nil
				break
			}
			r.args = append(r.args, argPattern{strings.TrimSpace(name), strings.TrimSpace(glob)})
		}
	}
	return r, nil
}

// Call is what the policy reads of a call.
type Call struct {
	// Tool is the tool's registered name.
	Tool string
	// Source is where it comes from: "mcp:SERVER" for an MCP server's
	// tool, the plugin's name otherwise.
	Source string
	// Args are the call's JSON arguments.
	Args json.RawMessage
	// Paths are the call's path arguments as resolved inside the roots
	// (symbolic links followed, ".." removed), absolute: what a file
	// tool's rules match.
	Paths []string
	// Root is the first workspace root, where a relative path glob
	// starts.
	Root string
}

// isBash: the call is run_bash's, whose arguments are a command line. A
// tool of that name from an MCP server is not.
func (c Call) isBash() bool { return c.Tool == BashTool && !strings.HasPrefix(c.Source, "mcp:") }

// isFile: the call is a file tool's, whose arguments are paths.
func (c Call) isFile() bool { return FileTools[c.Tool] && !strings.HasPrefix(c.Source, "mcp:") }

// Policy is three lists of rules.
type Policy struct {
	Allow, Ask, Deny []Rule
}

// Add parses text and adds it to the list of effect.
func (p *Policy) Add(effect Effect, text string) error {
	r, err := Parse(text)
	if err != nil {
		return err
	}
	switch effect {
	case Allow:
		p.Allow = append(p.Allow, r)
	case Ask:
		p.Ask = append(p.Ask, r)
	case Deny:
		p.Deny = append(p.Deny, r)
	default:
		return fmt.Errorf("rule %q: no list for %v", text, effect)
	}
	return nil
}

// Decide returns what the policy decides of c, and the rule that decided
// (nil for None). Deny beats ask, ask beats allow; within a list the most
// specific matching rule is reported.
func (p *Policy) Decide(c Call) (Effect, *Rule) {
	var cmds []command
	var cmdErr error
	if c.isBash() {
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(c.Args, &in)
		cmds, cmdErr = commands(in.Command)
	}
	for _, list := range []struct {
		effect Effect
		rules  []Rule
	}{{Deny, p.Deny}, {Ask, p.Ask}, {Allow, p.Allow}} {
		if r := best(list.rules, c, list.effect, cmds, cmdErr); r != nil {
			return list.effect, r
		}
	}
	return None, nil
}

// best is the most specific rule of rules that decides c.
func best(rules []Rule, c Call, effect Effect, cmds []command, cmdErr error) *Rule {
	if effect == Allow && c.isBash() {
		return allowLine(rules, c, cmds, cmdErr)
	}
	var found *Rule
	for i := range rules {
		r := &rules[i]
		if !r.matchesTool(c) || !r.matchesArgs(c, effect, cmds, cmdErr) {
			continue
		}
		if found == nil || r.specificity() > found.specificity() {
			found = r
		}
	}
	return found
}

// allowLine is the rule that allows a command line: one without a
// specifier, or, when every command of the line is allowed by a rule of
// its own, the most specific of those. A command that writes a file or
// runs a script that cannot be read is allowed only by a rule without a
// specifier.
func allowLine(rules []Rule, c Call, cmds []command, cmdErr error) *Rule {
	var whole *Rule
	for i := range rules {
		if r := &rules[i]; r.matchesTool(c) && !r.HasSpec && (whole == nil || r.specificity() > whole.specificity()) {
			whole = r
		}
	}
	if cmdErr != nil || len(cmds) == 0 {
		return whole
	}
	var found *Rule
	for _, cmd := range cmds {
		var m *Rule
		for i := range rules {
			r := &rules[i]
			if !r.HasSpec || !r.matchesTool(c) || cmd.writes || cmd.opaque || !commandMatch(r.Spec, cmd.line) {
				continue
			}
			if m == nil || r.specificity() > m.specificity() {
				m = r
			}
		}
		if m == nil {
			return whole
		}
		if found == nil || m.specificity() > found.specificity() {
			found = m
		}
	}
	return found
}

func (r *Rule) matchesTool(c Call) bool {
	if r.Source != "" && c.Source != r.Source {
		return false
	}
	if r.Tool == "" {
		return true
	}
	ok, _ := filepath.Match(r.Tool, c.Tool)
	return ok
}

// specificity orders rules: one with a specifier beats one without, a
// tool named beats a glob, and a longer specifier a shorter one.
func (r *Rule) specificity() int {
	n := len(r.Spec)
	if r.HasSpec {
		n += 1 << 20
	}
	if r.Tool != "" && !strings.ContainsAny(r.Tool, "*?") {
		n += 1 << 16
	}
	return n
}

// matchesArgs reports whether the call's arguments are what the rule's
// specifier says. For a command line, a deny or ask rule matches when it
// matches any one of the commands it runs.
func (r *Rule) matchesArgs(c Call, effect Effect, cmds []command, cmdErr error) bool {
	if !r.HasSpec {
		return true
	}
	switch {
	case c.isBash():
		if cmdErr != nil || len(cmds) == 0 {
			// A line that does not parse is never allowed by a
			// pattern, nor matched by one.
			return false
		}
		// Allow rules are weighed command by command (allowLine).
		for _, cmd := range cmds {
			if commandMatch(r.Spec, cmd.line) {
				return true
			}
		}
		return false
	case c.isFile():
		if len(c.Paths) == 0 {
			return false
		}
		glob := filepath.ToSlash(r.Spec)
		if !filepath.IsAbs(r.Spec) {
			glob = filepath.ToSlash(filepath.Join(c.Root, r.Spec))
		}
		for _, p := range c.Paths {
			ok, _ := doublestar.Match(glob, filepath.ToSlash(p))
			if effect == Allow && !ok {
				return false
			}
			if effect != Allow && ok {
				return true
			}
		}
		return effect == Allow
	default:
		if len(r.args) == 0 {
			return false
		}
		var args map[string]any
		if json.Unmarshal(c.Args, &args) != nil {
			return false
		}
		for _, a := range r.args {
			v, ok := args[a.name].(string)
			if !ok || !commandMatch(a.glob, v) {
				return false
			}
		}
		return true
	}
}

// commandMatch matches a command line against a pattern whose * matches
// any text and ? one character. "PREFIX:*" (Claude Code's form) is
// PREFIX alone or PREFIX followed by a space and anything. What is known
// only when the command runs (dynamic) is matched by * alone.
func commandMatch(pattern, line string) bool {
	if prefix, ok := strings.CutSuffix(pattern, ":*"); ok {
		return line == prefix || commandMatch(prefix+" *", line)
	}
	return globMatch(pattern, line)
}

// globMatch is a match of * and ? over any characters, spaces included.
func globMatch(pattern, s string) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				nextPx, nextSx = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) && s[sx] != dynamic[0] {
					px++
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextSx > 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}
