package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
)

// benchRegistry offers two tools and runs none.
type benchRegistry struct{}

func (benchRegistry) EnabledSchemas() []host.ChatTool {
	var tools []host.ChatTool
	for _, name := range []string{"read_file", "run_bash"} {
		var tl host.ChatTool
		tl.Type = "function"
		tl.Function.Name = name
		tl.Function.Description = "Does " + name + "."
		tl.Function.Parameters = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
		tools = append(tools, tl)
	}
	return tools
}

func (benchRegistry) Execute(context.Context, string, json.RawMessage) string { return "" }

// benchProvider answers every request with a short summary.
type benchProvider struct{}

func (benchProvider) Name() string { return "bench" }

func (benchProvider) Chat(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "The user had 50 files read."}}, nil
}

func (p benchProvider) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta) error) (*llm.Response, error) {
	return p.Chat(ctx, req)
}

// benchConversation is about 100,000 tokens: 50 turns of a question, a
// read_file call, its ~1,900-token result and an answer.
func benchConversation() []llm.Message {
	var msgs []llm.Message
	for i := range 50 {
		var b strings.Builder
		for j := range 80 {
			fmt.Fprintf(&b, "func f%d_%d(x int) int { return x*%d + %d } // line %d of file %d\n", i, j, j, i, j, i)
		}
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("Question %d: what does file %d do?", i, i)},
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"file%d.go"}`, i))}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: b.String()},
			llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("File %d defines 80 small arithmetic functions.", i)},
		)
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: "And now?"})
}

// BenchmarkFit measures fit on a request of a ~100,000-token
// conversation: counting it and deciding (it fits), one compaction step
// that elides the older tool results, and a forced compaction that also
// summarizes (with a model that answers at once).
func BenchmarkFit(b *testing.B) {
	msgs := benchConversation()
	agent := func(b *testing.B, window int) *Agent {
		a, err := New(b.Context(), benchProvider{}, Options{Model: "m", SystemPrompt: "You are an assistant.", Registry: benchRegistry{}, ContextWindow: window})
		if err != nil {
			b.Fatal(err)
		}
		a.messages = slices.Clone(msgs)
		return a
	}
	request := func(a *Agent) *llm.Request {
		return &llm.Request{Model: a.model, System: a.SystemPrompt(), Messages: a.Messages(), Tools: a.Tools()}
	}
	emit := func(Event) error { return nil }
	// first is how long the first fit of a's conversation takes, in ms:
	// the counts and placeholders are not cached yet.
	first := func(b *testing.B, a *Agent) float64 {
		start := time.Now()
		if err := a.fit(b.Context(), request(a), emit); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	b.Run("count", func(b *testing.B) {
		a := agent(b, 1_000_000)
		tokenCache.mu.Lock()
		tokenCache.cur, tokenCache.prev = map[uint64]int{}, nil
		tokenCache.mu.Unlock()
		encoding()
		cold := first(b, a)
		tokens := EstimateTokens(request(a))
		for b.Loop() {
			if err := a.fit(b.Context(), request(a), emit); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(tokens), "tokens")
		b.ReportMetric(cold, "first-ms")
	})
	b.Run("elide", func(b *testing.B) {
		a := agent(b, 100_000)
		cold := first(b, a)
		for b.Loop() {
			req := request(a)
			if err := a.fit(b.Context(), req, emit); err != nil || len(req.Messages) != len(msgs) {
				b.Fatal(err)
			}
		}
		b.ReportMetric(cold, "first-ms")
	})
	b.Run("summarize", func(b *testing.B) {
		a := agent(b, 1_000_000)
		for b.Loop() {
			req := request(a)
			out, err := a.compact(b.Context(), req, 1_000_000, 800_000, true, emit)
			if err != nil || len(out) != 1 {
				b.Fatal(len(out), err)
			}
		}
	})
}
