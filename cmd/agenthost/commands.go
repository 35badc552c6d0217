package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/sdk"
)

func toolsCommand() *command {
	var asJSON bool
	return &command{
		approval: policy.ModeAuto,
		usage:    "agenthost tools [--json]",
		flags:    func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print the list as JSON") },
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 0 {
				return usagef("tools takes no arguments")
			}
			tools := env.registry.Tools()
			if asJSON {
				return writeJSON(env.stdout, toolsJSON(tools))
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATUS\tPLUGIN\tDESCRIPTION")
			for _, t := range tools {
				plugin := textsafe.Name(t.Plugin)
				if plugin == "" {
					plugin = "(in-process)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", textsafe.Name(t.Name), toolStatus(t), plugin, summary(t.Description, 72))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(tools) == 0 {
				noPluginsHint(env)
			}
			return nil
		},
	}
}

// toolStatus is a tool's status as agenthost tools prints it: enabled,
// disabled, or deferred (enabled, and offered through find_tools).
func toolStatus(t host.ToolInfo) string {
	switch {
	case !t.Enabled:
		return "disabled"
	case t.Deferred:
		return "deferred"
	}
	return "enabled"
}

type toolJSON struct {
	Name        string           `json:"name"`
	Enabled     bool             `json:"enabled"`
	Deferred    bool             `json:"deferred,omitempty"`
	Plugin      string           `json:"plugin"`
	Description string           `json:"description"`
	Annotations host.Annotations `json:"annotations"`
}

func toolsJSON(tools []host.ToolInfo) []toolJSON {
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		out = append(out, toolJSON{Name: t.Name, Enabled: t.Enabled, Deferred: t.Deferred, Plugin: t.Plugin, Description: t.Description, Annotations: t.Annotations})
	}
	return out
}

func schemasCommand() *command {
	return &command{
		approval: policy.ModeAuto,
		usage:    "agenthost schemas",
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) > 0 {
				return usagef("schemas takes no arguments")
			}
			return writeJSON(env.stdout, env.registry.EnabledSchemas())
		},
	}
}

func callCommand() *command {
	return &command{
		usage: "agenthost call NAME [ARGS_JSON | -]",
		run: func(ctx context.Context, env *env, args []string) error {
			if len(args) == 0 || len(args) > 2 {
				return usagef("call takes a tool name and, optionally, its arguments as JSON")
			}
			name, input := args[0], "{}"
			if len(args) == 2 {
				input = args[1]
			}
			if input == "-" {
				data, err := io.ReadAll(env.stdin)
				if err != nil {
					return fmt.Errorf("reading the arguments from stdin: %w", err)
				}
				input = string(data)
			}
			result := env.registry.Execute(ctx, name, json.RawMessage(input))
			if host.IsError(result) {
				fmt.Fprintln(env.stderr, result)
				if !env.registry.HasTool(name) {
					noPluginsHint(env)
				}
				return errToolFailed
			}
			fmt.Fprint(env.stdout, result)
			if !strings.HasSuffix(result, "\n") {
				fmt.Fprintln(env.stdout)
			}
			return nil
		},
	}
}

func pluginsCommand() *command {
	return &command{
		approval:   policy.ModeAuto,
		usage:      "agenthost plugins [lock [--lock FILE]]",
		noRegistry: isPluginsLock,
		run: func(ctx context.Context, env *env, args []string) error {
			if isPluginsLock(args) {
				return pluginsLock(env, args[1:])
			}
			if len(args) > 0 {
				return usagef("plugins takes no arguments, or lock")
			}
			reports := env.registry.Plugins()
			if len(reports) == 0 {
				fmt.Fprintf(env.stdout, "no plugin binaries found in %s\n", textsafe.Name(env.pluginsDir))
				return nil
			}
			// Every name and message is printed with textsafe.Name: a
			// file name or what a plugin says of itself cannot forge a
			// line or an escape sequence.
			for _, r := range reports {
				path := textsafe.Name(r.Path)
				if r.Builtin {
					path += " (built-in)"
				}
				if printStartFailure(env.stdout, path, r.Err) {
					continue
				}
				if r.Err != nil {
					fmt.Fprintf(env.stdout, "%s\n  skipped: %s\n", path, textsafe.Name(r.Err.Error()))
					continue
				}
				protocol := fmt.Sprintf("protocol 1.%d", r.ProtocolMinor)
				if r.MCP != "" {
					protocol = "MCP server over stdio"
					if r.Remote {
						protocol = "MCP server over HTTP"
					}
				}
				fmt.Fprintf(env.stdout, "%s\n  %s %s (%s)\n  tools: %s\n", path, textsafe.Name(r.Name), textsafe.Name(r.Version), protocol, strings.Join(r.Tools, ", "))
				if len(r.Renamed) > 0 {
					fmt.Fprintf(env.stdout, "  renamed (their names are taken): %s\n", textsafe.Name(strings.Join(r.Renamed, ", ")))
				}
				for _, why := range r.Refused {
					fmt.Fprintf(env.stdout, "  refused: %s\n", textsafe.Name(why))
				}
				if len(r.LeftOut) > 0 {
					fmt.Fprintf(env.stdout, "  left out: %s (its tools and disabledTools)\n", strings.Join(r.LeftOut, ", "))
				}
				if r.Remote {
					fmt.Fprintln(env.stdout, "  sandbox: none (a remote server: nothing of it runs here)")
					continue
				}
				printSandbox(env.stdout, r)
			}
			return nil
		},
	}
}

// printSandbox says what the plugin asked for, what it was granted, and
// whether the kernel enforces it.
func printSandbox(w io.Writer, r host.SourceReport) {
	s := r.Sandbox
	fmt.Fprintf(w, "  sandbox: %s\n", s.Status())
	if len(s.Walls) > 0 {
		fmt.Fprintf(w, "    walls:   %s\n", strings.Join(s.Walls, "; "))
	}
	fmt.Fprintf(w, "    asked:   %s\n", s.Asked)
	fmt.Fprintf(w, "    granted: %s%s\n", s.Granted, systemNote(s.Granted))
	if len(s.Profile) > 0 {
		fmt.Fprintf(w, "    profile: %s (--dev-profile off: its grants alone)\n", strings.Join(s.Profile, "; "))
	}
	if len(s.Secrets) > 0 {
		fmt.Fprintf(w, "    never:   %s (whatever is granted)\n", strings.Join(s.Secrets, ", "))
	}
	if r.MCP != "" {
		fmt.Fprintf(w, "    more: \"grant\" in its mcpServers entry, or --grant %s=ITEM,...\n", textsafe.Name(r.Path))
	}
	if missing := notGranted(s.Asked, s.Granted); len(missing) > 0 {
		name := strings.TrimPrefix(filepath.Base(r.Path), host.PluginPrefix)
		fmt.Fprintf(w, "    not granted: %s (--grant %s=asked grants all it asks)\n", strings.Join(missing, ", "), textsafe.Name(name))
	}
}

// systemNote is what every sandboxed plugin gets besides its grants.
func systemNote(p sdk.Permissions) string {
	if p.Exec {
		return "; the system read-only, its programs executable"
	}
	return "; the system read-only"
}

// notGranted lists what a plugin asked for and does not get.
func notGranted(asked, granted sdk.Permissions) []string {
	var out []string
	for _, p := range asked.Read {
		if !slices.Contains(granted.Read, p) && !slices.Contains(granted.Write, p) {
			out = append(out, "read "+textsafe.Name(p))
		}
	}
	for _, p := range asked.Write {
		if !slices.Contains(granted.Write, p) {
			out = append(out, "write "+textsafe.Name(p))
		}
	}
	if asked.Network && !granted.Network {
		out = append(out, "network")
	}
	if asked.Exec && !granted.Exec {
		out = append(out, "exec")
	}
	if asked.SessionFile && !granted.SessionFile {
		out = append(out, "session")
	}
	return out
}

// noPluginsHint tells the operator, on stderr, when no plugin was found or
// none could be loaded, and where they were looked for: the answer a
// model gets stays "Error: tool not found: NAME".
func noPluginsHint(env *env) {
	var reports []host.SourceReport
	servers := 0
	for _, r := range env.registry.Plugins() {
		if r.Err == nil {
			return
		}
		if r.MCP != "" {
			servers++
			continue
		}
		reports = append(reports, r)
	}
	dir := textsafe.Name(env.pluginsDir)
	if servers > 0 {
		fmt.Fprintf(env.stderr, "agenthost: none of the %d MCP servers configured could be loaded (agenthost plugins says why)\n", servers)
		if len(reports) == 0 {
			return
		}
	}
	if len(reports) == 0 {
		fmt.Fprintf(env.stderr, "agenthost: no plugins found in %s %s\n", dir, pluginsDirHint)
		return
	}
	fmt.Fprintf(env.stderr, "agenthost: none of the %d plugins in %s could be loaded (agenthost plugins says why)\n", len(reports), dir)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// summary is the first sentence of a description, cut to max runes, and
// quoted (textsafe.Name) when it holds a control character.
func summary(desc string, max int) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if textsafe.NeedsQuoting(desc) {
		return textsafe.Name(cut(desc, max))
	}
	return cut(desc, max)
}

// cut is the first sentence of desc, cut to max runes.
func cut(desc string, max int) string {
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	if utf8.RuneCountInString(desc) <= max {
		return desc
	}
	runes := []rune(desc)
	return strings.TrimSpace(string(runes[:max-1])) + "…"
}
