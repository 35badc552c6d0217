package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/internal/mcptest"
	"github.com/agenthost/agenthost/sdk"
)

// scripted is a fake model: each call answers with the next step (the
// last step repeats), and every request is recorded.
type scripted struct {
	steps []func(ctx context.Context, req *llm.Request) (*llm.Response, error)

	mu   sync.Mutex
	reqs []*llm.Request
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	n := len(p.reqs)
	cp := *req
	cp.Messages = slices.Clone(req.Messages)
	cp.Tools = slices.Clone(req.Tools)
	p.reqs = append(p.reqs, &cp)
	p.mu.Unlock()
	return p.steps[min(n, len(p.steps)-1)](ctx, req)
}

// Stream answers like Chat and streams the text word by word.
func (p *scripted) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta) error) (*llm.Response, error) {
	resp, err := p.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, w := range strings.SplitAfter(resp.Message.Content, " ") {
		if w == "" {
			continue
		}
		if err := onDelta(llm.Delta{Text: w}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (p *scripted) requests() []*llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// answer is a step that answers text.
func answer(text string) func(context.Context, *llm.Request) (*llm.Response, error) {
	return func(context.Context, *llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, StopReason: "end_turn", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}, nil
	}
}

// callTools is a step that asks for tool calls, given as name, arguments
// pairs; their IDs are call1, call2...
func callTools(text string, nameArgs ...string) func(context.Context, *llm.Request) (*llm.Response, error) {
	var calls []llm.ToolCall
	for i := 0; i < len(nameArgs); i += 2 {
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("call%d", i/2+1), Name: nameArgs[i], Arguments: json.RawMessage(nameArgs[i+1])})
	}
	return func(context.Context, *llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: calls}, StopReason: "tool_use", Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}}, nil
	}
}

type textIn struct {
	Text string `json:"text"`
}

func echoTool(name string) host.ExecutableTool {
	return sdk.NewTool(sdk.Info{Name: name, Description: "Echo."}, func(ctx context.Context, in textIn) (string, error) { return in.Text, nil })
}

func newAgent(t *testing.T, p llm.Provider, opts agent.Options) *agent.Agent {
	t.Helper()
	if opts.RegistryOptions == nil {
		opts.RegistryOptions = &host.Options{Logger: hclog.NewNullLogger()}
	}
	a, err := agent.New(t.Context(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func toolNames(tools []llm.Tool) []string {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestAgentParallelToolCalls(t *testing.T) {
	t.Parallel()
	fastDone := make(chan struct{})
	// slow finishes only after fast has run: were the calls run one after
	// the other, in the model's order, slow would never see fast finish.
	slow := sdk.NewTool(sdk.Info{Name: "slow", Description: "Wait for fast."}, func(ctx context.Context, in textIn) (string, error) {
		select {
		case <-fastDone:
			return "slow " + in.Text, nil
		case <-time.After(10 * time.Second):
			return "", errors.New("fast never ran alongside")
		}
	})
	fast := sdk.NewTool(sdk.Info{Name: "fast", Description: "Finish at once."}, func(ctx context.Context, in textIn) (string, error) {
		close(fastDone)
		return "fast " + in.Text, nil
	})
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "slow", `{"text":"1"}`, "fast", `{"text":"2"}`),
		answer("both done"),
	}}
	a := newAgent(t, p, agent.Options{Model: "m1", SystemPrompt: "be brief"})
	for _, tl := range []host.ExecutableTool{slow, fast} {
		if err := a.AddTool(tl); err != nil {
			t.Fatal(err)
		}
	}

	got, err := a.Chat(t.Context(), "go")
	if err != nil || got != "both done" {
		t.Fatalf("Chat = %q, %v", got, err)
	}
	reqs := p.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if r := reqs[0]; r.Model != "m1" || r.System != "be brief" || len(r.Messages) != 1 || r.Messages[0].Content != "go" {
		t.Errorf("first request: %+v", r)
	}
	msgs := reqs[1].Messages
	if len(msgs) != 4 {
		t.Fatalf("second request has %d messages, want 4: %+v", len(msgs), msgs)
	}
	want := []llm.Message{
		{Role: llm.RoleTool, ToolCallID: "call1", Content: "slow 1"},
		{Role: llm.RoleTool, ToolCallID: "call2", Content: "fast 2"},
	}
	for i, w := range want {
		if g := msgs[2+i]; g.Role != w.Role || g.ToolCallID != w.ToolCallID || g.Content != w.Content || g.IsError {
			t.Errorf("result %d = %+v, want %+v", i, g, w)
		}
	}
	if all := a.Messages(); len(all) != 5 || all[4].Content != "both done" || all[4].Role != llm.RoleAssistant {
		t.Errorf("conversation: %+v", all)
	}
}

func TestAgentToolFailureIsAResult(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "nope", `{}`, "echo", `{"text":1}`),
		answer("ok"),
	}}
	a := newAgent(t, p, agent.Options{})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	msgs := p.requests()[1].Messages
	if m := msgs[2]; m.Content != "Error: tool not found: nope" || !m.IsError {
		t.Errorf("unknown tool result: %+v", m)
	}
	if m := msgs[3]; !strings.HasPrefix(m.Content, "Error executing echo: ") || !m.IsError {
		t.Errorf("bad arguments result: %+v", m)
	}
}

func TestAgentMaxTurns(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("again", "echo", `{"text":"loop"}`),
	}}
	a := newAgent(t, p, agent.Options{MaxTurns: 3})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	_, err := a.Chat(t.Context(), "start")
	if !errors.Is(err, agent.ErrMaxTurns) || !strings.Contains(err.Error(), "after 3 turns") {
		t.Fatalf("err = %v, want ErrMaxTurns after 3 turns", err)
	}
	if n := len(p.requests()); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
	// user, then (assistant, tool result) three times.
	if msgs := a.Messages(); len(msgs) != 7 || msgs[0].Content != "start" || msgs[6].Content != "loop" {
		t.Errorf("conversation not kept: %+v", msgs)
	}
}

// TestAgentSampling: the options' request settings go with every request
// of a turn, as they were when the agent was made.
func TestAgentSampling(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "echo", `{"text":"x"}`),
		answer("done"),
	}}
	temp := 0.25
	stop := []string{"END"}
	a := newAgent(t, p, agent.Options{MaxTokens: 300, Temperature: &temp, Stop: stop})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	temp, stop[0] = 2, "changed" // the agent keeps its own copies
	if _, err := a.Chat(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, req := range reqs {
		if req.MaxTokens != 300 || req.Temperature == nil || *req.Temperature != 0.25 || !slices.Equal(req.Stop, []string{"END"}) {
			t.Errorf("request %d: max tokens %d, temperature %v, stop %q", i, req.MaxTokens, req.Temperature, req.Stop)
		}
	}

	// Without them, a request leaves the provider's defaults.
	p2 := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("ok")}}
	if _, err := newAgent(t, p2, agent.Options{}).Chat(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if req := p2.requests()[0]; req.MaxTokens != 0 || req.Temperature != nil || req.Stop != nil {
		t.Errorf("defaults: max tokens %d, temperature %v, stop %q", req.MaxTokens, req.Temperature, req.Stop)
	}
}

func TestAgentDefaultMaxTurns(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){callTools("", "echo", `{"text":"x"}`)}}
	a := newAgent(t, p, agent.Options{})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	_, err := a.Chat(t.Context(), "start")
	if err == nil || err.Error() != "agent: no final answer after 20 turns" {
		t.Fatalf("err = %v", err)
	}
}

func TestAgentToolToggles(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("ok")}}
	a := newAgent(t, p, agent.Options{})
	for _, n := range []string{"a", "b", "c"} {
		if err := a.AddTool(echoTool(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.AddTool(echoTool("a")); !errors.Is(err, host.ErrToolExists) {
		t.Errorf("adding a twice: %v", err)
	}
	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"all", func() error { return nil }, []string{"a", "b", "c"}},
		{"disable b", func() error { return a.DisableTool("b") }, []string{"a", "c"}},
		{"remove a", func() error { a.RemoveTool("a"); return nil }, []string{"c"}},
		{"enable b", func() error { return a.EnableTool("b") }, []string{"b", "c"}},
		{"add d", func() error { return a.AddTool(echoTool("d")) }, []string{"b", "c", "d"}},
	}
	for i, s := range steps {
		if err := s.change(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := toolNames(a.Tools()); !slices.Equal(got, s.want) {
			t.Errorf("%s: Tools() = %v, want %v", s.name, got, s.want)
		}
		if _, err := a.Chat(t.Context(), s.name); err != nil {
			t.Fatal(err)
		}
		if got := toolNames(p.requests()[i].Tools); !slices.Equal(got, s.want) {
			t.Errorf("%s: the request carried %v, want %v", s.name, got, s.want)
		}
	}
	if tl := a.Tools()[0]; tl.Description != "Echo." || !strings.Contains(string(tl.Parameters), `"text"`) {
		t.Errorf("tool conversion: %+v", tl)
	}
	if err := a.EnableTool("nope"); !errors.Is(err, host.ErrToolNotFound) {
		t.Errorf("EnableTool(nope) = %v", err)
	}
	if err := a.DisableTool("a"); !errors.Is(err, host.ErrToolNotFound) {
		t.Errorf("DisableTool(removed) = %v", err)
	}
}

// TestAgentLiveContext saves the session through the real session plugin:
// what it writes follows the agent's state as it changes.
func TestAgentLiveContext(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "session")
	file := filepath.Join(t.TempDir(), "session.json")
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "echo", `{"text":"tool said\nthis"}`),
		answer("hi there"),
	}}
	a := newAgent(t, p, agent.Options{PluginsDir: dir, SessionContextFilePath: file})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(a.Tools()); !slices.Equal(got, []string{"save_session_context", "echo"}) {
		t.Fatalf("tools = %v", got)
	}

	type saved struct {
		Reason         string `json:"reason"`
		SystemPrompt   string `json:"system_prompt"`
		SessionContext string `json:"session_context"`
	}
	save := func(reason string) saved {
		t.Helper()
		if out := a.SaveContext(t.Context(), reason); out != "Session context saved to "+file {
			t.Fatalf("SaveContext = %q", out)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var s saved
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	a.SetSystemPrompt("first prompt")
	if _, err := a.Chat(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	want := "user: hello\n" +
		"assistant → echo({\"text\":\"tool said\\nthis\"})\n" +
		"tool echo: tool said\n  this\n" +
		"assistant: hi there\n"
	if s := save("one"); s.Reason != "one" || s.SystemPrompt != "first prompt" || s.SessionContext != want {
		t.Errorf("first save: %+v\nwant session context %q", s, want)
	}

	a.ClearContext()
	a.SetSystemPrompt("second prompt")
	if s := save("two"); s.Reason != "two" || s.SystemPrompt != "second prompt" || s.SessionContext != "" {
		t.Errorf("after ClearContext and SetSystemPrompt: %+v", s)
	}
	if n := len(a.Messages()); n != 0 {
		t.Errorf("%d messages after ClearContext", n)
	}
}

// TestAgentCancel cancels while a real plugin's tool runs, and while the
// model request is in flight.
func TestAgentCancel(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	regOpts := &host.Options{Logger: hclog.NewNullLogger()}
	started := startedMarker(t, regOpts)

	cases := map[string]struct {
		step    func(context.Context, *llm.Request) (*llm.Response, error)
		running func() bool
	}{
		"tool call": {
			step: callTools("", "sleep", fmt.Sprintf(`{"millis":60000,"started":%q}`, started)),
			running: func() bool {
				_, err := os.Stat(started)
				return err == nil
			},
		},
		"model request": {
			step: func(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
				<-ctx.Done()
				return nil, fmt.Errorf("scripted: %w", ctx.Err())
			},
			running: func() bool { return true },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){tc.step}}
			a := newAgent(t, p, agent.Options{PluginsDir: dir, RegistryOptions: regOpts})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := a.Chat(ctx, "wait")
				done <- err
			}()
			eventually(t, "the call runs", tc.running)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Chat = %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Chat did not return after cancellation")
			}
		})
	}
}

func TestAgentStreamChat(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("looking", "echo", `{"text":"seen"}`, "nope", `{}`),
		answer("all is done"),
	}}
	a := newAgent(t, p, agent.Options{})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	var got []string
	var text strings.Builder
	var total llm.Usage
	final, err := a.StreamChat(t.Context(), "q", func(ev agent.Event) error {
		s := ev.Type.String()
		switch ev.Type {
		case agent.EventText:
			text.WriteString(ev.Text)
			s += ":" + ev.Text
		case agent.EventToolCall:
			s += ":" + ev.ToolCall.Name + string(ev.ToolCall.Arguments)
		case agent.EventToolResult:
			s += fmt.Sprintf(":%s=%s,%v", ev.ToolCall.Name, ev.Result, ev.IsError)
		case agent.EventMessage:
			s += ":" + ev.Message.Content
		case agent.EventUsage:
			total = total.Add(ev.Usage)
		}
		got = append(got, s)
		return nil
	})
	if err != nil || final != "all is done" {
		t.Fatalf("StreamChat = %q, %v", final, err)
	}
	// Each result comes as soon as its call ends: the two may come in
	// either order, and the second call's launch may come after the
	// first's result.
	calls, results := []string{}, []string{}
	var rest []string
	for _, e := range got {
		switch {
		case strings.HasPrefix(e, "tool_call:"):
			calls = append(calls, e)
			rest = append(rest, "tool_call")
		case strings.HasPrefix(e, "tool_result:"):
			results = append(results, e)
			rest = append(rest, "tool_result")
		default:
			rest = append(rest, e)
		}
	}
	slices.Sort(results)
	if !slices.Equal(calls, []string{`tool_call:echo{"text":"seen"}`, "tool_call:nope{}"}) ||
		!slices.Equal(results, []string{"tool_result:echo=seen,false", "tool_result:nope=Error: tool not found: nope,true"}) {
		t.Errorf("tool events: %q, %q", calls, results)
	}
	got = slices.DeleteFunc(rest, func(e string) bool { return e == "tool_call" || e == "tool_result" })
	want := []string{
		"text:looking",
		"usage",
		"text:all ", "text:is ", "text:done",
		"usage",
		"message:all is done",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if text.String() != "lookingall is done" || total != (llm.Usage{InputTokens: 15, OutputTokens: 3}) {
		t.Errorf("text %q, usage %+v", text.String(), total)
	}

	// An error from onEvent stops the turn.
	stop := errors.New("stop")
	if _, err := a.StreamChat(t.Context(), "again", func(agent.Event) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("StreamChat with a failing callback = %v", err)
	}
}

func TestAgentGivenRegistry(t *testing.T) {
	t.Parallel()
	reg := host.NewToolRegistry(&host.Options{Logger: hclog.NewNullLogger()})
	a := newAgent(t, &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("x")}}, agent.Options{Registry: reg, SessionContextFilePath: "/tmp/f"})
	if a.Registry() != reg {
		t.Fatal("Registry() is not the given registry")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The agent did not close the registry it was given.
	if err := reg.Register(echoTool("still")); err != nil {
		t.Errorf("Register after the agent closed: %v", err)
	}
	if a.SessionContextFilePath() != "/tmp/f" {
		t.Errorf("SessionContextFilePath = %q", a.SessionContextFilePath())
	}
}

// e2eWire is one provider's wire format, as TestAgentEndToEnd replays it.
type e2eWire struct {
	path, authHeader, auth string
	provider               func(baseURL string) llm.Provider
	stream                 bool
	contentType            string
	// toolCall asks for read_file {"path":"notes.txt"} under the id
	// call_abc; answer says text.
	toolCall string
	answer   func(text string) string
	// result finds call_abc's tool result in a request body.
	result func(body map[string]any) string
	// offered lists the tools a request body carries.
	offered func(body map[string]any) []string
}

func e2eWires() map[string]e2eWire {
	return map[string]e2eWire{
		"openai": {
			path: "/v1/chat/completions", authHeader: "Authorization", auth: "Bearer test-key",
			provider: func(u string) llm.Provider {
				return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: u + "/v1", APIKey: "test-key"})
			},
			contentType: "application/json",
			toolCall:    `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"notes.txt\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":10}}`,
			answer: func(text string) string {
				out, _ := json.Marshal(text)
				return fmt.Sprintf(`{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":80,"completion_tokens":8}}`, out)
			},
			result: func(body map[string]any) string {
				msgs, _ := body["messages"].([]any)
				for _, m := range msgs {
					if mm, _ := m.(map[string]any); mm["role"] == "tool" && mm["tool_call_id"] == "call_abc" {
						s, _ := mm["content"].(string)
						return s
					}
				}
				return ""
			},
			offered: func(body map[string]any) (names []string) {
				tools, _ := body["tools"].([]any)
				for _, tl := range tools {
					fn, _ := tl.(map[string]any)["function"].(map[string]any)
					names = append(names, fmt.Sprint(fn["name"]))
				}
				return names
			},
		},
		// Anthropic's Messages API, streamed: the tool call's input arrives
		// in pieces, the answer word by word.
		"anthropic": {
			path: "/v1/messages", authHeader: "X-Api-Key", auth: "test-key",
			provider: func(u string) llm.Provider {
				return llm.NewAnthropic(llm.AnthropicConfig{BaseURL: u, APIKey: "test-key"})
			},
			stream:      true,
			contentType: "text/event-stream",
			toolCall: anthropicSSE(
				`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":50,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_abc","name":"read_file","input":{}}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"notes.txt\"}"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":10}}`,
				`{"type":"message_stop"}`,
			),
			answer: func(text string) string {
				events := []string{
					`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":80,"output_tokens":1}}}`,
					`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				}
				for _, w := range strings.SplitAfter(text, " ") {
					q, _ := json.Marshal(w)
					events = append(events, fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, q))
				}
				return anthropicSSE(append(events,
					`{"type":"content_block_stop","index":0}`,
					`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":8}}`,
					`{"type":"message_stop"}`)...)
			},
			result: func(body map[string]any) string {
				msgs, _ := body["messages"].([]any)
				for _, m := range msgs {
					content, _ := m.(map[string]any)["content"].([]any)
					for _, c := range content {
						if b, _ := c.(map[string]any); b["type"] == "tool_result" && b["tool_use_id"] == "call_abc" {
							s, _ := b["content"].(string)
							return s
						}
					}
				}
				return ""
			},
			offered: func(body map[string]any) (names []string) {
				tools, _ := body["tools"].([]any)
				for _, tl := range tools {
					names = append(names, fmt.Sprint(tl.(map[string]any)["name"]))
				}
				return names
			},
		},
	}
}

// anthropicSSE frames Messages API stream events.
func anthropicSSE(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var typ struct{ Type string }
		json.Unmarshal([]byte(e), &typ)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ.Type, e)
	}
	return b.String()
}

// TestAgentEndToEnd runs the whole loop over HTTP, in each provider's wire
// format: the replayed model asks for read_file, the real fs plugin reads
// the file, and the final answer quotes what the tool result carried.
func TestAgentEndToEnd(t *testing.T) {
	t.Parallel()
	plugins := pluginDir(t, "fs")
	for name, wire := range e2eWires() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the password is swordfish\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var bodies []map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != wire.path || r.Header.Get(wire.authHeader) != wire.auth {
					http.Error(w, `{"error":{"message":"bad request line"}}`, http.StatusBadRequest)
					return
				}
				var body map[string]any
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				mu.Lock()
				bodies = append(bodies, body)
				n := len(bodies)
				mu.Unlock()
				w.Header().Set("Content-Type", wire.contentType)
				if n == 1 {
					io.WriteString(w, wire.toolCall)
					return
				}
				// Quote the tool result back, as a model would.
				io.WriteString(w, wire.answer("The file says: "+strings.TrimSpace(wire.result(body))))
			}))
			t.Cleanup(srv.Close)

			a := newAgent(t, wire.provider(srv.URL), agent.Options{
				Model:           "model-test",
				PluginsDir:      plugins,
				RegistryOptions: &host.Options{Logger: hclog.NewNullLogger(), Roots: []string{root}},
			})
			var got string
			var err error
			if wire.stream {
				var streamed strings.Builder
				got, err = a.StreamChat(t.Context(), "What is in notes.txt?", func(ev agent.Event) error {
					if ev.Type == agent.EventText {
						streamed.WriteString(ev.Text)
					}
					return nil
				})
				if err == nil && streamed.String() != got {
					t.Errorf("streamed text %q, answer %q", streamed.String(), got)
				}
			} else {
				got, err = a.Chat(t.Context(), "What is in notes.txt?")
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "The file says: the password is swordfish"; got != want {
				t.Errorf("answer = %q, want %q", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 2 {
				t.Fatalf("%d requests, want 2", len(bodies))
			}
			if bodies[0]["model"] != "model-test" {
				t.Errorf("model = %v", bodies[0]["model"])
			}
			if offered := wire.offered(bodies[0]); !slices.Contains(offered, "read_file") || slices.Contains(offered, "remove") {
				t.Errorf("tools offered: %v", offered)
			}
			if got := wire.result(bodies[1]); got != "the password is swordfish\n" {
				t.Errorf("the second request carries tool result %q", got)
			}
		})
	}
}

// A call the client marked Invalid (its arguments cut off by the output
// limit, say) runs no tool: the model reads why, the conversation stays
// well-formed, and the provider's warnings come out as events.
func TestAgentInvalidCallRunsNothing(t *testing.T) {
	t.Parallel()
	cutOff := func(context.Context, *llm.Request) (*llm.Response, error) {
		return &llm.Response{
			Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: "call1", Name: "record", Arguments: json.RawMessage(`{"text":"all"}`)},
				{ID: "call2", Name: "record", Arguments: json.RawMessage(`"{\"text\":\"ha"`),
					Invalid: "the arguments are not valid JSON; they were cut off by the output limit"},
			}},
			StopReason: "max_tokens",
			Warnings:   []string{"skipped a stream event that is not JSON: {oops"},
		}, nil
	}
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){cutOff, answer("sorry")}}
	a := newAgent(t, p, agent.Options{})
	var mu sync.Mutex
	var ran []string
	record := sdk.NewTool(sdk.Info{Name: "record", Description: "Records."}, func(ctx context.Context, in textIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, in.Text)
		return "recorded", nil
	})
	if err := a.AddTool(record); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	var results []string
	final, err := a.StreamChat(t.Context(), "write it", func(ev agent.Event) error {
		switch ev.Type {
		case agent.EventWarning:
			warnings = append(warnings, ev.Text)
		case agent.EventToolResult:
			results = append(results, fmt.Sprintf("%s=%s,%v", ev.ToolCall.ID, ev.Result, ev.IsError))
		}
		return nil
	})
	if err != nil || final != "sorry" {
		t.Fatalf("StreamChat = %q, %v", final, err)
	}
	if !slices.Equal(ran, []string{"all"}) {
		t.Errorf("the tool ran with %q; want only the valid call", ran)
	}
	want := []string{
		"call1=recorded,false",
		"call2=Error executing record: the arguments are not valid JSON; they were cut off by the output limit; the tool did not run,true",
	}
	slices.Sort(results)
	if !slices.Equal(results, want) {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(results, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(warnings, []string{"skipped a stream event that is not JSON: {oops"}) {
		t.Errorf("warnings = %q", warnings)
	}
	// The second request carries both results, so every call has one.
	msgs := p.requests()[1].Messages
	if n := len(msgs); n != 4 || msgs[2].ToolCallID != "call1" || msgs[3].ToolCallID != "call2" || !msgs[3].IsError {
		t.Errorf("second request's messages: %+v", msgs)
	}
}

// A question whose first model call fails is taken back: the next request
// has one user turn, not two in a row.
func TestAgentFailedQuestionTakenBack(t *testing.T) {
	t.Parallel()
	fail := func(context.Context, *llm.Request) (*llm.Response, error) {
		return nil, &llm.APIError{Provider: "scripted", Status: 400, Message: "bad"}
	}
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){fail, answer("fine")}}
	a := newAgent(t, p, agent.Options{})
	if _, err := a.Chat(t.Context(), "first"); err == nil {
		t.Fatal("Chat with a failing model succeeded")
	}
	if msgs := a.Messages(); len(msgs) != 0 {
		t.Errorf("after the failure the conversation holds %+v", msgs)
	}
	if got, err := a.Chat(t.Context(), "second"); err != nil || got != "fine" {
		t.Fatalf("Chat = %q, %v", got, err)
	}
	msgs := p.requests()[1].Messages
	if len(msgs) != 1 || msgs[0].Content != "second" {
		t.Errorf("second request's messages: %+v", msgs)
	}
}

// TestAgentCallsAnMCPServersTool runs the whole loop in each provider's
// wire format: the replayed model asks for read_file, which here is the
// reference filesystem server's, the real server reads the file, and the
// answer quotes what the tool result carried.
func TestAgentCallsAnMCPServersTool(t *testing.T) {
	t.Parallel()
	for name, wire := range e2eWires() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the password is swordfish\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, args := mcptest.Filesystem(t, root)
			var mu sync.Mutex
			var results []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", wire.contentType)
				mu.Lock()
				defer mu.Unlock()
				if results == nil {
					results = []string{}
					io.WriteString(w, wire.toolCall)
					return
				}
				result := wire.result(body)
				results = append(results, result)
				io.WriteString(w, wire.answer("The file says: "+strings.TrimSpace(result)))
			}))
			t.Cleanup(srv.Close)
			a := newAgent(t, wire.provider(srv.URL), agent.Options{
				Model: "model-test",
				RegistryOptions: &host.Options{Logger: hclog.NewNullLogger(), Roots: []string{root}, MCPServers: []host.MCPServer{
					// Relative paths are the server's: it runs in root.
					{Name: "filesystem", Command: cmd, Args: args, Dir: root},
				}},
			})
			var got string
			var err error
			if wire.stream {
				got, err = a.StreamChat(t.Context(), "What is in notes.txt?", func(agent.Event) error { return nil })
			} else {
				got, err = a.Chat(t.Context(), "What is in notes.txt?")
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "The file says: the password is swordfish"; got != want {
				t.Errorf("answer = %q, want %q (tool results %q)", got, want, results)
			}
		})
	}
}
