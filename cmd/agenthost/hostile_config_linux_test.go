package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// What a project's configuration names is not opened before it is
// trusted, and what is opened is bounded: a configuration file or an
// envFile that is a device, a FIFO or too large is refused at once, in
// words, by the agenthost binary; a value too long to echo is cut.
func TestHostileConfigurationFiles(t *testing.T) {
	t.Parallel()
	bin := plugintest.Binary(t, "./cmd/agenthost")
	big := strings.Repeat("x", 900_000)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		args  []string
		want  string
	}{
		{"a device as the project file", func(t *testing.T, dir string) {
			symlink(t, "/dev/zero", filepath.Join(dir, "agenthost.json"))
		}, []string{"tools"}, "agenthost.json: agenthost.json is not a regular file (a device)"},
		{"a FIFO as the project file", func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "agenthost.json"))
		}, []string{"tools"}, "agenthost.json is not a regular file (a FIFO)"},
		{"a project file of 2 MiB", func(t *testing.T, dir string) {
			plugintest.WriteFile(t, dir, "agenthost.json", `{"roots": ["`+strings.Repeat("y", 2<<20)+`"]}`)
		}, []string{"tools"}, "agenthost.json is 2097167 bytes: a configuration file is at most 1048576 (1 MiB)"},
		{"an untrusted file's envFile, a device", func(t *testing.T, dir string) {
			plugintest.WriteFile(t, dir, "agenthost.json", `{"mcpServers": {"s": {"command": "server", "envFile": "/dev/zero"}}}`)
		}, []string{"tools"}, "this directory's configuration is not trusted"},
		{"an untrusted file's envFile, a FIFO", func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "fifo"))
			plugintest.WriteFile(t, dir, "agenthost.json", `{"mcpServers": {"s": {"command": "server", "envFile": "fifo"}}}`)
		}, []string{"tools"}, "this directory's configuration is not trusted"},
		{"a named file's envFile, a FIFO", func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "fifo"))
			plugintest.WriteFile(t, dir, "c.json", `{"mcpServers": {"s": {"command": "server", "envFile": "fifo"}}}`)
		}, []string{"--config", "c.json", "tools"}, "fifo is not a regular file (a FIFO)"},
		{"a named file's envFile, a device", func(t *testing.T, dir string) {
			plugintest.WriteFile(t, dir, "c.json", `{"mcpServers": {"s": {"command": "server", "envFile": "/dev/zero"}}}`)
		}, []string{"--config", "c.json", "tools"}, "/dev/zero is not a regular file (a device)"},
		{"a value of 900 KB", func(t *testing.T, dir string) {
			plugintest.WriteFile(t, dir, "c.json", `{"logLevel": "`+big+`"}`)
		}, []string{"--config", "c.json", "tools"}, "bytes cut]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c.setup(t, dir)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, c.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "AGENTHOST_PLUGINS="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("agenthost %s did not end within 20 s: %s", strings.Join(c.args, " "), out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
				t.Errorf("agenthost %s: exit %d (%v), stderr:\n%.2000s\nwant exit 2 and %q", strings.Join(c.args, " "), code, err, out, c.want)
			}
			if len(out) > 2000 {
				t.Errorf("agenthost printed %d bytes for one refusal", len(out))
			}
		})
	}
}

// Trust covers what a project's file runs from the project: a server
// program replaced after agenthost trust is not run until agenthost
// trust again, and the refusal names it.
func TestTrustPinsWhatTheProjectRuns(t *testing.T) {
	t.Parallel()
	bin := plugintest.Binary(t, "./cmd/agenthost")
	dir, config := t.TempDir(), t.TempDir()
	plugintest.WriteFile(t, dir, "agenthost.json", `{"mcpServers": {"s": {"command": "./tools/server", "args": ["./tools/setup.js", "--verbose"]}}}`)
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.WriteFile(t, dir, "tools/server", "#!/bin/sh\nexit 0\n")
	plugintest.WriteFile(t, dir, "tools/setup.js", "// setup\n")
	agenthost := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+config, "AGENTHOST_PLUGINS="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := agenthost("trust"); code != 0 || !strings.Contains(out, "with the 2 files of the project it runs or reads") {
		t.Fatalf("agenthost trust: exit %d: %s", code, out)
	}
	for _, f := range []string{"tools/server", "tools/setup.js"} {
		if out, code := agenthost("plugins"); code == 2 {
			t.Fatalf("agenthost plugins, trusted: exit %d: %s", code, out)
		}
		plugintest.WriteFile(t, dir, f, "#!/bin/sh\necho replaced\n")
		out, code := agenthost("plugins")
		if code != 2 || !strings.Contains(out, "what it runs changed since: "+filepath.Join(dir, f)) {
			t.Errorf("agenthost plugins after %s changed: exit %d: %s", f, code, out)
		}
		if out, code := agenthost("trust"); code != 0 {
			t.Fatalf("agenthost trust again: exit %d: %s", code, out)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}
