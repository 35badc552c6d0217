package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/sandbox"
)

// A plugin's name, version, description or file name cannot forge a line
// of agenthost tools or agenthost plugins, nor of the log on stderr, nor
// put an escape sequence in them.
func TestListingsCannotBeForged(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	pluginDir(t) // builds every binary at once
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"hostile-names", "./host/testdata/hostileplugin")
	forged := host.PluginPrefix + "x\n[ERROR] forged\x1b[31m"
	if err := os.WriteFile(filepath.Join(dir, forged), []byte("#!/bin/sh\necho 'not a plugin\x1b[2J'\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, "", "--plugins", dir, "--log-level", "debug", "tools")
	if r.code != 0 {
		t.Fatalf("tools: exit status %d\n%s", r.code, r.stderr)
	}
	want := "NAME  STATUS   PLUGIN                          DESCRIPTION\n" +
		"fine  enabled  agenthost-plugin-hostile-names  First line.\n"
	if r.stdout != want {
		t.Errorf("tools:\n%s\nwant\n%s", r.stdout, want)
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		if !strings.HasPrefix(line, "20") || strings.ContainsRune(line, '\x1b') {
			t.Errorf("a forged line in the log: %q", line)
		}
	}

	r = runCLI(t, "", "--plugins", dir, "plugins")
	want = filepath.Join(dir, host.PluginPrefix+"hostile-names") + "\n" +
		`  "evil\n[WARN] forged line \x1b[31mred" "1.0\x1b[2J" (protocol 1.5)` + "\n" +
		"  tools: fine\n" +
		`  refused: invalid tool: name "bad\nname" must match ^[a-zA-Z0-9_-]{1,64}$` + "\n" +
		"  sandbox: enforced (" + sandbox.Probe().String() + ")\n" +
		wallsLine() +
		"    asked:   nothing beyond the defaults\n" +
		"    granted: roots read-write; the system read-only\n" +
		`"` + filepath.Join(dir, "agenthost-plugin-x") + `\n[ERROR] forged\x1b[31m"` + "\n" +
		`  skipped: it is not an agenthost plugin: its first line of output was "not a plugin\x1b[2J"` + "\n"
	if r.stdout != want {
		t.Errorf("plugins:\n%s\nwant\n%s", r.stdout, want)
	}
}

// A plugins directory that others can write is refused, and says how to
// fix it; --allow-insecure-plugins loads it all the same.
func TestAllowInsecurePlugins(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	pluginDir(t)
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.Install(t, dir, host.PluginPrefix+"test", "./host/testdata/testplugin")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	refusal := "plugins directory " + dir + " is writable by others (mode 0777); run chmod o-w " + dir + ", or pass --allow-insecure-plugins"

	r := runCLI(t, "", "--plugins", dir, "plugins")
	if want := filepath.Join(dir, host.PluginPrefix+"test") + "\n  skipped: " + refusal + "\n"; r.stdout != want {
		t.Errorf("plugins:\n%s\nwant\n%s", r.stdout, want)
	}
	r = runCLI(t, "", "--plugins", dir, "call", "echo", `{"text":"hi"}`)
	if r.code != 1 || !strings.Contains(r.stderr, refusal) ||
		!strings.HasSuffix(r.stderr, "Error: tool not found: echo\nagenthost: none of the 1 plugins in "+dir+" could be loaded (agenthost plugins says why)\n") {
		t.Errorf("call: exit status %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, "", "--plugins", dir, "--allow-insecure-plugins", "call", "echo", `{"text":"hi"}`)
	if r.code != 0 || r.stdout != "hi\n" || !strings.Contains(r.stderr, "allowed by the host's options") {
		t.Errorf("call with --allow-insecure-plugins: exit status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// With no plugin where the host looks, the operator is told where it
// looked; the model's answer stays the same.
func TestNoPluginsSaysWhere(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := t.TempDir()
	hint := "agenthost: no plugins found in " + dir + " (set --plugins or AGENTHOST_PLUGINS)\n"
	r := runCLI(t, "", "--plugins", dir, "call", "read_file", `{"path":"x"}`)
	if r.code != 1 || r.stderr != "Error: tool not found: read_file\n"+hint {
		t.Errorf("call: exit status %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, "", "--plugins", dir, "tools")
	if r.code != 0 || r.stderr != hint {
		t.Errorf("tools: exit status %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, "", "--plugins", dir, "plugins")
	if r.stdout != "no plugin binaries found in "+dir+"\n" {
		t.Errorf("plugins: %q", r.stdout)
	}
}

// Ctrl-C on agenthost call cancels the call; it is not reported as a
// plugin that missed a deadline.
func TestCtrlCOnCallIsACancel(t *testing.T) {
	pluginDir(t)
	bin := t.TempDir()
	exe := plugintest.Install(t, bin, "agenthost", "./cmd/agenthost")
	plugins := filepath.Join(bin, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.Install(t, plugins, host.PluginPrefix+"test", "./host/testdata/testplugin")
	markers := t.TempDir()
	started := filepath.Join(markers, "started")

	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), exe, "--log-level", "debug", "--grant", "test=write:"+markers, "call", "sleep", `{"millis":60000,"ignore_cancel":true,"started":"`+started+`"}`)
	cmd.Env = append(os.Environ(), "AGENTHOST_PLUGINS=")
	var stdout bytes.Buffer
	var stderr plugintest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }() // after a failure
	poll.Eventually(t, 20*time.Second, "the call starts", func() error {
		if _, err := os.Stat(started); err == nil {
			return nil
		}
		if !plugintest.Alive(cmd.Process.Pid) {
			return poll.Stop(fmt.Errorf("agenthost exited\n%s", stderr.String()))
		}
		return fmt.Errorf("no call yet\n%s", stderr.String())
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if !strings.Contains(stderr.String(), "Error executing sleep: canceled\n") {
		t.Errorf("stderr does not say the call was canceled:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "did not answer") || strings.Contains(stderr.String(), "deadline") {
		t.Errorf("a cancel reported as a missed deadline:\n%s", stderr.String())
	}
}

// wallsLine is the walls line that agenthost plugins prints, on this
// kernel, for a plugin without the network and with the default limits.
func wallsLine() string {
	walls := []string{sandbox.Probe().String()}
	if sandbox.SeccompSupport() == nil {
		walls = append(walls, "seccomp")
	}
	if sandbox.NamespaceSupport() == nil {
		walls = append(walls, "its own user, PID, mount and network namespaces")
	} else {
		walls = append(walls, "a child subreaper that ends what it leaves behind")
	}
	walls = append(walls, "limits: "+host.DefaultLimits.String())
	return "    walls:   " + strings.Join(walls, "; ") + "\n"
}

// Nothing of a plugin runs, or logs, once the command returned: its
// stderr is read to the end and logged before Close returns, and before a
// failed start is reported. Run many times under the race detector (make
// test), a log line written into the command's stderr after run returned
// is a data race with this test's read of it.
func TestNothingLogsAfterTheCommand(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := pluginDir(t)
	// A plugin that fails its start while it writes to stderr without end.
	if err := os.WriteFile(filepath.Join(dir, host.PluginPrefix+"noisy"), []byte("#!/bin/sh\n(i=0; while :; do echo \"noise $i\" >&2; i=$((i+1)); done) &\necho not a plugin\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		// The test plugin writes to its stderr without end, until it is
		// killed.
		r := runCLI(t, "", "--plugins", dir, "--log-level", "debug", "--cache-dir", "-", "call", "chatter", `{"text":"line"}`)
		if r.code != 0 || !strings.Contains(r.stderr, "line 0") {
			t.Fatalf("call chatter: exit %d\n%.2000s", r.code, r.stderr)
		}
	}
}
