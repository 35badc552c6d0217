package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// A workspace that holds the home directory keeps its secrets from every
// plugin, with exec or without: the fs plugin reads the rest of it, not
// the keys; run_bash's commands neither, whatever the roots.
func TestSecretsStayOutOfEveryPlugin(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	for name, content := range map[string]string{
		".ssh/id_ed25519":      "SECRET-key",
		".config/gh/hosts.yml": "SECRET-token",
		".npmrc":               "//registry.npmjs.org/:_authToken=SECRET-npm\n",
		".yarnrc.yml":          "nodeLinker: node-modules\n",
		"notes.txt":            "notes",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg := load(t, pluginDir(t, "fs", "bash"), &host.Options{Roots: []string{home}, CacheDir: host.NoCache})
	if err := reg.Enable("run_bash"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{".ssh/id_ed25519", false},
		{".config/gh/hosts.yml", false},
		{".npmrc", false},     // it holds a token
		{".yarnrc.yml", true}, // it does not
		{"notes.txt", true},
	} {
		got := reg.Execute(t.Context(), "read_file", []byte(`{"path":"`+c.path+`"}`))
		if strings.Contains(got, "SECRET") || host.IsError(got) == c.ok {
			t.Errorf("read_file %s = %q, want it read: %v", c.path, got, c.ok)
		}
		out := reg.Execute(t.Context(), "run_bash", []byte(`{"command":"cat `+c.path+`"}`))
		if strings.Contains(out, "SECRET") || strings.Contains(out, `"exit_code":0`) != c.ok {
			t.Errorf("run_bash cat %s = %q, want it read: %v", c.path, out, c.ok)
		}
	}
	for _, r := range reg.Plugins() {
		if !strings.Contains(strings.Join(r.Sandbox.Secrets, " "), "~/.ssh") {
			t.Errorf("%s's report: secrets %q, want ~/.ssh among them", r.Name, r.Sandbox.Secrets)
		}
	}
}
