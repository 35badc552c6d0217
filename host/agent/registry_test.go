package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
)

// fakeRegistry is a Registry and nothing more: one tool, "upper", whose
// calls it records, and no way to add, toggle or give context.
type fakeRegistry struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeRegistry) EnabledSchemas() []host.ChatTool {
	var s host.ChatTool
	s.Type = "function"
	s.Function.Name = "upper"
	s.Function.Description = "Upper-cases text."
	s.Function.Parameters = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	return []host.ChatTool{s}
}

func (f *fakeRegistry) Execute(_ context.Context, name string, args json.RawMessage) string {
	f.mu.Lock()
	f.calls = append(f.calls, name+string(args))
	f.mu.Unlock()
	if name != "upper" {
		return "Error: tool not found: " + name
	}
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return "Error executing upper: " + err.Error()
	}
	return strings.ToUpper(in.Text)
}

// TestAgentRunsWithAnyRegistry runs the loop against a registry that is
// not a host.ToolRegistry: the model is offered its schemas, the calls
// reach its Execute, the results (a failure among them) reach the model,
// and what the registry cannot do is refused in words.
func TestAgentRunsWithAnyRegistry(t *testing.T) {
	t.Parallel()
	reg := &fakeRegistry{}
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "upper", `{"text":"shout"}`, "missing", `{}`),
		answer("done"),
	}}
	a, err := agent.New(t.Context(), p, agent.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got, err := a.Chat(t.Context(), "go")
	if err != nil || got != "done" {
		t.Fatalf("Chat = %q, %v", got, err)
	}
	reqs := p.requests()
	if names := toolNames(reqs[0].Tools); !slices.Equal(names, []string{"upper"}) {
		t.Errorf("offered %v, want [upper]", names)
	}
	if want := []string{`upper{"text":"shout"}`, `missing{}`}; !sameElements(reg.calls, want) {
		t.Errorf("registry ran %q, want %q", reg.calls, want)
	}
	var results []llm.Message
	for _, m := range reqs[1].Messages {
		if m.Role == llm.RoleTool {
			results = append(results, m)
		}
	}
	if len(results) != 2 || results[0].Content != "SHOUT" || results[0].IsError ||
		!results[1].IsError || results[1].Content != "Error: tool not found: missing" {
		t.Errorf("tool results = %+v", results)
	}
	if a.Registry() != agent.Registry(reg) {
		t.Error("Registry() is not the registry given")
	}
	if err := a.AddTool(echoTool("echo")); !errors.Is(err, agent.ErrFixedTools) {
		t.Errorf("AddTool = %v, want ErrFixedTools", err)
	}
	if err := a.DisableTool("upper"); !errors.Is(err, agent.ErrFixedTools) {
		t.Errorf("DisableTool = %v, want ErrFixedTools", err)
	}
	a.RemoveTool("upper")
	if len(a.Tools()) != 1 {
		t.Errorf("Tools() = %v after RemoveTool on a fixed registry", a.Tools())
	}
}

func sameElements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
