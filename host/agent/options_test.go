package agent_test

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
)

// TestAgentRequestOptions: the tool choice and the thinking budget reach
// every request, and a message with an image goes as it was given.
func TestAgentRequestOptions(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("a picture of a dot")}}
	a := newAgent(t, p, agent.Options{ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}, ThinkingBudget: 2048, MaxTokens: 4096})
	img := llm.Image{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}
	var texts []string
	got, err := a.ChatMessage(t.Context(), llm.Message{Content: "what is this?", Images: []llm.Image{img}}, func(ev agent.Event) error {
		if ev.Type == agent.EventText {
			texts = append(texts, ev.Text)
		}
		return nil
	})
	if err != nil || got != "a picture of a dot" || len(texts) == 0 {
		t.Fatalf("ChatMessage = %q, %v; streamed %q", got, err, texts)
	}
	req := p.requests()[0]
	if req.ToolChoice.Mode != llm.ToolChoiceNone || req.ThinkingBudget != 2048 {
		t.Errorf("request options: %+v, %d", req.ToolChoice, req.ThinkingBudget)
	}
	if m := req.Messages[0]; m.Role != llm.RoleUser || len(m.Images) != 1 || m.Images[0].MediaType != "image/png" {
		t.Errorf("the question: %+v", m)
	}
}
