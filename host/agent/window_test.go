package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/sdk"
)

// windowModel is a fake model that checks every request it gets: each is
// a valid conversation (checkRoles) and, counted as the agent counts,
// within the window; a request without tools is a summarizing one, which
// it answers with a summary. Other requests are answered by answer, or
// else: a user message last asks for two read_file calls, tool results
// last are answered by text. It reports scale × the estimate as the
// input tokens.
type windowModel struct {
	t      *testing.T
	window int
	scale  float64
	answer func(req *llm.Request) *llm.Response

	mu        sync.Mutex
	main      []*llm.Request
	summaries []*llm.Request
	reported  llm.Usage
	calls     int
	fail      func(req *llm.Request) error
}

func (p *windowModel) Name() string { return "window" }

func (p *windowModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	p.t.Helper()
	cp := *req
	cp.Messages = slices.Clone(req.Messages)
	var est int
	if len(req.Tools) > 0 {
		est = agent.EstimateTokens(req)
	} else {
		// A summarizing request, whose text is new: about four bytes a
		// token (counting it would only slow the test).
		est = len(req.System+req.Messages[0].Content) / 4
	}
	scale := p.scale
	if scale == 0 {
		scale = 1
	}
	usage := llm.Usage{InputTokens: int(float64(est) * scale), OutputTokens: 10}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		if err := p.fail(req); err != nil {
			return nil, err
		}
	}
	if usage.InputTokens > p.window {
		p.t.Errorf("request %d: %d tokens reported (%d estimated), over the window of %d", len(p.main)+len(p.summaries), usage.InputTokens, est, p.window)
	}
	p.reported = p.reported.Add(usage)
	if len(req.Tools) == 0 {
		p.summaries = append(p.summaries, &cp)
		if len(req.Messages) != 1 || req.Messages[0].Role != llm.RoleUser || req.MaxTokens <= 0 {
			p.t.Errorf("summarizing request: %+v", req)
		}
		if est+req.MaxTokens > p.window {
			p.t.Errorf("summarizing request: %d tokens and %d to answer, over the window of %d", est, req.MaxTokens, p.window)
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("SUMMARY %d: the user had files read and the assistant answered.", len(p.summaries))}, Usage: usage}, nil
	}
	p.main = append(p.main, &cp)
	if err := checkRoles(req.Messages); err != nil {
		p.t.Errorf("request %d: %v", len(p.main), err)
	}
	if p.answer != nil {
		resp := p.answer(req)
		resp.Usage = usage
		return resp, nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleUser {
		p.calls++
		n := p.calls
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: fmt.Sprintf("c%da", n), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/f%d.go"}`, 2*n))},
			{ID: fmt.Sprintf("c%db", n), Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"src/f%d.go"}`, 2*n+1))},
		}}, StopReason: "tool_use", Usage: usage}, nil
	}
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "Both files read."}, StopReason: "end_turn", Usage: usage}, nil
}

func (p *windowModel) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta) error) (*llm.Response, error) {
	resp, err := p.Chat(ctx, req)
	if err == nil && resp.Message.Content != "" {
		err = onDelta(llm.Delta{Text: resp.Message.Content})
	}
	return resp, err
}

func (p *windowModel) requests() (main, summaries []*llm.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.main), slices.Clone(p.summaries)
}

// checkRoles checks a request's conversation as the providers do, and
// more: it starts with a user message; a user message is followed by an
// assistant one; an assistant message with tool calls by exactly their
// results, then an assistant or user message; one without by a user
// message; and it ends with a user message or tool results.
func checkRoles(msgs []llm.Message) error {
	if len(msgs) == 0 || msgs[0].Role != llm.RoleUser {
		return errors.New("the conversation does not start with a user message")
	}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		next := llm.Role("")
		if i+1 < len(msgs) {
			next = msgs[i+1].Role
		}
		switch m.Role {
		case llm.RoleUser:
			if next != "" && next != llm.RoleAssistant {
				return fmt.Errorf("message %d (user) is followed by %s", i, next)
			}
		case llm.RoleAssistant:
			if len(m.ToolCalls) == 0 {
				if next != llm.RoleUser {
					return fmt.Errorf("message %d (assistant) is followed by %q", i, next)
				}
				continue
			}
			for j, c := range m.ToolCalls {
				k := i + 1 + j
				if k >= len(msgs) || msgs[k].Role != llm.RoleTool || msgs[k].ToolCallID != c.ID {
					return fmt.Errorf("tool call %s of message %d is not answered in order", c.ID, i)
				}
			}
			i += len(m.ToolCalls)
			if i+1 < len(msgs) && msgs[i+1].Role == llm.RoleTool {
				return fmt.Errorf("message %d is an orphan tool result", i+1)
			}
		case llm.RoleTool:
			return fmt.Errorf("message %d is an orphan tool result", i)
		default:
			return fmt.Errorf("message %d has role %q", i, m.Role)
		}
	}
	if last := msgs[len(msgs)-1]; last.Role == llm.RoleAssistant {
		return errors.New("the conversation ends with an assistant message")
	}
	return nil
}

// fileText is the content of a file: one of six texts of about 1,500
// tokens, so that the tokenizer counts each once.
func fileText(path string) string {
	n := 0
	for _, r := range path {
		n += int(r)
	}
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "%d: variant %d, the quick brown fox jumps over the lazy dog near the river bank.\n", i, n%6)
	}
	return b.String()
}

type pathIn struct {
	Path string `json:"path"`
}

func readFileTool() sdk.Tool {
	return sdk.NewTool(sdk.Info{Name: "read_file", Description: "Read a file."}, func(ctx context.Context, in pathIn) (string, error) {
		return fileText(in.Path), nil
	})
}

func windowAgent(t *testing.T, p llm.Provider, opts agent.Options) *agent.Agent {
	t.Helper()
	if opts.SystemPrompt == "" {
		opts.SystemPrompt = "You are a careful assistant."
	}
	a := newAgent(t, p, opts)
	if err := a.AddTool(readFileTool()); err != nil {
		t.Fatal(err)
	}
	return a
}

const summaryHead = "[Summary of the earlier conversation, which was compacted to fit the context window."

// TestWindowLongSession replays a 200-turn session (each turn: a
// question, two read_file calls of ~1,500 tokens each, an answer) in a
// 20,000-token window: every request is valid and under the budget, the
// model is told what was elided and given the summary, each compaction is
// reported, and the summarizing calls count in the usage.
func TestWindowLongSession(t *testing.T) {
	t.Parallel()
	p := &windowModel{t: t, window: 20_000}
	a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 20_000})
	// ContextUsage may be asked at any time.
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				a.ContextUsage()
			}
		}
	}()
	var compacted []string
	for i := range 200 {
		_, err := a.StreamChat(t.Context(), fmt.Sprintf("Turn %d: read the next two files.", i), func(ev agent.Event) error {
			if ev.Type == agent.EventCompacted {
				compacted = append(compacted, ev.Text)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	main, summaries := p.requests()
	if len(main) != 400 {
		t.Fatalf("%d requests, want 400", len(main))
	}
	var elided, summarized bool
	for i, req := range main {
		if n := agent.EstimateTokens(req); n > 16_000 {
			t.Errorf("request %d: %d tokens, over the budget of 16,000", i, n)
		}
		for _, m := range req.Messages {
			elided = elided || strings.HasPrefix(m.Content, `[elided to fit the context window: the result of read_file {"path":"src/f`) &&
				strings.HasSuffix(m.Content, " tokens); call the tool again if you need it]")
			summarized = summarized || strings.HasPrefix(m.Content, summaryHead) && strings.Contains(m.Content, "SUMMARY ")
		}
	}
	if !elided || !summarized || len(summaries) == 0 {
		t.Errorf("elided results seen: %v, summary seen: %v, %d summarizing requests", elided, summarized, len(summaries))
	}
	var sawElide, sawSummary bool
	for _, text := range compacted {
		sawElide = sawElide || strings.Contains(text, "elided")
		sawSummary = sawSummary || strings.Contains(text, "summarized")
	}
	if !sawElide || !sawSummary {
		t.Errorf("EventCompacted texts: %q", compacted)
	}
	if got := a.Usage(); got != p.reported {
		t.Errorf("usage %+v, the provider reported %+v", got, p.reported)
	}
	if err := checkRoles(append(a.Messages(), llm.Message{Role: llm.RoleUser})); err != nil {
		t.Errorf("the conversation: %v", err)
	}
	if used, window := a.ContextUsage(); used > 16_000 || window != 20_000 {
		t.Errorf("ContextUsage = %d, %d", used, window)
	}
	t.Logf("%d requests, %d summarizing, %d compactions; first: %s", len(main), len(summaries), len(compacted), compacted[0])
}

// TestWindowCustomCompactor: the compactor given is used, with the
// budget and window, and the request sent is what it returned.
func TestWindowCustomCompactor(t *testing.T) {
	t.Parallel()
	var got []agent.CompactRequest
	keepLast := agent.CompactorFunc(func(ctx context.Context, req agent.CompactRequest) ([]llm.Message, error) {
		got = append(got, req)
		i := len(req.Messages) - 1
		for req.Messages[i].Role != llm.RoleUser {
			i--
		}
		return req.Messages[i:], nil
	})
	p := &windowModel{t: t, window: 4_000}
	a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 4_000, CompactAt: 0.9, MaxTokens: 100, Compactor: keepLast})
	var events int
	for i := range 3 {
		if _, err := a.StreamChat(t.Context(), fmt.Sprintf("turn %d", i), func(ev agent.Event) error {
			if ev.Type == agent.EventCompacted {
				events++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) == 0 || events != len(got) {
		t.Fatalf("compactor called %d times, %d events", len(got), events)
	}
	r := got[0]
	if r.Budget != 3_500 || r.Window != 4_000 || r.Model != "m" || r.Provider == nil || r.Force ||
		r.Count(r.Messages) <= r.Budget || r.Tokens(r.Messages[0]) <= 0 {
		t.Errorf("compact request: budget %d, window %d, model %q, count %d", r.Budget, r.Window, r.Model, r.Count(r.Messages))
	}
	main, summaries := p.requests()
	if len(summaries) != 0 {
		t.Errorf("%d summarizing requests", len(summaries))
	}
	// The request after the first compaction is the compactor's answer:
	// the question and the calls it led to.
	for _, req := range main {
		if req.Messages[0].Role != llm.RoleUser || !strings.HasPrefix(req.Messages[0].Content, "turn ") {
			t.Errorf("request starts with %+v", req.Messages[0])
		}
	}
	if len(main[len(main)-1].Messages) != 4 {
		t.Errorf("last request: %d messages, want 4", len(main[len(main)-1].Messages))
	}
}

// TestWindowTooLarge: a question that cannot fit, even with the rest
// compacted away, fails with ErrContextWindow before any request, and is
// taken back.
func TestWindowTooLarge(t *testing.T) {
	t.Parallel()
	p := &windowModel{t: t, window: 2_000, answer: func(*llm.Request) *llm.Response {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}
	}}
	a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 2_000})
	if _, err := a.Chat(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	before := a.Messages()
	huge := strings.Repeat("all work and no play makes jack a dull boy ", 300)
	_, err := a.Chat(t.Context(), huge)
	if !errors.Is(err, agent.ErrContextWindow) {
		t.Fatalf("Chat = %v, want ErrContextWindow", err)
	}
	for _, want := range []string{"the conversation needs ", "more than the budget of 1,600 tokens of the 2,000-token window of m, even compacted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if main, summaries := p.requests(); len(main) != 1 || len(summaries) != 0 {
		t.Errorf("%d requests and %d summarizing ones sent, want the first only", len(main), len(summaries))
	}
	if after := a.Messages(); len(after) != len(before) {
		t.Errorf("the conversation has %d messages, want %d", len(after), len(before))
	}
}

// TestWindowHugeToolResult: tool results of the latest turn too large
// for the window are elided, the largest first, rather than the turn
// failing, and the model is told.
func TestWindowHugeToolResult(t *testing.T) {
	t.Parallel()
	p := &windowModel{t: t, window: 2_500}
	a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 2_500})
	var compacted string
	if _, err := a.StreamChat(t.Context(), "read two files", func(ev agent.Event) error {
		if ev.Type == agent.EventCompacted {
			compacted = ev.Text
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	main, _ := p.requests()
	if len(main) != 2 {
		t.Fatalf("%d requests, want 2", len(main))
	}
	msgs := main[1].Messages
	if len(msgs) != 4 || !strings.HasPrefix(msgs[2].Content, "[elided to fit the context window: the result of read_file {\"path\":\"src/f2.go\"} (") ||
		strings.HasPrefix(msgs[3].Content, "[elided") {
		t.Errorf("second request: %+v", msgs)
	}
	if !strings.Contains(compacted, "elided 1 tool result of the latest turns") {
		t.Errorf("EventCompacted: %q", compacted)
	}
}

// TestWindowObserveCorrects: a provider that counts twice what the agent
// estimates makes compaction start about twice as early, and keeps what
// it counts under the window.
func TestWindowObserveCorrects(t *testing.T) {
	t.Parallel()
	firstCompaction := func(scale float64) int {
		p := &windowModel{t: t, window: 20_000, scale: scale, answer: func(*llm.Request) *llm.Response {
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "noted"}}
		}}
		a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 20_000})
		question := strings.Repeat("Remember this line of the long report for later use. ", 110)
		for i := range 30 {
			compacted := false
			if _, err := a.StreamChat(t.Context(), question, func(ev agent.Event) error {
				compacted = compacted || ev.Type == agent.EventCompacted
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if compacted {
				return i
			}
		}
		t.Fatalf("scale %v: no compaction in 30 turns", scale)
		return 0
	}
	plain, doubled := firstCompaction(1), firstCompaction(2)
	t.Logf("first compaction at turn %d counted once, %d counted twice", plain, doubled)
	if doubled >= plain || doubled > plain/2+1 {
		t.Errorf("first compaction at turn %d counted twice, %d counted once", doubled, plain)
	}
}

// TestWindowFailedRequest: a compaction made for a request that fails is
// not kept: the question is taken back and the conversation is as it was.
func TestWindowFailedRequest(t *testing.T) {
	t.Parallel()
	failing := false
	p := &windowModel{t: t, window: 4_000, answer: func(*llm.Request) *llm.Response {
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("A long answer with many words. ", 100)}}
	}}
	p.fail = func(req *llm.Request) error {
		if failing && len(req.Tools) > 0 {
			return errors.New("overloaded")
		}
		return nil
	}
	a := windowAgent(t, p, agent.Options{Model: "m", ContextWindow: 4_000})
	for i := 0; ; i++ {
		if used, _ := a.ContextUsage(); used > 3_190 {
			break
		}
		if _, err := a.Chat(t.Context(), fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := a.Messages()
	failing = true
	var compacted bool
	_, err := a.StreamChat(t.Context(), "one more", func(ev agent.Event) error {
		compacted = compacted || ev.Type == agent.EventCompacted
		return nil
	})
	if err == nil || !compacted {
		t.Fatalf("StreamChat = %v, compacted %v; want a failure after a compaction", err, compacted)
	}
	if after := a.Messages(); len(after) != len(before) || after[0].Content != before[0].Content {
		t.Errorf("after the failure: %d messages, want the %d before", len(after), len(before))
	}
	failing = false
	if _, err := a.Chat(t.Context(), "one more"); err != nil {
		t.Fatal(err)
	}
	if m := a.Messages(); !strings.HasPrefix(m[0].Content, summaryHead) || len(m) >= len(before) {
		t.Errorf("after the retry: %d messages, the first %.80q", len(m), m[0].Content)
	}
}

// TestAgentCompact: Compact summarizes all but the latest turn whatever
// the size, ContextUsage reports the estimate and the model's window.
func TestAgentCompact(t *testing.T) {
	t.Parallel()
	p := &windowModel{t: t, window: 200_000}
	a := windowAgent(t, p, agent.Options{Model: "claude-sonnet-4-5"})
	if err := a.Compact(t.Context()); err != nil {
		t.Fatalf("Compact of nothing: %v", err)
	}
	used0, window := a.ContextUsage()
	if window != 200_000 || used0 <= 0 {
		t.Fatalf("ContextUsage = %d, %d", used0, window)
	}
	for i := range 5 {
		if _, err := a.Chat(t.Context(), fmt.Sprintf("turn %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	used1, _ := a.ContextUsage()
	if used1 < used0+5*2*1_000 {
		t.Errorf("ContextUsage after 5 turns = %d (%d before)", used1, used0)
	}
	if err := a.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	used2, _ := a.ContextUsage()
	msgs := a.Messages()
	if used2 >= used1/2 || len(msgs) != 5 || !strings.HasPrefix(msgs[0].Content, summaryHead) ||
		!strings.HasSuffix(msgs[0].Content, "continues.]\n\nturn 4") {
		t.Errorf("after Compact: %d tokens (%d before), %d messages, first %q", used2, used1, len(msgs), msgs[0].Content)
	}
	// The latest turn's results are kept; nothing else remains to elide.
	for _, m := range msgs {
		if strings.HasPrefix(m.Content, "[elided") {
			t.Errorf("a kept result was elided: %q", m.Content)
		}
	}
	_, summaries := p.requests()
	if len(summaries) != 1 {
		t.Fatalf("%d summarizing requests, want 1", len(summaries))
	}
	prompt := summaries[0].Messages[0].Content
	if !strings.Contains(prompt, "user: turn 0") || !strings.Contains(prompt, "tool read_file: ") || strings.Contains(prompt, "turn 4") {
		t.Errorf("summarizing prompt: %.300q", prompt)
	}
	if _, err := a.Chat(t.Context(), "go on"); err != nil {
		t.Fatal(err)
	}
}

func TestElidedResult(t *testing.T) {
	t.Parallel()
	got := agent.ElidedResult("read_file", json.RawMessage(`{"path": "x"}`), 12345, false)
	want := `[elided to fit the context window: the result of read_file {"path":"x"} (12,345 tokens); call the tool again if you need it]`
	if got != want {
		t.Errorf("ElidedResult = %q, want %q", got, want)
	}
	long := agent.ElidedResult("write", json.RawMessage(`{"text":"`+strings.Repeat("é", 300)+`"}`), 7, true)
	if !strings.Contains(long, "the error result of write {") || !strings.Contains(long, "…") || len(long) > 330 {
		t.Errorf("ElidedResult of long arguments = %q", long)
	}
}

func TestContextWindowOf(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]int{
		"claude-sonnet-4-5-20250929":                   200_000,
		"anthropic/claude-3.5-sonnet":                  200_000,
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0": 200_000,
		"gpt-4o":                            128_000,
		"gpt-4o-mini-2024-07-18":            128_000,
		"gpt-4-turbo":                       128_000,
		"gpt-4":                             8_192,
		"gpt-4.1-mini":                      1_047_576,
		"openai/gpt-4.1":                    1_047_576,
		"o1":                                200_000,
		"o1-mini":                           128_000,
		"o3-mini":                           200_000,
		"o4-mini":                           200_000,
		"gpt-5-mini":                        400_000,
		"llama3.1:8b":                       128_000,
		"meta-llama/Llama-3.3-70B-Instruct": 128_000,
		"llama3:8b":                         8_192,
		"mistral-large":                     agent.DefaultContextWindow,
		"":                                  agent.DefaultContextWindow,
	} {
		if got := agent.ContextWindowOf(model); got != want {
			t.Errorf("ContextWindowOf(%q) = %d, want %d", model, got, want)
		}
	}
}
