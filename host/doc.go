// Package host runs tools for LLM agents. Its [ToolRegistry] holds
// [ExecutableTool]s, each enabled or disabled, exports the enabled ones'
// schemas in OpenAI's function format, and executes calls, turning every
// failure into text the model can read.
//
// Most tools are served by plugin binaries: [NewDefaultToolRegistry]
// starts every "agenthost-plugin-*" executable in a directory, asks each
// which tools it serves, and registers them. Tools can also be registered
// in-process; both kinds behave the same.
//
//	reg, err := host.NewDefaultToolRegistry(ctx, "bin/plugins", nil)
//	if err != nil {
//		return err
//	}
//	defer reg.Close()
//	fmt.Println(reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"README.md"}`)))
//
// Two error channels:
//   - A tool failure is text for the model, returned by Execute:
//     "Error: tool not found: NAME", "Error: tool not available: NAME is
//     disabled", or "Error executing NAME: MESSAGE" (the tool's error, a
//     panic, invalid arguments, the deadline, a plugin that died). MESSAGE
//     is cut to 4 KiB, with a marker saying how much was cut.
//   - An operator problem (a plugin that will not start, a refused tool)
//     is logged through the registry's hclog logger, naming the file and
//     the reason; the rest of the plugins keep working.
//
// The built-in plugins (agenthost-plugin-fs, -search, -bash, -session)
// register first, so a third-party plugin cannot take their tool names. A
// plugins directory, binary or lock file that another user could change is
// refused (see [InsecureError]); under a lock file, the host executes the
// very file it hashed.
//
// Tools that touch files stay inside the workspace roots
// (Options.Roots). A caller serving several clients narrows them per call
// with [WithRoots], to the roots a client offers: never wider, so a
// client's root outside them, or leading outside through a symbolic
// link, grants nothing.
//
// Plugin processes get no stdin, never write to the host's stdout, run in
// process groups of their own, are restarted on the next call after they
// die, and do not outlive the host, even one killed with SIGKILL (Linux).
//
// Beside it: package agent (host/agent) runs the model ↔ tool loop over a
// registry, package mcpserve (host/mcpserve) serves a registry to MCP
// clients, and package config (host/config) reads the configuration file
// the agenthost CLI reads into [Options].
//
// On Linux each plugin starts through a stage: the host re-executes its
// own executable, which an init function of a package this one imports
// recognises before main runs; it enters the tool's namespaces, limits
// and system-call filter and then executes the plugin. The embedding
// program's main never runs in a stage, nor, as Go orders package
// initialisation, most of its init functions: the stage's package
// imports only early parts of the standard library. An init of a
// package whose import path sorts before github.com/agenthost and that
// does not import this one may still run once per plugin start.
package host
