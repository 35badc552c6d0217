package host

import (
	"errors"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/sdk"
)

// Enable and Disable take globs as the permission rules write them; one
// that matches nothing, or names no MCP server, is ErrToolNotFound naming
// it, and a pattern that is not one is refused.
func TestRegistryEnableDisableGlobs(t *testing.T) {
	t.Parallel()
	r := newReg(t, nil)
	mustRegister(t, r, simple("github_list"), simple("github_get"), simple("gitlab_list"), optIn("danger_one"))

	if err := r.Disable("github_*"); err != nil {
		t.Fatal(err)
	}
	if got, want := regSchemaNames(r), []string{"gitlab_list"}; !slices.Equal(got, want) {
		t.Errorf("after --disable github_*: %v, want %v", got, want)
	}
	// The last choice that names a tool wins.
	if err := r.Enable("github_?et"); err != nil {
		t.Fatal(err)
	}
	if err := r.Enable("danger_*"); err != nil {
		t.Fatal(err)
	}
	if got, want := regSchemaNames(r), []string{"github_get", "gitlab_list", "danger_one"}; !slices.Equal(got, want) {
		t.Errorf("after --enable github_?et and danger_*: %v, want %v", got, want)
	}
	if got := r.Execute(t.Context(), "github_list", nil); got != "Error: tool not available: github_list is disabled" {
		t.Errorf("a tool a glob disabled runs: %q", got)
	}

	for text, want := range map[string]string{
		"nope":           "tool not found: nope",
		"nope_*":         "tool not found: nope_* matches no tool",
		"mcp:github":     "tool not found: mcp:github matches no tool: no MCP server github was loaded",
		"mcp:github/x_*": "tool not found: mcp:github/x_* matches no tool: no MCP server github was loaded",
	} {
		err := r.Disable(text)
		if !errors.Is(err, ErrToolNotFound) || err.Error() != want {
			t.Errorf("Disable(%s) = %v, want %q", text, err, want)
		}
	}
	for _, text := range []string{"git[hub]*", "mcp:", "mcp:*", "mcp:github/", "mcp:github/a b*"} {
		if err := r.Enable(text); err == nil || errors.Is(err, ErrToolNotFound) {
			t.Errorf("Enable(%q) = %v, want an error saying it is not a pattern", text, err)
		}
	}
	// Nothing was toggled by the refused ones.
	if got, want := regSchemaNames(r), []string{"github_get", "gitlab_list", "danger_one"}; !slices.Equal(got, want) {
		t.Errorf("after the refused patterns: %v, want %v", got, want)
	}
}

// The search tool's query: names, patterns and words, ranked by where the
// words occur.
func TestSelectTools(t *testing.T) {
	t.Parallel()
	mk := func(name, plugin, desc string) candidate {
		return candidate{name, &entry{plugin: plugin, schema: ChatTool{Type: "function", Function: sdk.Function{Name: name, Description: desc}}}}
	}
	cands := []candidate{
		mk("create_issue", "mcp:github", "Create a new issue in a repository."),
		mk("list_issues", "mcp:github", "List the issues of a repository."),
		mk("getPullRequest", "mcp:github", "Get a pull request."),
		mk("send_message", "mcp:slack", "Post a message to a channel; it can mention an issue."),
		mk("search_files", "mcp:fs", "Find files by name."),
	}
	names := func(found []candidate) []string {
		var out []string
		for _, c := range found {
			out = append(out, c.name)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		limit int
		want  []string
		more  int
	}{
		{"create issue", 0, []string{"create_issue", "list_issues", "send_message"}, 0},
		{"issues", 1, []string{"list_issues"}, 2},
		{"pull request", 0, []string{"getPullRequest"}, 0},
		{"slack", 0, []string{"send_message"}, 0},
		{"search_files, list_issues", 0, []string{"search_files", "list_issues"}, 0},
		{"mcp:github", 2, []string{"create_issue", "list_issues"}, 1},
		{"mcp:github/*_issue*", 0, []string{"create_issue", "list_issues"}, 0},
		{"*_files", 0, []string{"search_files"}, 0},
		{"weather forecast", 0, nil, 0},
	} {
		found, more, err := selectTools(cands, tc.query, tc.limit)
		if err != nil || !slices.Equal(names(found), tc.want) || more != tc.more {
			t.Errorf("%q (limit %d) = %v, %d more, %v; want %v, %d more", tc.query, tc.limit, names(found), more, err, tc.want, tc.more)
		}
	}
	if _, _, err := selectTools(cands, "mcp:git hub", 0); err == nil {
		t.Error("a query that is no pattern, in a pattern's form, is not refused")
	}
}
