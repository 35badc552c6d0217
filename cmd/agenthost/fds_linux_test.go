package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// A descriptor agenthost inherited open (a shell's 7<secret) reaches no
// process it starts: a run_bash command reading it finds nothing there.
func TestInheritedDescriptorsStayWithTheHost(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the host's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"bash", "./plugins/bash")
	cmd := exec.Command(plugintest.Binary(t, "./cmd/agenthost"), "--plugins", dir, "--root", t.TempDir(), "--cache-dir", "-",
		"--enable", "run_bash", "call", "run_bash", `{"command":"cat <&7"}`)
	// Descriptors 3 to 6 are placeholders; 7 is the secret, not
	// close-on-exec, as a shell leaves it.
	cmd.ExtraFiles = []*os.File{null, null, null, null, f}
	out, err := cmd.Output()
	var res struct {
		Stdout, Stderr string
		ExitCode       int `json:"exit_code"`
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("run_bash: %v, %v: %s", err, jerr, out)
	}
	if strings.Contains(res.Stdout, "secret") || res.ExitCode == 0 || !strings.Contains(res.Stderr, "Bad file descriptor") {
		t.Errorf("cat <&7 in run_bash: %+v, want a bad descriptor", res)
	}
}
