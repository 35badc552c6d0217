package host

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPluginDeps(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := func(t *testing.T, path string) string {
		t.Helper()
		k, err := pluginDeps(path)
		if err != nil {
			t.Fatalf("pluginDeps: %v", err)
		}
		return k
	}

	t.Run("a binary depends on itself alone", func(t *testing.T) {
		t.Parallel()
		bin := filepath.Join(t.TempDir(), "agenthost-plugin-x")
		write(t, bin, "\x7fELF...")
		write(t, bin+depsSuffix, "anything\n") // not read
		if k := key(t, bin); k != "" {
			t.Errorf("key = %q, want \"\"", k)
		}
	})

	t.Run("a script without a list is not cached", func(t *testing.T) {
		t.Parallel()
		script := filepath.Join(t.TempDir(), "agenthost-plugin-x")
		write(t, script, "#!/bin/sh\n")
		_, err := pluginDeps(script)
		if err == nil || !strings.Contains(err.Error(), "no agenthost-plugin-x.deps lists what it depends on") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("every change to what is listed is another key", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		script := filepath.Join(dir, "agenthost-plugin-x")
		write(t, script, "#!/bin/sh\n")
		write(t, script+depsSuffix, "lib\nmissing.js\n")
		write(t, filepath.Join(dir, "lib", "a.js"), "a")
		write(t, filepath.Join(dir, "lib", "sub", "b.js"), "b")
		seen := map[string]string{}
		check := func(what string) {
			t.Helper()
			k := key(t, script)
			if k == "" {
				t.Fatalf("%s: empty key for a script", what)
			}
			if again := key(t, script); again != k {
				t.Fatalf("%s: the key changed with nothing changed", what)
			}
			if prev, ok := seen[k]; ok {
				t.Errorf("%s: the key is that of %s", what, prev)
			}
			seen[k] = what
		}
		check("at first")
		write(t, filepath.Join(dir, "lib", "sub", "b.js"), "bb")
		check("a file deeper down edited")
		write(t, filepath.Join(dir, "lib", "c.js"), "")
		check("a file added")
		if err := os.Remove(filepath.Join(dir, "lib", "a.js")); err != nil {
			t.Fatal(err)
		}
		check("a file removed")
		write(t, filepath.Join(dir, "missing.js"), "")
		check("a listed file created")
		write(t, script+depsSuffix, "lib\n")
		check("the list edited")
		// What is not listed does not count.
		k := key(t, script)
		write(t, filepath.Join(dir, "unlisted.js"), "")
		if key(t, script) != k {
			t.Error("an unlisted file changed the key")
		}
	})

	t.Run("a list covering too many files", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		script := filepath.Join(dir, "agenthost-plugin-x")
		write(t, script, "#!/bin/sh\n")
		write(t, script+depsSuffix, "node_modules\n")
		for i := range maxDepsFiles {
			write(t, filepath.Join(dir, "node_modules", strconv.Itoa(i%100), strconv.Itoa(i)), "")
		}
		_, err := pluginDeps(script)
		if err == nil || !strings.Contains(err.Error(), "lists more than") {
			t.Errorf("err = %v, want too many files", err)
		}
	})
}
