package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/internal/workspace"
	"github.com/agenthost/agenthost/sdk"
)

const (
	// defaultTimeout is a command's timeout when the call names none.
	defaultTimeout = 30 * time.Second
	// maxTimeout is the longest timeout a call may ask for.
	maxTimeout = 10 * time.Minute
)

type runBashInput struct {
	Command string            `json:"command" jsonschema:"The shell command to run, as bash -c COMMAND. It can be a whole script: pipes, redirections, several lines."`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"Directory to run the command in; it must be inside the workspace roots. Relative paths resolve against the first root. Default: the first root."`
	Env     map[string]string `json:"env,omitempty" jsonschema:"Environment variables to set for the command, over the environment it inherits."`
	Timeout *int              `json:"timeout,omitempty" jsonschema:"Milliseconds the command may run before it and every process it started are killed. Default 30000; at most 600000 (10 minutes)."`
}

// runBash is the run_bash tool.
var runBash = sdk.NewStructuredTool(sdk.Info{
	Name:  "run_bash",
	Title: "Run shell command",
	Description: "Run a shell command with bash -c (/bin/sh where bash is missing) and return its output. " +
		"WARNING: the command runs with the user's full permissions: it can read, change or delete anything the user can, anywhere, and reach the network. Only cwd is checked against the workspace roots, not what the command does. " +
		"stdin is /dev/null, so the command must not wait for input. " +
		"The answer is a JSON object {\"stdout\",\"stderr\",\"exit_code\",\"timed_out\",\"duration_ms\"}. " +
		"Each of stdout and stderr is capped at 50000 bytes, keeping the head and the tail around a \"[... N bytes omitted ...]\" marker. " +
		"exit_code is the command's exit status (128+N when signal N killed it). " +
		"When timeout ms pass (default 30000, at most 600000) the command and every process it started are killed (SIGTERM, then SIGKILL), exit_code is -1, timed_out is true and stderr ends with a notice. " +
		"Background processes are stopped when the command ends: a command cannot leave a server running.",
	Annotations: sdk.Annotations{
		Destructive: true,
		OpenWorld:   true,
		OptIn:       true,
		// The longest a call may take: the longest timeout, the grace
		// between SIGTERM and SIGKILL, and some slack for the answer.
		Timeout: maxTimeout + killGrace + 3*time.Second,
	},
}, func(ctx context.Context, in runBashInput) (string, result, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", result{}, errors.New("command is empty")
	}
	if strings.ContainsRune(in.Command, 0) {
		return "", result{}, errors.New("command contains a NUL byte")
	}
	timeout, err := commandTimeout(in.Timeout)
	if err != nil {
		return "", result{}, err
	}
	dir, err := workingDir(ctx, in.Cwd)
	if err != nil {
		return "", result{}, err
	}
	env, err := commandEnv(os.Environ(), dir, in.Env)
	if err != nil {
		return "", result{}, err
	}
	sb, err := sandboxFor(sdk.Roots(ctx))
	if err != nil {
		return "", result{}, fmt.Errorf("the command was not run: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", result{}, fmt.Errorf("the command was not run: %w", err)
	}

	out, err := run(ctx, job{shell: shellPath(), command: in.Command, dir: dir, env: env, timeout: timeout, sandbox: sb})
	if err != nil {
		return "", result{}, fmt.Errorf("running the command: %w", err)
	}
	ms := out.duration.Milliseconds()
	res := result{Stdout: out.stdout.String(), Stderr: out.stderr.String(), DurationMS: ms}
	switch out.stopped {
	case stoppedByCancel:
		return "", result{}, fmt.Errorf("the call was cancelled after %d ms: the command and its process group were killed (%w)", out.stoppedAfter.Milliseconds(), ctx.Err())
	case stoppedByTimeout:
		res.ExitCode, res.TimedOut = -1, true
		res.Stderr = addNotice(res.Stderr, fmt.Sprintf("[timed out after %d ms: the command and its process group were killed]", timeout.Milliseconds()))
	case stoppedByDeadline:
		res.ExitCode, res.TimedOut = -1, true
		res.Stderr = addNotice(res.Stderr, fmt.Sprintf("[timed out after %d ms, at the call's deadline: the command and its process group were killed]", out.stoppedAfter.Milliseconds()))
	default:
		res.ExitCode = exitCode(out.status)
		if out.status.Signaled() {
			sig := out.status.Signal()
			res.Stderr = addNotice(res.Stderr, fmt.Sprintf("[killed by signal %d (%s)]", int(sig), sig))
		}
		if notice := limitNotice(res.ExitCode, res.Stderr); notice != "" {
			res.Stderr = addNotice(res.Stderr, notice)
		}
		for _, notice := range wallNotices(sb, in.Command, env, res.ExitCode, res.Stdout+"\n"+res.Stderr) {
			res.Stderr = addNotice(res.Stderr, notice)
		}
	}
	text, err := res.encode()
	return text, res, err
})

// result is run_bash's answer: its text, and its structured result. The
// tool's description says what each field holds.
type result struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	TimedOut   bool   `json:"timed_out"`
	DurationMS int64  `json:"duration_ms"`
}

func (r result) encode() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the model reads "<", not "\u003c"
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// commandTimeout checks the timeout argument, in milliseconds.
func commandTimeout(ms *int) (time.Duration, error) {
	switch {
	case ms == nil:
		return defaultTimeout, nil
	case *ms <= 0:
		return 0, fmt.Errorf("timeout must be a positive number of milliseconds, at most %d; got %d", maxTimeout.Milliseconds(), *ms)
	case int64(*ms) > maxTimeout.Milliseconds():
		return 0, fmt.Errorf("timeout %d ms is more than the maximum, %d ms (10 minutes)", *ms, maxTimeout.Milliseconds())
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// workingDir returns the absolute path of the directory to run in: cwd,
// or the first root when cwd is empty. It must be an existing directory
// inside the workspace roots.
func workingDir(ctx context.Context, cwd string) (string, error) {
	ws, err := workspace.FromContext(ctx)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	if cwd == "" {
		cwd = ws.First()
	}
	p, err := ws.Resolve(cwd)
	if err != nil {
		return "", err
	}
	info, err := p.Root.Stat(p.Rel)
	switch {
	case workspace.IsEscape(err):
		return "", p.Err(err)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("cwd %q does not exist", cwd)
	case err != nil:
		return "", fmt.Errorf("cwd: %w", p.Err(err))
	case !info.IsDir():
		return "", fmt.Errorf("cwd %q is not a directory", cwd)
	}
	return p.Abs, nil
}

// pluginEnv names the variables that go-plugin sets for the plugin
// itself. A command does not inherit them: they are plumbing between the
// host and this process, and would make a plugin binary run from the
// command believe a host started it.
var pluginEnv = []string{
	wire.CookieKey,
	wire.ConnEnv,
	"PLUGIN_UNIX_SOCKET_DIR",
	"PLUGIN_UNIX_SOCKET_GROUP",
	"PLUGIN_MULTIPLEX_GRPC",
	"PLUGIN_PROTOCOL_VERSIONS",
	"PLUGIN_CLIENT_CERT",
	"PLUGIN_MIN_PORT",
	"PLUGIN_MAX_PORT",
}

// commandEnv returns the command's environment: base without the
// plugin's own variables, PWD set to dir, then extra.
func commandEnv(base []string, dir string, extra map[string]string) ([]string, error) {
	env := make([]string, 0, len(base)+len(extra)+1)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PWD" || slices.Contains(pluginEnv, name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PWD="+dir)
	names := make([]string, 0, len(extra))
	for name, value := range extra {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fmt.Errorf("env: %q is not a valid variable name", name)
		}
		if strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("env: the value of %s contains a NUL byte", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		// os/exec keeps the last of duplicate names.
		env = append(env, name+"="+extra[name])
	}
	return env, nil
}

// shellPath returns bash from PATH, or /bin/sh when there is none.
func shellPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// exitCode is the shell's exit status as bash reports a command's:
// 128+N for a death by signal N.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// addNotice appends a notice line to a stream.
func addNotice(stream, notice string) string {
	if stream != "" && !strings.HasSuffix(stream, "\n") {
		stream += "\n"
	}
	return stream + notice
}
