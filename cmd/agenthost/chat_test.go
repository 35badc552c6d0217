package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
)

// replay is an OpenAI-compatible chat completions server that answers
// each streamed request with the next step's chunks, as SSE.
type replay struct {
	t     *testing.T
	steps []func(body map[string]any) []string

	mu     sync.Mutex
	bodies []map[string]any
	auth   []string

	// abandoned is closed when the client gives up on an answer that a
	// hang left unfinished.
	abandoned   chan struct{}
	abandonOnce sync.Once
}

// hang, as a step's last chunk, leaves the answer unfinished: what came
// before is flushed, and the server waits for the client to give up.
const hang = "\x00hang"

func newReplay(t *testing.T, steps ...func(body map[string]any) []string) (*replay, string) {
	rp := &replay{t: t, steps: steps, abandoned: make(chan struct{})}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return rp, srv.URL + "/v1"
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rp.mu.Lock()
	n := len(rp.bodies)
	rp.bodies = append(rp.bodies, body)
	rp.auth = append(rp.auth, r.Header.Get("Authorization"))
	rp.mu.Unlock()
	if n >= len(rp.steps) {
		http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range rp.steps[n](body) {
		if chunk == hang {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				rp.abandonOnce.Do(func() { close(rp.abandoned) })
			case <-time.After(30 * time.Second):
			}
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", chunk)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (rp *replay) requests() []map[string]any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.bodies
}

// textReply streams text word by word, then stops.
func textReply(text string) []string {
	var chunks []string
	for _, w := range strings.SplitAfter(text, " ") {
		s, _ := json.Marshal(w)
		chunks = append(chunks, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, s))
	}
	return append(chunks,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5}}`)
}

// toolCallReply asks for one tool call, its arguments in two pieces.
func toolCallReply(id, name, args string) []string {
	half := len(args) / 2
	a1, _ := json.Marshal(args[:half])
	a2, _ := json.Marshal(args[half:])
	return []string{
		fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":null}]}`, id, name, a1),
		fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":%s}}]},"finish_reason":null}]}`, a2),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
}

// toolResult finds the result of a tool call in a request body.
func toolResult(body map[string]any, id string) string {
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "tool" && mm["tool_call_id"] == id {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

// offered lists the tools a request body carries.
func offered(body map[string]any) []string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		fn, _ := tl.(map[string]any)["function"].(map[string]any)
		names = append(names, fmt.Sprint(fn["name"]))
	}
	return names
}

// clearProviderEnv leaves no provider configured; tests that call it
// cannot run in parallel.
func clearProviderEnv(t *testing.T) {
	for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "AGENTHOST_PLUGINS"} {
		t.Setenv(v, "")
	}
}

// TestChatOnce: chat -m against a replayed model whose read_file call the
// real fs plugin runs.
func TestChatOnce(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the password is swordfish\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rp, url := newReplay(t,
		func(map[string]any) []string { return toolCallReply("call_1", "read_file", `{"path":"notes.txt"}`) },
		func(body map[string]any) []string {
			return textReply("The file says: " + strings.TrimSpace(toolResult(body, "call_1")))
		},
	)

	r := runCLI(t, "", "--plugins", dir, "--root", root, "chat", "--base-url", url, "--system", "be exact", "-m", "What is in notes.txt?")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	want := "→ read_file {\"path\":\"notes.txt\"}\n" +
		"← the password is swordfish …\n" +
		"The file says: the password is swordfish\nsecond line\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	reqs := rp.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if reqs[0]["model"] != "gpt-4o-mini" || reqs[0]["stream"] != true || rp.auth[0] != "Bearer sk-test" {
		t.Errorf("first request: model %v, stream %v, auth %q", reqs[0]["model"], reqs[0]["stream"], rp.auth[0])
	}
	if first, _ := json.Marshal(reqs[0]["messages"]); !strings.Contains(string(first), `"be exact"`) {
		t.Errorf("the system prompt is missing: %s", first)
	}
	if got := toolResult(reqs[1], "call_1"); got != "the password is swordfish\nsecond line\n" {
		t.Errorf("tool result sent back = %q", got)
	}
}

// TestChatSampling: --temperature and --max-tokens reach every request;
// without them the requests leave the provider's defaults.
func TestChatSampling(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := t.TempDir() // no plugins
	for _, tc := range []struct {
		flags []string
		want  map[string]any
	}{
		{[]string{"--temperature", "0", "--max-tokens", "50"}, map[string]any{"temperature": 0.0, "max_tokens": 50.0}},
		{nil, map[string]any{}},
	} {
		rp, url := newReplay(t, func(map[string]any) []string { return textReply("ok") })
		args := append([]string{"--plugins", dir, "chat", "--base-url", url, "-m", "hi"}, tc.flags...)
		if r := runCLI(t, "", args...); r.code != 0 || r.stdout != "ok\n" {
			t.Fatalf("%v: exit status %d, stdout %q, stderr %q", tc.flags, r.code, r.stdout, r.stderr)
		}
		body := rp.requests()[0]
		for _, key := range []string{"temperature", "max_tokens"} {
			got, ok := body[key]
			if w, wantIt := tc.want[key]; ok != wantIt || got != w {
				t.Errorf("%v: %s = %v (present %v), want %v (present %v)", tc.flags, key, got, ok, w, wantIt)
			}
		}
	}
}

func TestChatConfigErrors(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"nothing configured": {args: []string{"chat", "-m", "hi"}, want: "agenthost: " + noProviderMsg + " (see agenthost --help)\n"},
		"unknown provider":   {args: []string{"chat", "--provider", "acme", "-m", "hi"}, want: `unknown provider "acme"`},
		"anthropic, no key":  {args: []string{"chat", "--provider", "anthropic", "-m", "hi"}, want: "the anthropic provider needs ANTHROPIC_API_KEY to be set"},
		"openrouter, no key": {env: map[string]string{"OPENAI_API_KEY": "x"}, args: []string{"chat", "--provider", "openrouter", "-m", "hi"}, want: "needs OPENROUTER_API_KEY"},
		"arguments":          {env: map[string]string{"OPENAI_API_KEY": "x"}, args: []string{"--plugins", t.TempDir(), "chat", "hello"}, want: "chat takes no arguments"},
		"temperature":        {env: map[string]string{"OPENAI_API_KEY": "x"}, args: []string{"chat", "--temperature", "2.5", "-m", "hi"}, want: `invalid value "2.5" for flag -temperature: want a number from 0 to 2`},
		"max tokens":         {env: map[string]string{"OPENAI_API_KEY": "x"}, args: []string{"chat", "--max-tokens", "-3", "-m", "hi"}, want: "--max-tokens must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clearProviderEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := runCLI(t, "", tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Errorf("exit status %d, stdout %q, stderr %q; want status 2 and one line with %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

func TestChatProviderInference(t *testing.T) {
	cases := map[string]struct {
		env       map[string]string
		provider  string
		wantName  string
		wantModel string
	}{
		"anthropic first": {env: map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}, wantName: "anthropic", wantModel: "claude-sonnet-4-5"},
		"openai":          {env: map[string]string{"OPENAI_API_KEY": "o", "OPENROUTER_API_KEY": "r"}, wantName: "openai", wantModel: "gpt-4o-mini"},
		"openrouter":      {env: map[string]string{"OPENROUTER_API_KEY": "r"}, wantName: "openrouter", wantModel: "openai/gpt-4o-mini"},
		"ollama, no key":  {provider: "ollama", wantName: "ollama", wantModel: "llama3.2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clearProviderEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			p, model, err := (&chatFlags{provider: tc.provider}).newProvider()
			if err != nil || p.Name() != tc.wantName || model != tc.wantModel {
				t.Errorf("newProvider = %v, %q, %v; want %s, %s", p, model, err, tc.wantName, tc.wantModel)
			}
		})
	}
}

// TestChatInteractive feeds the interactive loop a script of lines.
func TestChatInteractive(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	session := filepath.Join(t.TempDir(), "session.json")
	rp, url := newReplay(t, func(body map[string]any) []string {
		return textReply("I have " + strings.Join(offered(body), ", "))
	})
	script := strings.Join([]string{
		"/tools",
		"/disable read_file",
		"/tools",
		"/frob",
		"/enable nope",
		"",
		"/system be terse",
		"what tools?",
		"/save checkpoint",
		"/clear",
		"/save empty",
		"/exit",
		"never sent",
	}, "\n") + "\n"

	r := runCLI(t, script, "--plugins", dir, "chat", "--base-url", url, "--session-file", session)
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout
	for _, s := range []string{
		"> ",
		"  read_file              enabled\n",
		"disabled read_file\n",
		"  read_file              disabled\n",
		"  save_session_context   enabled\n",
		"unknown command /frob; commands: /tools",
		"/enable: tool not found: nope\n",
		"system prompt set\n",
		"Session context saved to " + session + "\n",
		"context cleared\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if i, j := strings.Index(out, "read_file              enabled"), strings.Index(out, "read_file              disabled"); i < 0 || j < i {
		t.Errorf("/tools did not show read_file enabled, then disabled:\n%s", out)
	}
	reqs := rp.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1 (nothing after /exit)", len(reqs))
	}
	tools := offered(reqs[0])
	if strings.Contains(strings.Join(tools, ","), "read_file") || len(tools) == 0 {
		t.Errorf("the request offered %v; read_file is disabled", tools)
	}
	if !strings.Contains(out, "I have "+strings.Join(tools, ", ")+"\n") {
		t.Errorf("the answer is not in the output:\n%s", out)
	}

	// The second /save ran after /clear: the file holds the cleared state.
	data, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Reason, SystemPrompt, SessionContext string
	}
	var raw map[string]string
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	saved.Reason, saved.SystemPrompt, saved.SessionContext = raw["reason"], raw["system_prompt"], raw["session_context"]
	if saved.Reason != "empty" || saved.SystemPrompt != "be terse" || saved.SessionContext != "" {
		t.Errorf("session file after /clear: %+v", saved)
	}
}

// TestChatCtrlC drives the built binary with real SIGINTs: Ctrl-C during
// an answer stops that answer (its request is abandoned) and the session
// goes on with the conversation intact; Ctrl-C at the prompt ends the
// session cleanly.
func TestChatCtrlC(t *testing.T) {
	exe, plugins := builtAgenthost(t)

	rp, url := newReplay(t,
		func(map[string]any) []string {
			// The first answer starts, then never ends.
			return []string{`{"choices":[{"index":0,"delta":{"content":"Let me think"},"finish_reason":null}]}`, hang}
		},
		func(map[string]any) []string { return textReply("The second answer.") },
	)

	cmd := exec.Command(exe, "--plugins", plugins, "chat", "--base-url", url)
	cmd.Env = agenthostEnv("OPENAI_API_KEY=sk-test")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr plugintest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	exited, waitErr := startChat(t, cmd)

	seen := func(want string, from int) int {
		t.Helper()
		return waitOutput(t, stdout.String, want, from, "stderr:\n"+stderr.String())
	}
	interrupt := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}

	at := seen("> ", 0)
	fmt.Fprintln(stdin, "first question")
	at = seen("Let me think", at)
	interrupt()
	at = seen("(interrupted)\n> ", at)
	select {
	case <-rp.abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted answer's request was not abandoned")
	}

	fmt.Fprintln(stdin, "second question")
	at = seen("The second answer.\n> ", at)

	// Ctrl-C at the prompt ends the session.
	interrupt()
	select {
	case <-exited:
		if err := waitErr(); err != nil {
			t.Errorf("after Ctrl-C at the prompt: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("Ctrl-C at the prompt did not end the session\n%s", stdout.String())
	}

	bodies := rp.requests()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	// The interrupted question got no answer, so it was forgotten: the
	// second request has one user turn, not two in a row.
	msgs, _ := json.Marshal(bodies[1]["messages"])
	if strings.Contains(string(msgs), "first question") || !strings.Contains(string(msgs), "second question") {
		t.Errorf("second request's messages: %s", msgs)
	}
	if s := stderr.String(); strings.Contains(s, "error") {
		t.Errorf("stderr: %s", s)
	}
}

// TestChatProviderQuirks: what chat shows of a refusal, of a stream event
// that is not JSON, and of a tool call cut off by the output limit (which
// must not run: the file it would write stays absent).
func TestChatProviderQuirks(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := pluginDir(t)
	root := t.TempDir()
	rp, url := newReplay(t,
		func(map[string]any) []string {
			return []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":"I can't "},"finish_reason":null}]}`,
				`{not json`,
				`{"choices":[{"index":0,"delta":{"refusal":"help with that."},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			}
		},
		func(map[string]any) []string {
			return []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_w","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"out.txt\",\"content\":\"par"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
			}
		},
		func(body map[string]any) []string { return textReply("Noted: " + toolResult(body, "call_w")) },
	)

	r := runCLI(t, "", "--plugins", dir, "--root", root, "chat", "--base-url", url, "-m", "Do the bad thing")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if want := "I can't help with that.\n(the model refused)\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "warning: skipped a stream event that is not JSON") {
		t.Errorf("stderr has no warning of the skipped event:\n%s", r.stderr)
	}

	r = runCLI(t, "", "--plugins", dir, "--root", root, "--enable", "write_file", "chat", "--base-url", url, "-m", "Write out.txt")
	if r.code != 0 {
		t.Fatalf("exit status %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	result := toolResult(rp.requests()[2], "call_w")
	if !strings.HasPrefix(result, "Error executing write_file: ") || !strings.Contains(result, "cut off by the output limit") || !strings.HasSuffix(result, "the tool did not run") {
		t.Errorf("the cut-off call's result = %q", result)
	}
	if _, err := os.Stat(filepath.Join(root, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt was written from cut-off arguments (stat: %v)", err)
	}
	if !strings.Contains(r.stdout, "✗ Error executing write_file: ") {
		t.Errorf("stdout does not show the failed call:\n%s", r.stdout)
	}
}

// startChat starts cmd, a built agenthost; exited closes when it has
// exited, and waitErr is then what Wait returned. If it is still running
// when the test ends, it is killed.
func startChat(t *testing.T, cmd *exec.Cmd) (exited <-chan struct{}, waitErr func() error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var err error
	done := make(chan struct{})
	go func() {
		err = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	return done, func() error { <-done; return err }
}

// waitOutput waits until output() holds want after position from, and
// returns the position after it; context is shown with the output if it
// never does.
func waitOutput(t *testing.T, output func() string, want string, from int, context string) int {
	t.Helper()
	end := 0
	poll.Eventually(t, 15*time.Second, fmt.Sprintf("the output shows %q after position %d", want, from), func() error {
		out := output()
		i := strings.Index(out[min(from, len(out)):], want)
		if i < 0 {
			return fmt.Errorf("the output is\n%q\n%s", out, context)
		}
		end = from + i + len(want)
		return nil
	})
	return end
}
