package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
)

const usageText = `agenthost gives LLM agents tools served by plugin binaries.

Usage:
  agenthost [flags] COMMAND [ARGS]

Commands:
  tools                        list every tool: name, status, plugin, description
  schemas                      print the enabled tools' schemas, as a model gets them
  call NAME [ARGS_JSON | -]    run one tool with JSON arguments (- reads them from stdin)
  plugins                      list the plugin binaries found, or why each was skipped
  chat [-m TEXT]               talk with a model that calls the tools (interactive,
                               or one answer with -m); see agenthost chat --help
  mcp [--http ADDR]            serve the enabled tools to MCP clients over stdio,
                               or streamable HTTP at ADDR/mcp (loopback unless a
                               host is given; --token or $AGENTHOST_MCP_TOKEN sets
                               a bearer token, required off loopback)

Flags (before or after the command):
  --plugins DIR      the plugins directory (default $AGENTHOST_PLUGINS, else
                     a "plugins" directory beside the executable)
  --root DIR         a workspace root (repeatable; default the current
                     directory): file tools stay inside the roots, and
                     relative paths resolve against the first; --root /
                     opts out
  --enable NAME      enable a tool (repeatable); opt-in tools start disabled
  --disable NAME     disable a tool (repeatable)
  --log-level LEVEL  trace, debug, info, warn (default) or error; logs go to stderr

Run agenthost COMMAND --help for a command's own flags.
`

// globals are the flags every command takes.
type globals struct {
	plugins  string
	roots    listFlag
	enable   listFlag
	disable  listFlag
	logLevel string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.plugins, "plugins", g.plugins, "the plugins `DIR`ectory")
	fs.Var(&g.roots, "root", "a workspace root `DIR` (repeatable; default the current directory)")
	fs.Var(&g.enable, "enable", "enable the tool `NAME` (repeatable)")
	fs.Var(&g.disable, "disable", "disable the tool `NAME` (repeatable)")
	fs.StringVar(&g.logLevel, "log-level", g.logLevel, "log `LEVEL`: trace, debug, info, warn or error")
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// command is one sub-command: it adds its own flags to fs and runs with
// the registry built from the global flags.
type command struct {
	usage string
	flags func(fs *flag.FlagSet)
	// prepare, if set, checks the command's flags before the plugins
	// start.
	prepare func() error
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	registry       *host.ToolRegistry
}

func commands() map[string]*command {
	return map[string]*command{
		"tools":   toolsCommand(),
		"schemas": schemasCommand(),
		"call":    callCommand(),
		"plugins": pluginsCommand(),
		"chat":    chatCommand(),
		"mcp":     mcpCommand(),
	}
}

// run is the whole program, testable: main only adds the process's
// stdio, signals and exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{plugins: os.Getenv("AGENTHOST_PLUGINS"), logLevel: "warn"}
	root := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	root.SetOutput(io.Discard)
	g.register(root)
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			return nil
		}
		return usagef("%v", err)
	}
	if root.NArg() == 0 {
		return usagef("no command given")
	}
	name := root.Arg(0)
	if name == "help" {
		fmt.Fprint(stdout, usageText)
		return nil
	}
	cmd, ok := commands()[name]
	if !ok {
		return usagef("unknown command %q", name)
	}

	fs := flag.NewFlagSet("agenthost "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if err := fs.Parse(root.Args()[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return nil
		}
		return usagef("%s: %v", name, err)
	}

	level := hclog.LevelFromString(g.logLevel)
	if level == hclog.NoLevel {
		return usagef("unknown log level %q", g.logLevel)
	}
	if cmd.prepare != nil {
		if err := cmd.prepare(); err != nil {
			return err
		}
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "agenthost", Level: level, Output: stderr})

	dir, err := pluginsDir(g.plugins)
	if err != nil {
		return err
	}
	for _, root := range g.roots {
		if info, err := os.Stat(root); err != nil || !info.IsDir() {
			return usagef("--root %s: not a directory", root)
		}
	}
	reg, err := host.NewDefaultToolRegistry(ctx, dir, &host.Options{Logger: logger, Roots: g.roots})
	if err != nil {
		return err
	}
	defer reg.Close()
	for _, n := range g.enable {
		if err := reg.Enable(n); err != nil {
			return usagef("--enable %s: %v", n, err)
		}
	}
	for _, n := range g.disable {
		if err := reg.Disable(n); err != nil {
			return usagef("--disable %s: %v", n, err)
		}
	}
	return cmd.run(ctx, &env{stdin: stdin, stdout: stdout, stderr: stderr, registry: reg}, fs.Args())
}

func printCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n", cmd.usage)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// pluginsDir is the --plugins flag, else a "plugins" directory beside the
// executable.
func pluginsDir(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the plugins directory: %w (use --plugins)", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}
