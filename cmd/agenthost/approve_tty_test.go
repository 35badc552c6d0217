package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// ttyChat is agenthost chat running on a pseudo-terminal against a
// replayed model, with the real fs and bash plugins and a workspace root
// of its own.
type ttyChat struct {
	t          *testing.T
	rp         *replay
	root       string
	controller *os.File
	exited     <-chan struct{}
	waitErr    func() error

	mu     sync.Mutex
	screen bytes.Buffer
	// at is how far the screen has been checked.
	at int
}

func startTTYChat(t *testing.T, steps ...func(map[string]any) []string) *ttyChat {
	t.Helper()
	exe, plugins := builtAgenthost(t)
	plugintest.Install(t, plugins, host.PluginPrefix+"bash", "./plugins/bash")
	c := &ttyChat{t: t, root: t.TempDir()}
	var url string
	c.rp, url = newReplay(t, steps...)
	controller, tty := openPTY(t)
	c.controller = controller
	cmd := exec.Command(exe, "--plugins", plugins, "--root", c.root, "--enable", "write_file", "--enable", "run_bash", "chat", "--base-url", url)
	cmd.Env = agenthostEnv("OPENAI_API_KEY=sk-test", "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	c.exited, c.waitErr = startChat(t, cmd)
	tty.Close() // the child holds its own copies
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := controller.Read(buf)
			c.mu.Lock()
			c.screen.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	c.see("> ")
	return c
}

func (c *ttyChat) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.screen.String()
}

// see waits for want on the screen after what was seen so far, and
// returns what came from there to the end of want.
func (c *ttyChat) see(want string) string {
	c.t.Helper()
	from := c.at
	c.at = waitOutput(c.t, c.output, want, from, "")
	return c.output()[from:c.at]
}

func (c *ttyChat) typeKeys(keys string) {
	c.t.Helper()
	if _, err := c.controller.WriteString(keys); err != nil {
		c.t.Fatal(err)
	}
}

// ask types a question at the chat's prompt.
func (c *ttyChat) ask(question string) {
	c.t.Helper()
	c.typeKeys(question + "\r")
}

// end types Ctrl-D at the prompt and waits for the session to end.
func (c *ttyChat) end() {
	c.t.Helper()
	c.see("> ")
	c.typeKeys("\x04")
	select {
	case <-c.exited:
		if err := c.waitErr(); err != nil {
			c.t.Errorf("chat ended with %v", err)
		}
	case <-time.After(15 * time.Second):
		c.t.Fatal("Ctrl-D at the prompt did not end the session")
	}
}

// request is the n-th request the model got.
func (c *ttyChat) request(n int) map[string]any {
	c.t.Helper()
	reqs := c.rp.requests()
	if len(reqs) <= n {
		c.t.Fatalf("%d requests, want at least %d", len(reqs), n+1)
	}
	return reqs[n]
}

// toolCallsReply asks for several tool calls in one answer: id, name
// and arguments for each.
func toolCallsReply(calls ...[3]string) []string {
	var chunks []string
	for i, call := range calls {
		args, _ := json.Marshal(call[2])
		chunks = append(chunks, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`, i, call[0], call[1], args))
	}
	return append(chunks, `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
}

// unanswered lists the tool calls of a request's conversation that have
// no result in it.
func unanswered(body map[string]any) []string {
	var calls, results []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		tcs, _ := mm["tool_calls"].([]any)
		for _, tc := range tcs {
			calls = append(calls, fmt.Sprint(tc.(map[string]any)["id"]))
		}
		if mm["role"] == "tool" {
			results = append(results, fmt.Sprint(mm["tool_call_id"]))
		}
	}
	return slices.DeleteFunc(calls, func(id string) bool { return slices.Contains(results, id) })
}

func writeArgs(path, content string) string {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return string(b)
}

func bashArgs(command string) string {
	b, _ := json.Marshal(map[string]string{"command": command})
	return string(b)
}

// TestApproveWriteFile: write_file calls asked about on the terminal. The
// question shows the diff the call would make; n denies (no file is
// written, the model reads "denied by the user"), r denies with a reason
// the model reads, y lets the call run.
func TestApproveWriteFile(t *testing.T) {
	t.Parallel()
	c := startTTYChat(t,
		func(map[string]any) []string {
			return toolCallReply("call_new", "write_file", writeArgs("new.txt", "hello\nworld\n"))
		},
		func(map[string]any) []string { return textReply("Not written.") },
		func(map[string]any) []string {
			return toolCallReply("call_why", "write_file", writeArgs("notes.txt", "one\n2\nthree\n\x1b[31mred\n"))
		},
		func(map[string]any) []string { return textReply("Understood.") },
		func(map[string]any) []string {
			return toolCallReply("call_yes", "write_file", writeArgs("notes.txt", "one\n2\nthree\n"))
		},
		func(map[string]any) []string { return textReply("Written.") },
		func(map[string]any) []string {
			return toolCallReply("call_edit", "edit_file", `{"path":"notes.txt","old_string":"three","new_string":"3"}`)
		},
		func(map[string]any) []string { return textReply("Left alone.") },
	)
	notes := filepath.Join(c.root, "notes.txt")
	if err := os.WriteFile(notes, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	c.ask("write a new file")
	q := c.see("[y]es / [a]lways: write_file / [n]o / [r]eason")
	for _, want := range []string{"approve write_file? (asked by mode ask)", "creates new.txt", "+++ b/new.txt", "@@ -0,0 +1,2 @@", "+hello", "+world"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}
	c.typeKeys("n")
	c.see("no")
	c.see("Not written.")
	if _, err := os.Stat(filepath.Join(c.root, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt was written though denied (stat: %v)", err)
	}
	if got := toolResult(c.request(1), "call_new"); got != "Error executing write_file: denied by the user" {
		t.Errorf("the model read %q", got)
	}

	c.see("> ")
	c.ask("change notes.txt")
	q = c.see("[r]eason")
	for _, want := range []string{"replaces notes.txt", "--- a/notes.txt", " one\n", "-two", "+2", " three", `+\x1b[31mred`} {
		if !strings.Contains(strings.ReplaceAll(q, "\r\n", "\n"), want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}
	if strings.Contains(q, "\x1b[31m") {
		t.Errorf("the question prints the model's escape sequence raw:\n%q", q)
	}
	c.typeKeys("r")
	c.see("because: ")
	c.typeKeys("not the numbers\r")
	c.see("Understood.")
	if got := toolResult(c.request(3), "call_why"); got != "Error executing write_file: denied by the user: not the numbers" {
		t.Errorf("the model read %q", got)
	}
	if data, _ := os.ReadFile(notes); string(data) != "one\ntwo\nthree\n" {
		t.Errorf("notes.txt is %q after a denial", data)
	}

	c.see("> ")
	c.ask("change it anyway")
	c.see("[r]eason")
	c.typeKeys("y")
	c.see("Written.")
	if data, _ := os.ReadFile(notes); string(data) != "one\n2\nthree\n" {
		t.Errorf("notes.txt is %q after y", data)
	}
	if got := toolResult(c.request(5), "call_yes"); !strings.HasPrefix(got, "Wrote 12 bytes to notes.txt") {
		t.Errorf("the model read %q", got)
	}

	// edit_file's question shows the diff of its own dry run, which is
	// not asked about and writes nothing.
	c.see("> ")
	c.ask("edit it")
	q = c.see("[r]eason")
	for _, want := range []string{"approve edit_file?", "Dry run, nothing was written", "-three", "+3"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}
	if n := strings.Count(q, "── approve"); n != 1 {
		t.Errorf("%d questions for one edit:\n%s", n, q)
	}
	c.typeKeys("n")
	c.see("Left alone.")
	if data, _ := os.ReadFile(notes); string(data) != "one\n2\nthree\n" {
		t.Errorf("notes.txt is %q after a denied edit", data)
	}
	c.end()
}

// TestApproveAlways: a on a run_bash call allows the calls its session
// rule matches for the rest of the session, unasked; a command line that
// no rule would cover is not offered a.
func TestApproveAlways(t *testing.T) {
	t.Parallel()
	c := startTTYChat(t,
		func(map[string]any) []string { return toolCallReply("call_1", "run_bash", bashArgs("echo -n first")) },
		func(map[string]any) []string { return toolCallReply("call_2", "run_bash", bashArgs("echo -n second")) },
		func(map[string]any) []string { return textReply("Both ran.") },
		func(map[string]any) []string { return toolCallReply("call_3", "run_bash", bashArgs("echo -n third")) },
		func(map[string]any) []string {
			return toolCallReply("call_4", "run_bash", bashArgs("echo x > out.txt"))
		},
		func(map[string]any) []string { return textReply("Done.") },
	)
	c.ask("run things")
	q := c.see("[r]eason")
	if !strings.Contains(q, "$ echo -n first") || !strings.Contains(q, "[a]lways: run_bash(echo:*) / [n]o") {
		t.Errorf("the question:\n%s", q)
	}
	c.typeKeys("a")
	c.see("always: run_bash(echo:*)")
	after := c.see("Both ran.")
	if strings.Contains(after, "approve") {
		t.Errorf("the second echo was asked about:\n%s", after)
	}
	if got := toolResult(c.request(2), "call_2"); !strings.Contains(got, `"stdout":"second"`) {
		t.Errorf("the second echo's result: %q", got)
	}

	// Later in the session: echo runs unasked; a command that writes a
	// file is asked, without a.
	c.see("> ")
	c.ask("more")
	q = c.see("[r]eason")
	if strings.Contains(q, "$ echo -n third") {
		t.Errorf("echo third was asked about:\n%s", q)
	}
	if !strings.Contains(q, "$ echo x > out.txt") || strings.Contains(q, "[a]lways") {
		t.Errorf("the question of a command no rule covers:\n%s", q)
	}
	c.typeKeys("a")
	c.see(`"a" is not offered for this call`)
	c.typeKeys("n")
	c.see("Done.")
	if got := toolResult(c.request(4), "call_3"); !strings.Contains(got, `"stdout":"third"`) {
		t.Errorf("echo third's result: %q", got)
	}
	if got := toolResult(c.request(5), "call_4"); got != "Error executing run_bash: denied by the user" {
		t.Errorf("the denied command's result: %q", got)
	}
	if _, err := os.Stat(filepath.Join(c.root, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt was written (stat: %v)", err)
	}
	c.end()
}

// TestApproveCtrlC: Ctrl-C at a question denies the call and stops the
// turn: the next call of the turn is not asked about, chat says
// (interrupted), and the next question's request answers every tool
// call.
func TestApproveCtrlC(t *testing.T) {
	t.Parallel()
	c := startTTYChat(t,
		func(map[string]any) []string {
			return toolCallsReply(
				[3]string{"call_a", "write_file", writeArgs("a.txt", "a\n")},
				[3]string{"call_b", "write_file", writeArgs("b.txt", "b\n")})
		},
		func(map[string]any) []string { return textReply("Still here.") },
	)
	c.ask("write two files")
	q := c.see("[r]eason")
	if !strings.Contains(q, "+++ b/a.txt") {
		t.Errorf("the first question:\n%s", q)
	}
	c.typeKeys("\x03")
	after := c.see("(interrupted)")
	if strings.Contains(after, "b.txt") {
		t.Errorf("the second call was asked about:\n%s", after)
	}
	c.see("> ")
	c.ask("are you there?")
	c.see("Still here.")
	body := c.request(1)
	if ids := unanswered(body); len(ids) > 0 {
		b, _ := json.Marshal(body["messages"])
		t.Errorf("tool calls %v have no result:\n%s", ids, b)
	}
	if got := toolResult(body, "call_a"); got != "Error executing write_file: denied by the user" {
		t.Errorf("the call Ctrl-C denied: %q", got)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(c.root, name)); !os.IsNotExist(err) {
			t.Errorf("%s was written (stat: %v)", name, err)
		}
	}
	c.end()
}

// TestApproveUnattended: chat -m, whose input is no terminal, has no one
// to ask: the write does not happen, the model reads why, and stderr
// names the rule that would allow the call, once.
func TestApproveUnattended(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	root := t.TempDir()
	rp, url := newReplay(t,
		func(map[string]any) []string {
			return toolCallReply("call_w", "write_file", writeArgs("out.txt", "x\n"))
		},
		func(body map[string]any) []string { return textReply("Could not.") },
	)
	r := runCLI(t, "", "--plugins", dir, "--root", root, "--enable", "write_file", "chat", "--base-url", url, "-m", "Write out.txt")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt was written with no one to approve it (stat: %v)", err)
	}
	const rule = "write_file(out.txt)"
	if n := strings.Count(r.stderr, rule); n != 1 {
		t.Errorf("stderr names %s %d times, want once:\n%s", rule, n, r.stderr)
	}
	if got := toolResult(rp.requests()[1], "call_w"); !strings.HasPrefix(got, "Error executing write_file: needs approval") || !strings.Contains(got, `"`+rule+`"`) {
		t.Errorf("the model read %q", got)
	}
}

// TestApproveQuestionText: what the question prints of a hostile call is
// escaped, one line of the terminal for each line of the preview, and a
// long write_file diff is bounded.
func TestApproveQuestionText(t *testing.T) {
	t.Parallel()
	req := &policy.Request{
		Call:         &host.Call{Tool: "evil\x1b[2J", Source: "agenthost-plugin-x\r", Args: json.RawMessage(`{}`)},
		Why:          "mode ask",
		Preview:      "line\x1b]0;title\x07 one\r\n\u202egnp.exe\ttab\xff\nsecond\r",
		SessionRules: []string{"evil"},
	}
	q := question(req)
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\xff", "\r"} {
		if strings.Contains(q, bad) {
			t.Errorf("the question holds %q raw:\n%q", bad, q)
		}
	}
	for _, want := range []string{`approve "evil\x1b[2J" from "agenthost-plugin-x\r"?`, `   line\x1b]0;title\a one` + "\n", `   \u202egnp.exe` + "\ttab" + `\xff` + "\n", "   second\n", "[a]lways: evil /"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}

	root := t.TempDir()
	var before, after strings.Builder
	for i := range 500 {
		fmt.Fprintf(&before, "line %d\n", i)
		fmt.Fprintf(&after, "LINE %d\n", i)
	}
	path := filepath.Join(root, "big.txt")
	if err := os.WriteFile(path, []byte(before.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(content string) string {
		return writePreview(&policy.Request{Paths: []string{path},
			Call: &host.Call{Tool: "write_file", Builtin: true, Roots: []string{root}, Args: json.RawMessage(writeArgs("big.txt", content))}})
	}
	p := write(after.String())
	if lines := strings.Split(strings.TrimSuffix(p, "\n"), "\n"); len(lines) != 202 || lines[0] != "replaces big.txt" || lines[1] != "--- a/big.txt" || lines[201] != "… 803 more lines" {
		t.Errorf("the preview of a long diff has %d lines, from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if p := write(before.String()); p != "writes big.txt again, unchanged (4390 bytes)" {
		t.Errorf("the preview of the same content: %q", p)
	}
	if p := write("bin\x00ary"); p != "writes 7 bytes of binary content to big.txt, replacing 4390 bytes" {
		t.Errorf("the preview of binary content: %q", p)
	}
}
