package main

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	// A plugins directory that does not exist: --version must not look.
	t.Setenv("AGENTHOST_PLUGINS", "/nonexistent/agenthost-plugins")
	r := runCLI(t, "", "--version")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("--version: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "agenthost ") || !strings.HasSuffix(r.stdout, "\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--version printed %q, want one line \"agenthost VERSION\"", r.stdout)
	}
	if r := runCLI(t, "", "--help"); !strings.Contains(r.stdout, "--version") {
		t.Errorf("--help does not mention --version:\n%s", r.stdout)
	}
}
