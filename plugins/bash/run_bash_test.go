package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/sdk"
)

// callIn runs run_bash in-process with root as the only workspace root.
func callIn(ctx context.Context, t *testing.T, root string, args map[string]any) (result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runBash.Execute(sdk.WithRoots(ctx, []string{root}), raw)
	if err != nil {
		return result{}, err
	}
	var res result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("run_bash answered %q, which is not its JSON object: %v", out, err)
	}
	return res, nil
}

// called is what callIn returned.
type called struct {
	res result
	err error
}

// callInBackground runs callIn on a goroutine of its own: what it returned
// comes on the channel. A call that failed the test itself (an answer that
// is not run_bash's JSON) comes with an error too.
func callInBackground(ctx context.Context, t *testing.T, root string, args map[string]any) <-chan called {
	ch := make(chan called, 1)
	go func() {
		c := called{err: errors.New("the call failed the test")}
		defer func() { ch <- c }()
		c.res, c.err = callIn(ctx, t, root, args)
	}()
	return ch
}

// running is a condition for poll.Eventually: want of the processes found
// lists run at once. The call whose answer comes on call must not end
// before: that ends the wait at once.
func running(call <-chan called, want int, found func() []string) func() error {
	return func() error {
		procs := found()
		if len(procs) >= want {
			return nil
		}
		select {
		case c := <-call:
			return poll.Stop(fmt.Errorf("the call ended first (stdout %q, stderr %q, error %v)", c.res.Stdout, c.res.Stderr, c.err))
		default:
		}
		return fmt.Errorf("%d of %d run: %q", len(procs), want, procs)
	}
}

// mustRun runs a command in a new root and fails the test on an error.
func mustRun(t *testing.T, args map[string]any) result {
	t.Helper()
	res, err := callIn(t.Context(), t, t.TempDir(), args)
	if err != nil {
		t.Fatalf("run_bash(%v): %v", args, err)
	}
	return res
}

var markers atomic.Int64

// sleepMarker returns a sleep duration unique to this test process and
// call, such as "300.4711000003": a process whose command line holds it
// is one this test started.
func sleepMarker() string {
	return fmt.Sprintf("300.%d%06d", os.Getpid(), markers.Add(1))
}

// requireProc skips the test where there is no /proc to look for
// processes in.
func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc to look for processes in")
	}
}

// processesWith returns the live processes (zombies aside) whose command
// line contains marker.
func processesWith(marker string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// The state follows the command name in parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			continue
		}
		found = append(found, filepath.Base(dir)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// assertGone fails the test when processes with marker in their command
// line are still alive a few seconds from now.
func assertGone(t *testing.T, marker string) {
	t.Helper()
	requireProc(t)
	poll.Eventually(t, 5*time.Second, "the command's processes have ended", func() error {
		if left := processesWith(marker); len(left) > 0 {
			return fmt.Errorf("processes of the command are still running: %q", left)
		}
		return nil
	})
}

func TestRunBashOutput(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args       map[string]any
		wantStdout string
		wantStderr string
		wantCode   int
	}{
		"echo":               {map[string]any{"command": "echo hello"}, "hello\n", "", 0},
		"no output":          {map[string]any{"command": "true"}, "", "", 0},
		"exit status":        {map[string]any{"command": "echo partial; exit 3"}, "partial\n", "", 3},
		"stderr":             {map[string]any{"command": "echo out; echo err >&2; exit 1"}, "out\n", "err\n", 1},
		"a script":           {map[string]any{"command": "for i in 1 2 3; do\n  printf '%s,' \"$i\"\ndone | tr , ' '"}, "1 2 3 ", "", 0},
		"bash, not sh":       {map[string]any{"command": "[[ -n $BASH_VERSION ]] && echo bash"}, "bash\n", "", 0},
		"killed by signal":   {map[string]any{"command": "echo before; kill -KILL $$"}, "before\n", "[killed by signal 9 (killed)]", 137},
		"html kept as is":    {map[string]any{"command": "echo '<a>&'"}, "<a>&\n", "", 0},
		"stdin is /dev/null": {map[string]any{"command": "cat; readlink /proc/self/fd/0"}, "/dev/null\n", "", 0},
		"env merged": {
			map[string]any{"command": `printf '%s|%s|%s' "$AGENTHOST_TEST_A" "$AGENTHOST_TEST_B" "${PATH:+path inherited}"`, "env": map[string]any{"AGENTHOST_TEST_A": "a b", "AGENTHOST_TEST_B": "$HOME"}},
			"a b|$HOME|path inherited", "", 0,
		},
		"env overrides":    {map[string]any{"command": `echo "$HOME"`, "env": map[string]any{"HOME": "/elsewhere"}}, "/elsewhere\n", "", 0},
		"explicit timeout": {map[string]any{"command": "echo quick", "timeout": 5000}, "quick\n", "", 0},
		"non-UTF-8 output": {map[string]any{"command": `printf 'ok \377\376 ok\n'; printf '\377' >&2`}, "ok \uFFFD ok\n", "\uFFFD", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := mustRun(t, tc.args)
			if res.Stdout != tc.wantStdout || res.Stderr != tc.wantStderr || res.ExitCode != tc.wantCode {
				t.Errorf("run_bash(%v) = stdout %q, stderr %q, exit %d; want %q, %q, %d",
					tc.args, res.Stdout, res.Stderr, res.ExitCode, tc.wantStdout, tc.wantStderr, tc.wantCode)
			}
			if res.TimedOut {
				t.Errorf("timed_out is true")
			}
			if !utf8.ValidString(res.Stdout) || !utf8.ValidString(res.Stderr) {
				t.Errorf("output is not valid UTF-8")
			}
		})
	}
}

func TestCommandEnv(t *testing.T) {
	t.Parallel()
	base := []string{"HOME=/home/u", "PWD=/plugin/dir", "AGENTHOST_PLUGIN=cookie", "PLUGIN_UNIX_SOCKET_DIR=/tmp/s", "PLUGIN_PROTOCOL_VERSIONS=1", "PATH=/bin", "PLUGINS_OF_MY_OWN=kept"}
	tests := map[string]struct {
		extra map[string]string
		want  []string
	}{
		"plumbing dropped, PWD set": {nil, []string{"HOME=/home/u", "PATH=/bin", "PLUGINS_OF_MY_OWN=kept", "PWD=/work"}},
		"extra sorted, after the rest (os/exec keeps the last)": {
			map[string]string{"B": "2", "A": "1", "HOME": "/elsewhere", "AGENTHOST_PLUGIN": "asked for"},
			[]string{"HOME=/home/u", "PATH=/bin", "PLUGINS_OF_MY_OWN=kept", "PWD=/work", "A=1", "AGENTHOST_PLUGIN=asked for", "B=2", "HOME=/elsewhere"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := commandEnv(base, "/work", tc.extra)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("commandEnv = %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The answer is exactly the documented JSON object, in that order.
func TestRunBashAnswerShape(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(map[string]any{"command": "echo hi"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runBash.Execute(sdk.WithRoots(t.Context(), []string{t.TempDir()}), raw)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"stdout":"hi\n","stderr":"","exit_code":0,"timed_out":false,"duration_ms":`
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "}") {
		t.Errorf("answer = %s, want %s...}", out, want)
	}
}

// The command never sees the plugin's own stdout or stderr.
func TestRunBashOwnPipes(t *testing.T) {
	t.Parallel()
	res := mustRun(t, map[string]any{"command": "readlink /proc/$$/fd/1 /proc/$$/fd/2"})
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout = %q, want two links", res.Stdout)
	}
	for i, fd := range []string{"1", "2"} {
		own, err := os.Readlink("/proc/self/fd/" + fd)
		if err != nil {
			t.Skipf("cannot read this process's fd %s: %v", fd, err)
		}
		if !strings.HasPrefix(lines[i], "pipe:") || lines[i] == own {
			t.Errorf("the command's fd %s is %s (this process's is %s), want a pipe of its own", fd, lines[i], own)
		}
	}
}

func TestRunBashCwd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(root, "inside")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		cwd     any // nil: absent
		want    string
		wantErr string
	}{
		"default is the first root": {nil, root + "\n", ""},
		"empty is the first root":   {"", root + "\n", ""},
		"the root itself":           {root, root + "\n", ""},
		"relative":                  {"sub/dir", filepath.Join(root, "sub", "dir") + "\n", ""},
		"absolute inside":           {filepath.Join(root, "sub"), filepath.Join(root, "sub") + "\n", ""},
		"symlink inside the root":   {"inside", filepath.Join(root, "inside") + "\n", ""},
		"dot dot":                   {"..", "", `path ".." is outside the workspace roots`},
		"dot dot from inside":       {"sub/../../x", "", `path "sub/../../x" is outside the workspace roots`},
		"absolute outside":          {outside, "", fmt.Sprintf("path %q is outside the workspace roots", outside)},
		"slash":                     {"/", "", `path "/" is outside the workspace roots`},
		"prefix trick":              {root + "_evil", "", fmt.Sprintf("path %q is outside the workspace roots", root+"_evil")},
		"symlink out of the root":   {"escape", "", `path "escape" is outside the workspace roots`},
		"not a directory":           {"file.txt", "", `cwd "file.txt" is not a directory`},
		"missing":                   {"nope", "", `cwd "nope" does not exist`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"command": "pwd"}
			if tc.cwd != nil {
				args["cwd"] = tc.cwd
			}
			res, err := callIn(t.Context(), t, root, args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("cwd %v: error %v, want %q", tc.cwd, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("cwd %v: %v", tc.cwd, err)
			}
			if res.Stdout != tc.want {
				t.Errorf("cwd %v: pwd = %q, want %q", tc.cwd, res.Stdout, tc.want)
			}
		})
	}
}

func TestRunBashRefusedArguments(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args    map[string]any
		wantErr string
	}{
		"no command":         {map[string]any{}, "invalid arguments"},
		"empty command":      {map[string]any{"command": "  "}, "command is empty"},
		"timeout too long":   {map[string]any{"command": "true", "timeout": 600001}, "timeout 600001 ms is more than the maximum, 600000 ms (10 minutes)"},
		"timeout zero":       {map[string]any{"command": "true", "timeout": 0}, "timeout must be a positive number of milliseconds, at most 600000; got 0"},
		"timeout negative":   {map[string]any{"command": "true", "timeout": -5}, "timeout must be a positive number of milliseconds, at most 600000; got -5"},
		"timeout fractional": {map[string]any{"command": "true", "timeout": 1.5}, "invalid arguments"},
		"env not strings":    {map[string]any{"command": "true", "env": map[string]any{"A": 1}}, "invalid arguments"},
		"env name with =":    {map[string]any{"command": "true", "env": map[string]any{"A=B": "x"}}, `env: "A=B" is not a valid variable name`},
		"env empty name":     {map[string]any{"command": "true", "env": map[string]any{"": "x"}}, `env: "" is not a valid variable name`},
		"unknown argument":   {map[string]any{"command": "true", "shell": "zsh"}, "invalid arguments"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := callIn(t.Context(), t, t.TempDir(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("run_bash(%v): error %v, want one containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
	// The maximum itself is allowed.
	if res := mustRun(t, map[string]any{"command": "echo ok", "timeout": 600000}); res.Stdout != "ok\n" {
		t.Errorf("timeout 600000: stdout %q", res.Stdout)
	}
}

func TestRunBashNoRoots(t *testing.T) {
	t.Parallel()
	_, err := runBash.Execute(t.Context(), json.RawMessage(`{"command":"true"}`))
	if err == nil || !strings.Contains(err.Error(), "no workspace roots") {
		t.Errorf("without roots: error %v, want one about the missing roots", err)
	}
}

// A timeout kills the shell, its background children and their children.
func TestRunBashTimeout(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		// Everything dies of SIGTERM.
		"background and grandchild": "sleep %[1]s & bash -c 'sleep %[1]s; true' & echo started; sleep %[1]s",
		// A child that ignores SIGTERM needs the SIGKILL after the grace.
		"SIGTERM ignored": "bash -c 'trap \"\" TERM; sleep %[1]s; true' & echo started; sleep %[1]s",
	}
	for name, format := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := sleepMarker()
			start := time.Now()
			res := mustRun(t, map[string]any{"command": fmt.Sprintf(format, marker), "timeout": 1000})
			elapsed := time.Since(start)
			if !res.TimedOut || res.ExitCode != -1 {
				t.Errorf("timed_out %v, exit_code %d; want true, -1", res.TimedOut, res.ExitCode)
			}
			if res.Stdout != "started\n" {
				t.Errorf("stdout %q: the output before the timeout is lost", res.Stdout)
			}
			const notice = "[timed out after 1000 ms: the command and its process group were killed]"
			if !strings.HasSuffix(res.Stderr, notice) {
				t.Errorf("stderr %q does not end with %q", res.Stderr, notice)
			}
			if res.DurationMS < 900 || elapsed > 20*time.Second {
				t.Errorf("duration_ms %d, took %v; want about the 1 s timeout", res.DurationMS, elapsed)
			}
			assertGone(t, marker)
		})
	}
}

// A call whose context has a deadline sooner than the timeout stops at
// the deadline, as a timeout.
func TestRunBashContextDeadline(t *testing.T) {
	t.Parallel()
	marker := sleepMarker()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := callIn(ctx, t, t.TempDir(), map[string]any{"command": "sleep " + marker + " & sleep " + marker})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("timed_out %v, exit_code %d; want true, -1", res.TimedOut, res.ExitCode)
	}
	if !strings.Contains(res.Stderr, "at the call's deadline: the command and its process group were killed]") {
		t.Errorf("stderr %q has no deadline notice", res.Stderr)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("took %v", elapsed)
	}
	assertGone(t, marker)
}

// A cancelled call kills the command and answers with an error.
func TestRunBashCancel(t *testing.T) {
	t.Parallel()
	requireProc(t)
	marker := sleepMarker()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	call := callInBackground(ctx, t, t.TempDir(), map[string]any{"command": "sleep " + marker + " & sleep " + marker})
	// Cancel once the command runs.
	poll.Eventually(t, 10*time.Second, "the command runs", running(call, 2, func() []string { return processesWith(marker) }))
	cancel()
	if err := (<-call).err; err == nil || !strings.Contains(err.Error(), "the call was cancelled after") {
		t.Errorf("error %v, want the cancellation", err)
	}
	assertGone(t, marker)
}

// A background process that holds the pipes does not keep the call
// waiting, and is stopped when the command ends.
func TestRunBashBackgroundChild(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"holding the pipes": "sleep %s & echo done",
		"holding no pipes":  "sleep %s >/dev/null 2>&1 & echo done",
		"nohup'd":           "nohup sleep %s >/dev/null 2>&1 & echo done",
		"in a subshell":     "(sleep %s; echo never) & echo done",
		"stderr only":       "sleep %s >/dev/null & echo done",
	}
	for name, format := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := sleepMarker()
			start := time.Now()
			res := mustRun(t, map[string]any{"command": fmt.Sprintf(format, marker)})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %v: the background child held the call", elapsed)
			}
			if res.Stdout != "done\n" || res.ExitCode != 0 || res.TimedOut {
				t.Errorf("stdout %q, exit_code %d, timed_out %v; want \"done\\n\", 0, false", res.Stdout, res.ExitCode, res.TimedOut)
			}
			assertGone(t, marker)
		})
	}
}

// Output that a background process writes soon after the shell exits
// is still captured.
func TestRunBashLateOutput(t *testing.T) {
	t.Parallel()
	res := mustRun(t, map[string]any{"command": "(sleep 0.02; echo late) & echo early"})
	// On a machine so loaded that the late line takes longer than the
	// grace, it is lost, but the grace must have been given.
	if res.Stdout != "early\nlate\n" && (res.Stdout != "early\n" || res.DurationMS < pipeGrace.Milliseconds()) {
		t.Errorf("stdout %q after %d ms, want early and late", res.Stdout, res.DurationMS)
	}
}

func TestRunBashTruncation(t *testing.T) {
	t.Parallel()
	// START, the numbers 1 to 40000 a line each, END: about 200 KB.
	var b strings.Builder
	b.WriteString("START\n")
	for i := 1; i <= 40000; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	b.WriteString("END")
	full := b.String()
	if len(full) < 200_000 {
		t.Fatalf("the test output is only %d bytes", len(full))
	}
	res := mustRun(t, map[string]any{"command": "echo START; seq 1 40000; printf END; seq 1 40000 >&2"})
	half := streamLimit / 2
	marker := fmt.Sprintf("[... %d bytes omitted ...]\n", len(full)-streamLimit)
	want := full[:half] + marker + full[len(full)-half:]
	if full[half-1] != '\n' {
		want = full[:half] + "\n" + marker + full[len(full)-half:]
	}
	if res.Stdout != want {
		t.Errorf("stdout: %d bytes starting %q and ending %q; want %d bytes with %q", len(res.Stdout), firstBytes(res.Stdout), lastBytes(res.Stdout), len(want), marker)
	}
	if !strings.Contains(res.Stderr, "bytes omitted ...]") || len(res.Stderr) > streamLimit+100 {
		t.Errorf("stderr (%d bytes) is not capped", len(res.Stderr))
	}
	if res.ExitCode != 0 {
		t.Errorf("exit_code %d", res.ExitCode)
	}
}

func firstBytes(s string) string { return s[:min(len(s), 40)] }
func lastBytes(s string) string  { return s[max(len(s)-40, 0):] }

func TestRunBashSpec(t *testing.T) {
	t.Parallel()
	a := sdk.AnnotationsOf(runBash)
	if !a.OptIn || !a.Destructive || !a.OpenWorld || a.ReadOnly || a.Idempotent {
		t.Errorf("annotations %+v: want opt-in, destructive, open-world, not read-only, not idempotent", a)
	}
	if a.Timeout < maxTimeout+killGrace {
		t.Errorf("the host's deadline %v does not cover the longest timeout and the kill", a.Timeout)
	}
	fn := runBash.Schema().Function
	for _, phrase := range []string{"WARNING", "anything the user can", `"exit_code"`, "timed_out", "Background processes are stopped"} {
		if !strings.Contains(fn.Description, phrase) {
			t.Errorf("the description does not say %q", phrase)
		}
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(fn.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"command", "cwd", "env", "timeout"} {
		if _, ok := schema.Properties[p]; !ok {
			t.Errorf("no parameter %q", p)
		}
	}
	if len(schema.Required) != 1 || schema.Required[0] != "command" {
		t.Errorf("required %v, want [command]", schema.Required)
	}
}

// A process that leaves the command's process group and holds its pipes
// does not keep the call waiting either. On Linux the watchdog kills it
// (see TestRunBashLeavesNothing); elsewhere it is out of reach, and the
// test kills it.
func TestRunBashEscapedChild(t *testing.T) {
	t.Parallel()
	marker := sleepMarker()
	t.Cleanup(func() { killProcessesWith(marker) })
	start := time.Now()
	res := mustRun(t, map[string]any{"command": "setsid sleep " + marker + " & echo done"})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %v: the escaped child held the call", elapsed)
	}
	if res.Stdout != "done\n" || res.ExitCode != 0 {
		t.Errorf("stdout %q, exit_code %d; want \"done\\n\", 0", res.Stdout, res.ExitCode)
	}
}

// killProcessesWith kills the processes this test started, found by
// their marker.
func killProcessesWith(marker string) {
	for _, p := range processesWith(marker) {
		pid, _, _ := strings.Cut(p, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			if proc, err := os.FindProcess(n); err == nil {
				proc.Kill()
			}
		}
	}
}

// helperEnv names the command that the test binary, started again as a
// stand-in for the plugin, runs with run_bash.
const helperEnv = "AGENTHOST_BASH_TEST_COMMAND"

func TestMain(m *testing.M) {
	// The test binary stands for the plugin, and so is the watchdog of
	// each command too.
	runIfWatchdog()
	if command := os.Getenv(helperEnv); command != "" {
		ctx := sdk.WithRoots(context.Background(), []string{os.TempDir()})
		args, _ := json.Marshal(map[string]any{"command": command})
		runBash.Execute(ctx, args)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A plugin killed while a command runs leaves none of the command's
// processes behind: not the shell, not its children.
func TestPluginDeath(t *testing.T) {
	t.Parallel()
	requireProc(t)
	marker := sleepMarker()
	t.Cleanup(func() { killProcessesWith(marker) })
	plugin := exec.Command(os.Args[0], "-test.run=^$")
	plugin.Env = append(os.Environ(), helperEnv+"="+fmt.Sprintf("sleep %[1]s & bash -c 'sleep %[1]s; true' & sleep %[1]s", marker))
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	defer plugin.Wait()
	defer plugin.Process.Kill()
	poll.Eventually(t, 10*time.Second, "the command's processes start", func() error {
		if procs := processesWith(marker); len(procs) < 4 {
			return fmt.Errorf("%d of 4 run: %q", len(procs), procs)
		}
		return nil
	})
	if err := plugin.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	plugin.Wait()
	assertGone(t, marker)
}

func BenchmarkRunBashEcho(b *testing.B) {
	ctx := sdk.WithRoots(b.Context(), []string{b.TempDir()})
	args := json.RawMessage(`{"command":"echo hi"}`)
	for b.Loop() {
		if _, err := runBash.Execute(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunBashTrue measures commands that do nothing, back to back:
// what a command costs beyond its own work (the shell, the watchdog, the
// clean-up) when calls come faster than a spare watchdog starts.
func BenchmarkRunBashTrue(b *testing.B) {
	ctx := sdk.WithRoots(b.Context(), []string{b.TempDir()})
	args := json.RawMessage(`{"command":"true"}`)
	for b.Loop() {
		if _, err := runBash.Execute(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunBashTrueIdle measures a command that does nothing, run
// after a pause, as a model's calls come: the time of the call alone.
func BenchmarkRunBashTrueIdle(b *testing.B) {
	ctx := sdk.WithRoots(b.Context(), []string{b.TempDir()})
	args := json.RawMessage(`{"command":"true"}`)
	for b.Loop() {
		b.StopTimer()
		time.Sleep(100 * time.Millisecond)
		b.StartTimer()
		if _, err := runBash.Execute(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
