package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// markerPlugin installs a "plugin" that creates a marker file when it runs,
// and returns the plugin's path and the marker's.
func markerPlugin(t *testing.T, dir, name string) (bin, marker string) {
	t.Helper()
	marker = filepath.Join(t.TempDir(), "MARKER")
	bin = filepath.Join(dir, host.PluginPrefix+name)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, marker
}

func TestPluginsLockWritesTheLockFile(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := pluginDir(t)
	_, marker := markerPlugin(t, dir, "marker")
	names := []string{"fs", "marker", "session", "test"}

	check := func(t *testing.T, r result, lockPath string) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		data, err := os.ReadFile(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			line := "sha256:" + sha256File(t, filepath.Join(dir, host.PluginPrefix+n)) + "  " + host.PluginPrefix + n + "\n"
			if !strings.Contains(string(data), line) {
				t.Errorf("the lock file lacks %q:\n%s", line, data)
			}
			if !strings.Contains(r.stdout, line) {
				t.Errorf("the output lacks %q:\n%s", line, r.stdout)
			}
		}
		if !strings.HasSuffix(r.stdout, "wrote "+lockPath+": 4 plugin binaries\n") {
			t.Errorf("stdout = %q", r.stdout)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("plugins lock executed a plugin")
		}
	}

	t.Run("default", func(t *testing.T) {
		check(t, runCLI(t, "", "--plugins", dir, "plugins", "lock"), filepath.Join(dir, host.LockFileName))
	})
	t.Run("--lock after lock", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.lock")
		check(t, runCLI(t, "", "--plugins", dir, "plugins", "lock", "--lock", path), path)
	})
	t.Run("--lock before", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "b.lock")
		check(t, runCLI(t, "", "--lock", path, "--plugins", dir, "plugins", "lock"), path)
	})
	t.Run("extra argument", func(t *testing.T) {
		r := runCLI(t, "", "--plugins", dir, "plugins", "lock", "extra")
		if r.code != 2 || !strings.Contains(r.stderr, "plugins lock takes no arguments") {
			t.Errorf("exit status %d, stderr %q", r.code, r.stderr)
		}
	})
}

// With a lock file, agenthost refuses a tampered binary and one the lock
// does not list, naming the file and the hashes, and loads the others.
// This needs the lock check wired into the plugin launch.
func TestLockFileRefusesTamperedAndUnlistedBinaries(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := pluginDir(t)
	lockPath := filepath.Join(dir, host.LockFileName)
	if r := runCLI(t, "", "--plugins", dir, "plugins", "lock"); r.code != 0 {
		t.Fatalf("plugins lock: %d %s", r.code, r.stderr)
	}

	// Tamper with a copy: the installed binary may be a hard link to the
	// shared build.
	fs := filepath.Join(dir, host.PluginPrefix+"fs")
	locked := sha256File(t, fs)
	data, err := os.ReadFile(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fs, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	tampered := sha256File(t, fs)
	unlisted, marker := markerPlugin(t, dir, "unlisted")

	r := runCLI(t, "", "--plugins", dir, "tools")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{fs, tampered, locked, lockPath, unlisted + " is not in the lock file " + lockPath} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the warnings do not name %s:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "read_file") {
		t.Errorf("the tampered plugin's tools are listed:\n%s", r.stdout)
	}
	for _, tool := range []string{"echo ", "save_session_context "} {
		if !strings.Contains(r.stdout, tool) {
			t.Errorf("the locked plugins' tool %s is missing:\n%s", tool, r.stdout)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the unlisted binary was executed")
	}

	// Locking again accepts the changed binary.
	if err := os.Remove(unlisted); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "--plugins", dir, "plugins", "lock"); r.code != 0 {
		t.Fatalf("plugins lock: %d %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "--plugins", dir, "--root", dir, "call", "read_file", `{"path":"agenthost.lock","limit":1}`)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "# agenthost.lock") {
		t.Errorf("after locking again: exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
