package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestCallRunsUnlessDenied: agenthost call is a call a person typed: ask
// rules and the mode do not stop it, a deny rule does.
func TestCallRunsUnlessDenied(t *testing.T) {
	dir := pluginDir(t)
	root := t.TempDir()
	r := runCLI(t, "", "--plugins", dir, "--root", root, "--approval", "ask", "--ask", "write_file", "call", "write_file", `{"path":"a.txt","content":"A"}`)
	if r.code != 0 {
		t.Fatalf("an asked call typed by a person: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkContent(t, filepath.Join(root, "a.txt"), "A")

	r = runCLI(t, "", "--plugins", dir, "--root", root, "--deny", "write_file(*.txt)", "call", "write_file", `{"path":"b.txt","content":"B"}`)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, `Error executing write_file: denied by rule "write_file(*.txt)"`) {
		t.Fatalf("a denied call: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied write happened: %v", err)
	}
}

// TestMalformedRulesStopBeforeStart: a rule that does not parse, on the
// command line or in the configuration, stops agenthost before any
// plugin starts, saying where and what.
func TestMalformedRulesStopBeforeStart(t *testing.T) {
	dir := pluginDir(t)
	cfg := filepath.Join(t.TempDir(), "agenthost.json")
	if err := os.WriteFile(cfg, []byte("{\"permissions\": {\n  \"deny\": [\"read_file(\"]\n}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow", "run_bash(git *", "tools"}, `agenthost: --allow run_bash(git *: rule "run_bash(git *": a specifier must end with ")"`},
		{[]string{"--deny", "mcp:", "call", "read_file", "{}"}, `agenthost: --deny mcp:: rule "mcp:": want mcp:SERVER or mcp:SERVER/TOOL, with a server's name`},
		{[]string{"--approval", "sometimes", "tools"}, `agenthost: --approval: unknown approval mode "sometimes": want ask, edits or auto`},
		{[]string{"--config", cfg, "tools"}, cfg + `:2: permissions.deny: rule "read_file(": a specifier must end with ")"`},
	} {
		r := runCLI(t, "", append([]string{"--plugins", dir}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestChatModes: chat -m has no one to ask: in mode ask a write is
// denied with a text that names the rule to add, on stderr too, and the
// model reads it; mode edits and an allow rule let it run; a read runs
// in every mode.
func TestChatModes(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	for _, tc := range []struct {
		name    string
		flags   []string
		written bool
		told    string
	}{
		{"ask", nil, false, `Error executing write_file: needs approval (mode ask) and there is no one here to give it; to let such calls run, add the allow rule "write_file(notes/a.txt)" (--allow, or "permissions" in the configuration), or use --approval edits`},
		{"edits", []string{"--approval", "edits"}, true, "Wrote 1 bytes to notes/a.txt"},
		{"allow rule", []string{"--allow", "write_file(notes/**)"}, true, "Wrote 1 bytes to notes/a.txt"},
		{"deny rule in auto", []string{"--approval", "auto", "--deny", "write_file(**/a.txt)"}, false, `Error executing write_file: denied by rule "write_file(**/a.txt)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rp, url := newReplay(t,
				func(map[string]any) []string {
					return toolCallReply("call_1", "write_file", `{"path":"notes/a.txt","content":"A"}`)
				},
				func(map[string]any) []string { return textReply("done") },
			)
			args := append([]string{"--plugins", dir, "--root", root}, tc.flags...)
			r := runCLI(t, "", append(args, "chat", "--base-url", url, "-m", "write it")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			_, err := os.Stat(filepath.Join(root, "notes", "a.txt"))
			if written := err == nil; written != tc.written {
				t.Fatalf("written: %v, want %v", written, tc.written)
			}
			reqs := rp.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			if got := toolResult(reqs[1], "call_1"); !strings.HasPrefix(got, tc.told) {
				t.Errorf("the model read %q, want %q", got, tc.told)
			}
			if !tc.written && tc.name == "ask" && !strings.Contains(r.stderr, "no one can be asked") {
				t.Errorf("stderr does not tell the user: %q", r.stderr)
			}
		})
	}
}

// TestAutoApproveHonoured: a pasted server's autoApprove lets its own
// tools run unasked, and nothing else: not its other tools, nor another
// source's tool of the same name.
func TestAutoApproveHonoured(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+"fs", "./plugins/fs")
	server := plugintest.Binary(t, "./host/testdata/mcpserver")
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {"srv": {"command": %q, "prefix": "s", "autoApprove": ["echo"]}}}`, server)), 0o600); err != nil {
		t.Fatal(err)
	}
	rp, url := newReplay(t,
		func(map[string]any) []string { return toolCallReply("call_1", "s_echo", `{"text":"hi"}`) },
		func(map[string]any) []string { return toolCallReply("call_2", "s_pid", `{}`) },
		func(map[string]any) []string { return textReply("done") },
	)
	r := runCLI(t, "", "--config", cfg, "--plugins", dir, "--root", t.TempDir(), "chat", "--base-url", url, "-m", "go")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	reqs := rp.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests\n%s", len(reqs), r.stderr)
	}
	if got := toolResult(reqs[1], "call_1"); got != "hi" {
		t.Errorf("the auto-approved tool: %q", got)
	}
	if got := toolResult(reqs[2], "call_2"); !strings.Contains(got, `needs approval (mode ask)`) || !strings.Contains(got, `"mcp:srv/s_pid"`) {
		t.Errorf("another tool of the server: %q", got)
	}
}

// TestAuditRecord: after a chat session and a typed call, the audit file
// holds exactly the calls made, each with its decision and what decided.
func TestAuditRecord(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "audit.jsonl")
	calls := [][2]string{
		{"read_file", `{"path":"notes.txt"}`},
		{"write_file", `{"path":"ok/a.txt","content":"A"}`},
		{"write_file", `{"path":"b.txt","content":"B"}`},
		{"read_file", `{"path":".env"}`},
	}
	var steps []func(map[string]any) []string
	for i, c := range calls {
		steps = append(steps, func(map[string]any) []string { return toolCallReply(fmt.Sprintf("call_%d", i), c[0], c[1]) })
	}
	steps = append(steps, func(map[string]any) []string { return textReply("done") })
	_, url := newReplay(t, steps...)
	flags := []string{"--plugins", dir, "--root", root, "--audit", record, "--allow", "write_file(ok/**)", "--deny", "read_file(**/.env)"}
	if r := runCLI(t, "", append(flags, "chat", "--base-url", url, "-m", "go")...); r.code != 0 {
		t.Fatalf("chat: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "", append(flags, "call", "read_file", `{"path":"notes.txt"}`)...); r.code != 0 {
		t.Fatalf("call: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	info, err := os.Stat(record)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the record's mode is %v, want 0600", info.Mode().Perm())
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec audit.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s | %s %s | %s | %s | error=%v", rec.Caller, rec.Tool, rec.Args, rec.Decision, rec.By, rec.Error))
	}
	want := []string{
		`agenthost chat | read_file {"path":"notes.txt"} | allow | mode ask | error=false`,
		`agenthost chat | write_file {"path":"ok/a.txt","content":"A"} | allow | rule "write_file(ok/**)" | error=false`,
		`agenthost chat | write_file {"path":"b.txt","content":"B"} | deny | no one to ask (mode ask) | error=true`,
		`agenthost chat | read_file {"path":".env"} | deny | rule "read_file(**/.env)" | error=true`,
		`agenthost call | read_file {"path":"notes.txt"} | allow | typed by the user | error=false`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the record:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPathRulesThroughThePlugins: a deny rule on a path holds however the
// model spells the path, through the real file tools: .., ./, an absolute
// path, a symbolic link to the file or to its directory, one path of
// several, either end of a move.
func TestPathRulesThroughThePlugins(t *testing.T) {
	dir := pluginDir(t)
	root := t.TempDir()
	for name, content := range map[string]string{"secret/key": "K", "notes.txt": "n"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "secret", filepath.Join(root, "shortcut"))
	symlink(t, "secret/key", filepath.Join(root, "key-link"))
	deny := []string{"--deny", "read_file(secret/**)", "--deny", "read_multiple_files(secret/**)", "--deny", "move(secret/**)"}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"secret/key"}`},
		{"read_file", `{"path":"./secret/../secret/key"}`},
		{"read_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "secret", "key"))},
		{"read_file", `{"path":"shortcut/key"}`},
		{"read_file", `{"path":"key-link"}`},
		{"read_multiple_files", `{"paths":["notes.txt","shortcut/key"]}`},
		{"move", `{"source":"notes.txt","destination":"shortcut/notes.txt"}`},
		{"move", `{"source":"key-link","destination":"stolen"}`},
	} {
		r := runCLI(t, "", append(append([]string{"--plugins", dir, "--root", root}, deny...), "call", c.tool, c.args)...)
		if r.code == 0 || !strings.Contains(r.stderr, "denied by rule") || strings.Contains(r.stdout, "K") {
			t.Errorf("%s %s: exit %d\nstdout %q\nstderr %q", c.tool, c.args, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatalf("a denied move happened: %v", err)
	}
	if r := runCLI(t, "", append(append([]string{"--plugins", dir, "--root", root}, deny...), "call", "read_file", `{"path":"notes.txt"}`)...); r.code != 0 {
		t.Fatalf("a read the rules do not match: exit %d %s", r.code, r.stderr)
	}
}
