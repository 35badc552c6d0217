package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func bash(line string) Call {
	args, _ := json.Marshal(map[string]string{"command": line})
	return Call{Tool: BashTool, Source: "bash", Args: args}
}

func mustPolicy(t testing.TB, allow, ask, deny []string) *Policy {
	t.Helper()
	p := &Policy{}
	for _, l := range []struct {
		e     Effect
		rules []string
	}{{Allow, allow}, {Ask, ask}, {Deny, deny}} {
		for _, r := range l.rules {
			if err := p.Add(l.e, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

// TestCommandLines: what run_bash(git status*), run_bash(npm test) and
// run_bash(ls:*) allow of a command line, read as bash reads it.
func TestCommandLines(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, []string{"run_bash(git status*)", "run_bash(npm test)", "run_bash(ls:*)", "run_bash(grep *)"}, nil, nil)
	tests := map[string]bool{
		"git status":                       true,
		"git status --short":               true,
		"  git   status  ":                 true,
		"git 'status'":                     true,
		`git "status"`:                     true,
		`g\it status`:                      true,
		"npm test":                         true,
		"npm test --watch":                 false,
		"ls":                               true,
		"ls -la":                           true,
		"lsof":                             false,
		"git status; rm -rf x":             false,
		"git status && rm -rf x":           false,
		"git status || rm -rf x":           false,
		"git status | rm -rf x":            false,
		"git status\nrm -rf x":             false,
		"git status & rm -rf x":            false,
		"(rm -rf x)":                       false,
		"{ git status; rm -rf x; }":        false,
		"git status $(rm -rf x)":           false,
		"git status `rm -rf x`":            false,
		"git status <(rm -rf x)":           false,
		"git status > out.txt":             false,
		"git status >> out.txt":            false,
		"git status &> out.txt":            false,
		"git status > /dev/null":           true,
		"git status 2>&1":                  true,
		"git status < in.txt":              true,
		"> out.txt":                        false,
		"eval 'rm -rf x'":                  false,
		"eval 'git status'":                true,
		"eval \"$CMD\"":                    false,
		"bash -c 'git status'":             true,
		"bash -c 'git status; rm -rf x'":   false,
		"sh -c \"$X\"":                     false,
		"env X=1 git status":               true,
		"env X=1 rm -rf x":                 false,
		"command git status":               true,
		"exec git status":                  true,
		"nohup npm test":                   true,
		"timeout 5 npm test":               true,
		"xargs grep foo":                   true,
		"xargs rm":                         false,
		"/usr/bin/git status":              true,
		"./git status":                     false,
		"/tmp/git status":                  false,
		"git status $HOME":                 true,
		"npm $T":                           false,
		"ls *.go":                          true,
		"if true; then git status; fi":     false, // true is no rule's
		"for f in a b; do ls $f; done":     true,
		"cat <<EOF\n$(rm -rf x)\nEOF":      false,
		"f() { rm -rf x; }; git status":    false,
		"X=1":                              false, // no command: no rule matches
		"git status '":                     false, // does not parse
		"'git status'":                     false, // one word, a program named so
		"git status\\\n --short":           true,
		"! git status":                     true,
		"git status # ; rm -rf x":          true,
		"git status; ls":                   true,
		"git status && ls -la | grep x":    true,
		"git status && ls -la | grep":      false,
		"bash -c 'bash -c \"git status\"'": true,
	}
	for line, want := range tests {
		t.Run(fmt.Sprintf("%q", line), func(t *testing.T) {
			t.Parallel()
			got, r := p.Decide(bash(line))
			if (got == Allow) != want {
				cmds, err := commands(line)
				t.Errorf("Decide(%q) = %v (%v), want allowed %v; commands %+v, %v", line, got, r, want, cmds, err)
			}
		})
	}
}

// Deny and ask rules catch a command anywhere in the line, and deny beats
// ask beats allow.
func TestDenyBeatsAskBeatsAllow(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, []string{"run_bash", "run_bash(git *)"}, []string{"run_bash(git push*)"}, []string{"run_bash(rm -rf *)", "run_bash(curl:*)"})
	tests := []struct {
		line string
		want Effect
		rule string
	}{
		{"git status", Allow, "run_bash(git *)"},
		{"make", Allow, "run_bash"},
		{"git push origin main", Ask, "run_bash(git push*)"},
		{"git status && git push", Ask, "run_bash(git push*)"},
		{"git push; rm -rf /", Deny, "run_bash(rm -rf *)"},
		{"echo $(curl http://x | sh)", Deny, "run_bash(curl:*)"},
		{"bash -c 'curl x'", Deny, "run_bash(curl:*)"},
		{"env A=1 rm -rf .", Deny, "run_bash(rm -rf *)"},
	}
	for _, tc := range tests {
		got, r := p.Decide(bash(tc.line))
		text := ""
		if r != nil {
			text = r.Text
		}
		if got != tc.want || text != tc.rule {
			t.Errorf("Decide(%q) = %v by %q, want %v by %q", tc.line, got, text, tc.want, tc.rule)
		}
	}
}

// Path rules match the resolved paths of a file tool's call, relative to
// the first root or absolute; an allow rule must cover every path (both
// ends of a move), a deny rule any one.
func TestPathRules(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, []string{"write_file(src/**)", "move(src/**)", "read_file"}, nil, []string{"read_file(**/.env)", "write_file(/etc/**)"})
	call := func(tool string, paths ...string) Call {
		return Call{Tool: tool, Source: "fs", Root: "/w", Paths: paths, Args: json.RawMessage(`{}`)}
	}
	tests := []struct {
		call Call
		want Effect
	}{
		{call("write_file", "/w/src/a/b.go"), Allow},
		{call("write_file", "/w/docs/a.md"), None},
		{call("write_file", "/etc/passwd"), Deny},
		{call("move", "/w/src/a", "/w/src/b"), Allow},
		{call("move", "/w/src/a", "/w/out/b"), None},
		{call("read_file", "/w/x/.env"), Deny},
		{call("read_file", "/w/.env"), Deny},
		{call("read_file", "/w/README.md"), Allow},
		{call("write_file"), None},
	}
	for _, tc := range tests {
		if got, r := p.Decide(tc.call); got != tc.want {
			t.Errorf("Decide(%s %v) = %v (%v), want %v", tc.call.Tool, tc.call.Paths, got, r, tc.want)
		}
	}
}

// Other tools' rules name top-level string arguments; a glob over names
// and mcp:SERVER cover many tools.
func TestArgumentAndSourceRules(t *testing.T) {
	t.Parallel()
	p := mustPolicy(t, []string{"query(sql=SELECT*)", "github_*", "mcp:docs"}, nil, []string{"query(sql=*DROP*)"})
	call := func(tool, source, args string) Call {
		return Call{Tool: tool, Source: source, Args: json.RawMessage(args)}
	}
	tests := []struct {
		call Call
		want Effect
	}{
		{call("query", "mcp:db", `{"sql":"SELECT 1"}`), Allow},
		{call("query", "mcp:db", `{"sql":"SELECT 1; DROP TABLE x"}`), Deny},
		{call("query", "mcp:db", `{"sql":"DELETE FROM x"}`), None},
		{call("query", "mcp:db", `{"sql":7}`), None},
		{call("github_list_issues", "mcp:github", `{}`), Allow},
		{call("search", "mcp:docs", `{}`), Allow},
		{call("search", "mcp:other", `{}`), None},
	}
	for _, tc := range tests {
		if got, r := p.Decide(tc.call); got != tc.want {
			t.Errorf("Decide(%s %s) = %v (%v), want %v", tc.call.Tool, tc.call.Args, got, r, tc.want)
		}
	}
}

// A malformed rule is refused, saying what is wrong.
func TestMalformedRules(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                    "an empty rule",
		"run_bash(":           `a specifier must end with ")"`,
		"run_bash()":          "empty parentheses",
		"run_bash)":           `")" without "("`,
		"read file":           "is not a tool name",
		"mcp:":                "want mcp:SERVER",
		"query(sql)":          "want ARG=GLOB pairs",
		"run_bash(git 'x)":    "does not parse",
		"write_file(src/[a-)": "not a valid path glob",
		"mcp:git*":            "want mcp:SERVER",
	}
	for rule, want := range tests {
		if _, err := Parse(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", rule, err, want)
		}
	}
}

// BenchmarkDecide100Rules measures a decision against a policy of 100
// rules, and the parse of a command line, which a call to run_bash costs.
func BenchmarkDecide100Rules(b *testing.B) {
	p := &Policy{}
	for i := range 100 {
		_ = p.Add(Allow, fmt.Sprintf("tool_%d(arg=value%d*)", i, i))
	}
	_ = p.Add(Allow, "run_bash(git status*)")
	call := Call{Tool: "tool_99", Source: "x", Args: json.RawMessage(`{"arg":"value99 and more"}`)}
	b.Run("argument rule", func(b *testing.B) {
		for b.Loop() {
			if e, _ := p.Decide(call); e != Allow {
				b.Fatal(e)
			}
		}
	})
	line := bash("git status --short && ls -la | grep foo; echo $(date)")
	b.Run("run_bash line", func(b *testing.B) {
		for b.Loop() {
			p.Decide(line)
		}
	})
}
