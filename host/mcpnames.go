package host

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// autoPrefix is the prefix a tool of an MCP server is registered with
// when its name is taken by a tool of another source (a built-in, a
// plugin, an earlier server, an in-process tool): the server's name, each
// character a tool name may not hold made "_". A server whose entry sets
// "prefix" gets none: its prefix is the user's choice, for all its tools.
func (k mcpKind) autoPrefix() string {
	if k.server.Prefix != "" {
		return ""
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, k.server.Name)
}

// toolName is the name the tool name of proc registers under: its
// source's (toolName of its kind), or, for an MCP server's tool whose
// name a tool of another source holds, the server's automatic prefix
// (autoPrefix) and the tool's name, "NAME_tool". A client that pasted
// the server's block gets all of its tools, whatever the built-ins are
// called.
func (r *ToolRegistry) toolName(proc *toolSource, name string) string {
	plain := proc.kind.toolName(name)
	k, ok := proc.kind.(mcpKind)
	if !ok {
		return plain
	}
	prefix := k.autoPrefix()
	if prefix == "" {
		return plain
	}
	r.mu.RLock()
	e, taken := r.entries[plain]
	r.mu.RUnlock()
	if !taken || e.source == proc {
		return plain
	}
	return prefix + "_" + name
}

// renamed is how a report lists a tool registered under the server's
// automatic prefix: "read_file as filesystem_read_file".
func renamed(remote, name string) string {
	return textsafe.Name(remote) + " as " + name
}

// logRenamed says, in one line for the server, which of its tools were
// registered under its name as a prefix because their names were taken:
// a warning when its tools were just listed (the first time this
// configuration loads, or after it changed), at info level when they
// came from the cache, so that a warm command stays quiet.
func (r *ToolRegistry) logRenamed(rep SourceReport) {
	if len(rep.Renamed) == 0 {
		return
	}
	what := fmt.Sprintf("%d tools of the MCP server %s have names", len(rep.Renamed), textsafe.Name(rep.MCP))
	if len(rep.Renamed) == 1 {
		what = fmt.Sprintf("a tool of the MCP server %s has a name", textsafe.Name(rep.MCP))
	}
	msg := what + " that other tools hold, registered with its name as a prefix: " + strings.Join(rep.Renamed, ", ") +
		` (a "prefix" in its mcpServers entry sets another for all its tools)`
	if rep.Cached {
		r.logger.Info(msg, "server", rep.Path)
		return
	}
	r.logger.Warn(msg, "server", rep.Path)
}

// prefixHint says how a tool of the server registered as name, which is
// taken, could be registered all the same: another prefix.
func (k mcpKind) prefixHint(name string) string {
	if k.server.Prefix != "" {
		return `its "prefix" ` + textsafe.Name(k.server.Prefix) + ` makes names that are taken: another one registers its tools under others`
	}
	if auto := k.autoPrefix() + "_"; strings.HasPrefix(name, auto) {
		name = strings.TrimPrefix(name, auto)
	}
	return `a "prefix" in its mcpServers entry registers its tools as PREFIX_` + name
}
