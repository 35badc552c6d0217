package host_test

// These tests cover the lock file and the scrubbed environment through the
// registry: the lock is read once per LoadPlugins, and each launch opens
// the binary, checks it and executes that very file.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// A secret in the host's environment never reaches a plugin process; the
// allow-list and what Options.PluginEnv names do.
func TestSecretsNeverReachAPlugin(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-host-secret")
	t.Setenv("GITHUB_TOKEN", "ghp_host_secret")
	t.Setenv("AGENTHOST_TEST_PASSED", "passed-through")
	t.Setenv("LC_ALL", "C.UTF-8")
	reg := load(t, pluginDir(t, "test"), &host.Options{PluginEnv: []string{"AGENTHOST_TEST_PASSED"}})
	pid := atoi(t, call(t, reg, "pid", "{}"))
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(data), "\x00")
	for _, secret := range []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "GITHUB_TOKEN="} {
		for _, kv := range env {
			if strings.HasPrefix(kv, secret) {
				t.Errorf("the plugin's environment has %s", kv)
			}
		}
	}
	for _, kv := range []string{"AGENTHOST_TEST_PASSED=passed-through", "LC_ALL=C.UTF-8", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, kv) {
			t.Errorf("the plugin's environment lacks %s", kv)
		}
	}
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// appendByte replaces the file at path by a copy with one more byte (the
// installed binary may be a hard link to the shared build).
func appendByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
}

// With a lock file, a changed binary and one the lock does not list are
// refused before they run, with a warning naming the file and the hashes;
// the others load.
func TestLockFileRefusesChangedAndUnlistedBinaries(t *testing.T) {
	for _, custom := range []bool{false, true} {
		name := "in the plugins directory"
		if custom {
			name = "Options.LockFile"
		}
		t.Run(name, func(t *testing.T) {
			dir := pluginDir(t, "test", "fs")
			lockPath := filepath.Join(dir, host.LockFileName)
			opts := &host.Options{}
			if custom {
				lockPath = filepath.Join(t.TempDir(), "custom.lock")
				opts.LockFile = lockPath
			}
			if _, err := host.WriteLockFile(dir, opts.LockFile); err != nil {
				t.Fatal(err)
			}
			fs := filepath.Join(dir, host.PluginPrefix+"fs")
			locked := fileHash(t, fs)
			appendByte(t, fs)
			changed := fileHash(t, fs)
			// Installed after the lock was written, and proof of not
			// running: it would create the marker.
			marker := filepath.Join(t.TempDir(), "MARKER")
			unlisted := filepath.Join(dir, host.PluginPrefix+"marker")
			if err := os.WriteFile(unlisted, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}

			logs := &plugintest.Buffer{}
			opts.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn})
			reg := load(t, dir, opts)

			if call(t, reg, "echo", `{"text":"hi"}`) != "hi" {
				t.Error("the locked test plugin does not work")
			}
			if reg.HasTool("read_file") {
				t.Error("the changed fs plugin's tools are registered")
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the unlisted plugin was executed")
			}
			reports := map[string]host.SourceReport{}
			for _, r := range reg.Plugins() {
				reports[filepath.Base(r.Path)] = r
			}
			for _, want := range []struct{ bin, text string }{
				{host.PluginPrefix + "fs", fs + ": its SHA-256 is " + changed + ", the lock file " + lockPath + " says " + locked},
				{host.PluginPrefix + "marker", unlisted + " is not in the lock file " + lockPath},
			} {
				r, ok := reports[want.bin]
				if !ok || r.Err == nil || !strings.Contains(r.Err.Error(), want.text) {
					t.Errorf("report of %s: %+v, want an error containing %q", want.bin, r, want.text)
				}
				if !strings.Contains(logs.String(), want.text) {
					t.Errorf("the log does not say %q:\n%s", want.text, logs)
				}
			}
			if r := reports[host.PluginPrefix+"test"]; r.Err != nil {
				t.Errorf("the locked test plugin was refused: %v", r.Err)
			}
		})
	}
}
