// Package sdktest tests a tool through the host, in an ordinary go test:
// a test calls the tool by name with JSON arguments and gets exactly the
// string a model would read, the failures included:
//
//	func TestGreet(t *testing.T) {
//		h := sdktest.New(t, plugin, sdktest.Options{})
//		if got := h.Call("greet", `{"name":"Ada"}`); got != "Hello, Ada." {
//			t.Errorf("greet = %q", got)
//		}
//		if got, want := h.Call("greet", `{}`), `Error executing greet: invalid arguments: required: missing properties: ["name"]`; got != want {
//			t.Errorf("greet without a name = %q, want %q", got, want)
//		}
//	}
//
// where plugin is the [sdk.Plugin] that the plugin's main serves, kept in
// a package variable for its tests to reach:
//
//	var plugin = sdk.Plugin{Tools: []sdk.Tool{greet}}
//
//	func main() { sdk.ServePlugin(plugin) }
//
// The host end is the host's own registry ([host.ToolRegistry]), so a call
// goes through what a model's call goes through: the arguments are
// checked against the tool's schema (by the tool itself for a tool built
// with [sdk.NewTool], by the host for any other), the call has a
// deadline, and every failure is one of the registry's texts:
//
//	Error: tool not found: NAME
//	Error: tool not available: NAME is disabled
//	Error executing NAME: MESSAGE
//
// the last for the tool's error, a panic ("panic: ..."), arguments the
// schema refuses ("invalid arguments: ..."), the deadline ("timed out
// after 30s") and the caller's cancellation ("canceled").
//
// [New] serves the plugin inside the test's process, through the server
// that [sdk.ServePlugin] runs in a plugin binary, over gRPC on a unix
// socket of the test's own, to which the host attaches
// ([host.ToolRegistry.AttachPlugin]): the tool protocol is the real one,
// spoken by the host's own client, and [sdk.HostState] is a call back to
// the host as in a plugin. What only a separate process has is missing: a
// sandbox, a scrubbed environment, a process that a crash or os.Exit ends
// on its own. [Binary] has those: it loads a built plugin binary as the
// host does, in a fresh plugins directory, and runs it in the host's
// sandbox with the permissions it declares; [Build] builds one.
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// Options configure the host a test calls tools through. The zero value
// works.
type Options struct {
	// Roots are the workspace roots of every call (sdk.Roots), as the
	// host's --root gives them: relative ones are made absolute, the first
	// is where relative paths resolve. None means, for New and Binary, a
	// fresh directory of the test's own (t.TempDir), and for Start the
	// current directory, as for the host.
	Roots []string

	// State is the agent's state that sdk.HostState answers with, as a
	// host's agent would give it. Nil means the host offers none: the
	// tool's HostState returns sdk.ErrNoHostState. SetState changes it.
	State *sdk.State

	// Timeout is the deadline of every call of a tool that declares none
	// (sdk.Annotations.Timeout); zero means the host's, 30 seconds.
	Timeout time.Duration

	// Log receives the host's log, the lines of the tools' sdk.Logger
	// among them. Nil means, for New and Binary, the test's log (t.Log),
	// shown when the test fails or runs with -v; for Start, nowhere.
	Log io.Writer

	// Grant is what the user grants a plugin binary beyond the host's
	// defaults (the host's --grant): the network, other programs, paths,
	// or everything it asks for. It applies to Binary only; the zero
	// value grants nothing, as for a user who granted nothing.
	Grant host.Grant
}

// Host is a host with one plugin loaded, whose tools a test calls. It is
// safe for concurrent use.
type Host struct {
	reg   *host.ToolRegistry
	log   hclog.Logger
	close func()
	once  sync.Once
}

// New serves p inside the test's process and returns a host holding its
// tools; the host and the plugin stop when the test ends. A plugin that
// the host would not load (malformed permissions, two tools of one name),
// or a tool it would refuse (an invalid name or schema, a schema or
// description over the host's limits), fails the test.
func New(t testing.TB, p sdk.Plugin, opts Options) *Host {
	t.Helper()
	opts = forTest(t, opts)
	h, err := Start(p, opts)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Start is New outside a test: it serves p inside this process and
// returns a host holding its tools, which Close stops.
func Start(p sdk.Plugin, opts Options) (h *Host, err error) {
	defer func() {
		// A malformed plugin panics in sdk.ServePlugin: here, it is an
		// error.
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("%v", r)
		}
	}()
	h = newHost(opts, nil)
	stop, err := serve(p, h.reg, h.log.ResetNamed("plugin"))
	if err != nil {
		return nil, err
	}
	h.close = func() {
		h.reg.Close()
		stop()
	}
	return h, nil
}

// Binary loads the plugin binary at path as the host loads the binaries
// of its plugins directory, from a directory of its own (the binary is
// copied there, under a name that starts with "agenthost-plugin-"), and
// returns a host holding its tools. The plugin runs in its own process,
// with the host's scrubbed environment, in the host's sandbox as far as
// the kernel enforces it (the host's --sandbox auto), with the
// permissions it declares and opts.Grant: a tool that reaches beyond
// them fails here as it fails for a user. It stops when the test ends. A
// binary that the host skips, or a tool that it refuses, fails the test.
func Binary(t testing.TB, path string, opts Options) *Host {
	t.Helper()
	opts = forTest(t, opts)
	dir := t.TempDir()
	name := filepath.Base(path)
	if !strings.HasPrefix(name, host.PluginPrefix) {
		name = host.PluginPrefix + name
	}
	if err := copyFile(path, filepath.Join(dir, name)); err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	h := newHost(opts, map[string]host.Grant{name: opts.Grant})
	t.Cleanup(func() { h.Close() })
	reports, err := h.reg.LoadPlugins(context.Background(), dir)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	for _, rep := range reports {
		if rep.Err != nil {
			t.Fatalf("sdktest: the host skips %s: %v", path, rep.Err)
		}
		for _, refused := range rep.Refused {
			t.Errorf("sdktest: the host refuses a tool of %s: %s", path, refused)
		}
	}
	return h
}

// Build builds the main package pkg (an import path, or a directory such
// as "." for the package under test) with go build, into the test's
// temporary directory, and returns the binary's path, for Binary:
//
//	h := sdktest.Binary(t, sdktest.Build(t, "."), sdktest.Options{})
//
// Each call builds again (from go's build cache); tests that share a
// binary build it once.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	name := path.Base(pkg)
	if name == "." || name == ".." || name == "/" {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			t.Fatalf("sdktest: %v", err)
		}
		name = filepath.Base(abs)
	}
	out := filepath.Join(t.TempDir(), host.PluginPrefix+name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sdktest: building %s: %v\n%s", pkg, err, output)
	}
	return out
}

// Call calls the tool name with args, a JSON object ("" for none), and
// returns what the model would read: the tool's result, or one of the
// host's failure texts. Use host.IsError to tell them apart.
func (h *Host) Call(name, args string) string {
	return h.CallContext(context.Background(), name, args)
}

// CallContext is Call under ctx: a deadline of ctx that comes before the
// call's own is the call's, and cancelling ctx cancels the call, which
// then reads "Error executing NAME: canceled".
func (h *Host) CallContext(ctx context.Context, name, args string) string {
	return h.reg.Execute(ctx, name, json.RawMessage(args))
}

// Tools describes the plugin's tools as the host lists them, in the
// plugin's order. An opt-in tool (sdk.Annotations.OptIn) is there
// disabled, as in the host: Registry().Enable enables it. Their Plugin is
// the binary's name for Binary, and the test binary's for New.
func (h *Host) Tools() []host.ToolInfo { return h.reg.Tools() }

// Roots returns the workspace roots of the calls, absolute.
func (h *Host) Roots() []string { return h.reg.Roots() }

// SetState sets the agent's state that later calls' sdk.HostState
// answers with; nil offers none.
func (h *Host) SetState(st *sdk.State) {
	if st == nil {
		h.reg.SetToolContext(nil)
		return
	}
	h.reg.SetToolContext(toolContext{*st})
}

// Registry returns the host's registry, for what Host does not say:
// enabling and disabling tools, timeouts per tool, the schemas a model
// gets (EnabledSchemas), the plugin's report (Plugins, for Binary).
func (h *Host) Registry() *host.ToolRegistry { return h.reg }

// Close stops the plugin and the host. New and Binary close their host
// when the test ends.
func (h *Host) Close() error {
	h.once.Do(h.close)
	return nil
}

// newHost returns a host whose registry holds no tool yet, and grants
// the plugins named in grants what they hold.
func newHost(opts Options, grants map[string]host.Grant) *Host {
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:        "host",
		Level:       hclog.Debug,
		Output:      out,
		DisableTime: true,
	})
	o := &host.Options{
		Roots:    opts.Roots,
		Timeout:  opts.Timeout,
		CacheDir: host.NoCache,
		Grants:   grants,
		Logger:   log,
	}
	if opts.State != nil {
		o.ToolContext = toolContext{*opts.State}
	}
	h := &Host{reg: host.NewToolRegistry(o), log: log}
	h.close = func() { h.reg.Close() }
	return h
}

// forTest fills in what a test's options leave out: a root of the test's
// own, the test's log.
func forTest(t testing.TB, opts Options) Options {
	if len(opts.Roots) == 0 {
		opts.Roots = []string{t.TempDir()}
	}
	if opts.Log == nil {
		w := &testLog{t: t}
		// Registered before the host's own cleanup, so it runs after:
		// nothing logs into a test that has ended.
		t.Cleanup(w.stop)
		opts.Log = w
	}
	return opts
}

// toolContext is a fixed agent state.
type toolContext struct{ st sdk.State }

func (c toolContext) SystemPrompt() string           { return c.st.SystemPrompt }
func (c toolContext) SessionContext() string         { return c.st.SessionContext }
func (c toolContext) SessionContextFilePath() string { return c.st.SessionContextFilePath }

// testLog writes log lines to a test's log until the test ends; a tool
// still running then (one that ignores its context) logs nowhere.
type testLog struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// copyFile copies the binary src to dst, executable by its owner only
// writable: the host refuses a plugin binary others may replace.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// OpenFile's mode passes through the umask.
	return os.Chmod(dst, 0o755)
}
