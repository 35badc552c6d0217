package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestChatResume: a conversation kept by chat goes on in another process
// as if it had never stopped: the request after --resume carries what
// the request of a session that never stopped carries.
func TestChatResume(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	dir := pluginDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []func(map[string]any) []string{
		func(map[string]any) []string { return toolCallReply("call_1", "read_file", `{"path": "notes.txt"}`) },
		func(map[string]any) []string { return textReply("It says alpha.") },
		func(map[string]any) []string { return textReply("Yes, alpha.") },
	}
	flags := []string{"--plugins", dir, "--root", root, "--approval", "auto"}

	// One session, two questions.
	whole, url := newReplay(t, steps...)
	if r := runCLI(t, "What is in notes.txt?\nAre you sure?\n", append(flags, "chat", "--base-url", url, "--session", "whole")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// The same, stopped after the first question and resumed.
	first, url := newReplay(t, steps[:2]...)
	if r := runCLI(t, "What is in notes.txt?\n", append(flags, "chat", "--base-url", url)...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	second, url := newReplay(t, steps[2:]...)
	r := runCLI(t, "", append(flags, "chat", "--base-url", url, "--resume", "-m", "Are you sure?")...)
	if r.code != 0 || r.stdout != "Yes, alpha.\n" || !strings.Contains(r.stderr, "going on with conversation") {
		t.Fatalf("--resume: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if len(first.requests()) != 2 || len(second.requests()) != 1 {
		t.Fatalf("%d and %d requests", len(first.requests()), len(second.requests()))
	}
	want, got := whole.requests()[2], second.requests()[0]
	if !reflect.DeepEqual(want["messages"], got["messages"]) {
		w, _ := json.Marshal(want["messages"])
		g, _ := json.Marshal(got["messages"])
		t.Errorf("the resumed request's messages:\n%s\nwant:\n%s", g, w)
	}

	// A named session: kept under its name, 0600, and listed.
	named, url := newReplay(t, func(map[string]any) []string { return textReply("one") }, func(map[string]any) []string { return textReply("two") })
	for _, q := range []string{"first", "second"} {
		if r := runCLI(t, "", append(flags, "chat", "--base-url", url, "--session", "work", "-m", q)...); r.code != 0 {
			t.Fatalf("exit %d %s", r.code, r.stderr)
		}
	}
	if n := len(named.requests()[1]["messages"].([]any)); n != 3 {
		t.Errorf("the second question of session work carries %d messages, want 3", n)
	}
	file := filepath.Join(os.Getenv("XDG_DATA_HOME"), "agenthost", "sessions", "work.json")
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the session file: %v %v", info, err)
	}
	r = runCLI(t, "/sessions\n", append(flags, "chat", "--base-url", url, "--session", "work")...)
	if !strings.Contains(r.stdout, "* work ") || !strings.Contains(r.stdout, "  whole ") || !strings.Contains(r.stdout, "What is in notes.txt?") {
		t.Errorf("/sessions:\n%s", r.stdout)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--session", "../x", "-m", "q"}, `--session: session name ../x: want 1 to 64 letters`},
		{[]string{"--resume", "--session", "nope", "-m", "q"}, "chat --resume: no saved conversation nope in"},
	} {
		r := runCLI(t, "", append(append(flags, "chat", "--base-url", url), tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
