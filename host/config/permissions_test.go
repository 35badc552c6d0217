package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/policy"
)

func ruleTexts(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Effect.String()+" "+r.Text)
	}
	return out
}

// TestPermissions: the permissions block's rules, and the allow rules a
// pasted server's autoApprove and alwaysAllow make, scoped to its tools.
func TestPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := `{
  "permissions": {
    "allow": ["run_bash(git status*)", "write_file(src/**)"],
    "ask": ["run_bash(git push*)"],
    "deny": ["read_file(**/.env)"]
  },
  "mcpServers": {
    "memory": {"command": "npx", "autoApprove": ["read_graph"]},
    "gh": {"url": "https://example.com/mcp", "prefix": "gh", "alwaysAllow": ["list_issues"]}
  }
}`
	c, err := Parse(filepath.Join(dir, "agenthost.json"), []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ruleTexts(c.Rules), "\n")
	want := strings.Join([]string{
		"allow run_bash(git status*)", "allow write_file(src/**)", "ask run_bash(git push*)", "deny read_file(**/.env)",
		"allow mcp:memory/read_graph", "allow mcp:gh/gh_list_issues",
	}, "\n")
	if got != want {
		t.Fatalf("rules:\n%s\nwant:\n%s", got, want)
	}
	if c.Rules[2].Line != 4 || c.Rules[4].Line != 8 {
		t.Errorf("lines %d and %d, want 4 and 8", c.Rules[2].Line, c.Rules[4].Line)
	}
	p := c.Policy()
	for _, tc := range []struct {
		tool, source string
		want         policy.Effect
	}{
		{"read_graph", "mcp:memory", policy.Allow},
		// The same name from elsewhere (a built-in, another server) is
		// not what the entry approved.
		{"read_graph", "mcp:other", policy.None},
		{"read_graph", "agenthost-plugin-fs", policy.None},
		{"gh_list_issues", "mcp:gh", policy.Allow},
	} {
		if got, _ := p.Decide(policy.Call{Tool: tc.tool, Source: tc.source, Args: []byte(`{}`)}); got != tc.want {
			t.Errorf("%s from %s: %v, want %v", tc.tool, tc.source, got, tc.want)
		}
	}
}

func TestPermissionsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ json, want string }{
		"bad rule":      {"{\"permissions\": {\"deny\": [\n\"run_bash(\",\n\"x\"]}}", `agenthost.json:2: permissions.deny: rule "run_bash(": a specifier must end with ")"`},
		"unknown list":  {`{"permissions": {"block": []}}`, `agenthost.json:1: permissions: unknown key "block" (want allow, ask, deny)`},
		"not an array":  {`{"permissions": {"allow": "x"}}`, `agenthost.json:1: permissions.allow: want an array of strings, got a string`},
		"bad tool name": {`{"permissions": {"ask": ["write file"]}}`, `agenthost.json:1: permissions.ask: rule "write file": "write file" is not a tool name or a glob over tool names`},
		"bad approval":  {`{"approval": "never"}`, `agenthost.json:1: approval: unknown approval mode "never": want ask, edits or auto`},
		"bad autoApprove": {"{\"mcpServers\": {\"s\": {\"command\": \"x\",\n\"autoApprove\": [\"a b\"]}}}",
			`agenthost.json:2: mcpServers.s: auto-approved tool "a b": rule "mcp:s/a b": "a b" is not a tool name or a glob over tool names`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(filepath.Join(dir, "agenthost.json"), []byte(tc.json))
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)); got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestProjectRulesWaitForTrust: a project file's ask and deny rules count
// at once; its allow rules only once the file is trusted. A project file
// that says more than rules is refused until trusted, as before.
func TestProjectRulesWaitForTrust(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("HOME", home)
	project := t.TempDir()
	t.Chdir(project)
	user := filepath.Join(home, UserFile)
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(`{"permissions": {"allow": ["run_bash(make*)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		if err := os.WriteFile(ProjectFile, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"permissions": {"allow": ["run_bash(curl*)", "write_file(**)"], "deny": ["run_bash(rm *)"], "ask": ["run_bash(git push*)"]}}`)

	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(ruleTexts(c.Rules), ", "), "allow run_bash(make*), deny run_bash(rm *), ask run_bash(git push*)"; got != want {
		t.Fatalf("untrusted: %s, want %s", got, want)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], `allow rules count once the file is trusted (read it, then run "agenthost trust")`) {
		t.Fatalf("notes %q", c.Notes)
	}

	if _, _, err := Trust(ProjectFile); err != nil {
		t.Fatal(err)
	}
	c, err = Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Rules); got != 5 || len(c.Notes) != 0 {
		t.Fatalf("trusted: %q, notes %q", ruleTexts(c.Rules), c.Notes)
	}

	// A changed file is untrusted again; one that says more than rules
	// is refused.
	write(`{"permissions": {"allow": ["run_bash(*)"]}, "mcpServers": {"x": {"command": "x"}}}`)
	if _, err := Load(); err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("an untrusted file with servers: %v", err)
	}
}
