package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/sdk"
)

// answered checks that every tool call of the request's messages is
// followed by its result, as every provider requires, and returns the
// results by call ID.
func answered(t *testing.T, req *llm.Request) map[string]llm.Message {
	t.Helper()
	results := map[string]llm.Message{}
	var open []string
	for _, m := range req.Messages {
		switch {
		case m.Role == llm.RoleTool:
			if !slices.Contains(open, m.ToolCallID) {
				t.Fatalf("a result for %s, which no open call has", m.ToolCallID)
			}
			open = slices.DeleteFunc(open, func(id string) bool { return id == m.ToolCallID })
			results[m.ToolCallID] = m
		case len(open) > 0:
			t.Fatalf("a %s message while calls %v have no result", m.Role, open)
		default:
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls %v have no result", open)
	}
	return results
}

func TestAgentApproverDenialKeepsTheConversationValid(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "writer", `{"text":"x"}`, "reader", `{"text":"y"}`),
		answer("ok"),
	}}
	var asked []string
	ap := policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		asked = append(asked, req.Call.Tool+" "+req.Why)
		return policy.Answer{Verdict: policy.Refuse, Reason: "no writes today"}, nil
	})
	a := newAgent(t, p, agent.Options{Approver: ap})
	var wrote atomic.Int64
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "writer", Description: "Writes."}, func(ctx context.Context, in textIn) (string, error) {
		wrote.Add(1)
		return "wrote", nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "reader", Description: "Reads.", Annotations: sdk.Annotations{ReadOnly: true}}, func(ctx context.Context, in textIn) (string, error) {
		return "read " + in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if wrote.Load() != 0 || !slices.Equal(asked, []string{"writer mode ask"}) {
		t.Fatalf("the writer ran %d times; asked %q", wrote.Load(), asked)
	}
	results := answered(t, p.requests()[1])
	if got := results["call1"].Content; got != "Error executing writer: denied by the user: no writes today" || !results["call1"].IsError {
		t.Errorf("the denied call's result: %q", got)
	}
	if got := results["call2"].Content; got != "read y" {
		t.Errorf("the read-only call's result: %q", got)
	}
}

func TestAgentAsksInOrderAndRunsTheAllowedInParallel(t *testing.T) {
	t.Parallel()
	const n = 4
	var args []string
	for i := range n {
		args = append(args, "work", fmt.Sprintf(`{"text":"%d"}`, i))
	}
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){callTools("", args...), answer("done")}}
	var mu sync.Mutex
	var order []string
	ap := policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		var in textIn
		_ = json.Unmarshal(req.Call.Args, &in)
		mu.Lock()
		order = append(order, in.Text)
		mu.Unlock()
		// A slow answer: were the calls not held back, the later ones
		// would be asked meanwhile, out of order.
		time.Sleep(2 * time.Millisecond)
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	a := newAgent(t, p, agent.Options{Approver: ap})
	// Every call waits until all of them run: the calls allowed run in
	// parallel, or none ends.
	var running sync.WaitGroup
	running.Add(n)
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "work", Description: "Works."}, func(ctx context.Context, in textIn) (string, error) {
		running.Done()
		all := make(chan struct{})
		go func() { running.Wait(); close(all) }()
		select {
		case <-all:
			return "did " + in.Text, nil
		case <-ctx.Done():
			return "", errors.New("the other calls never ran alongside")
		}
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "0,1,2,3" {
		t.Errorf("asked in the order %s", got)
	}
	results := answered(t, p.requests()[1])
	for i := range n {
		if got := results[fmt.Sprintf("call%d", i+1)].Content; got != fmt.Sprintf("did %d", i) {
			t.Errorf("call %d: %q", i+1, got)
		}
	}
}

func TestAgentStoppedByOnEventAnswersEveryCall(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "echo", `{"text":"a"}`, "echo", `{"text":"b"}`),
		answer("fine"),
	}}
	a := newAgent(t, p, agent.Options{})
	var ran atomic.Int64
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "echo", Description: "Echo."}, func(ctx context.Context, in textIn) (string, error) {
		ran.Add(1)
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	veto := errors.New("not this one")
	_, err := a.StreamChat(t.Context(), "go", func(ev agent.Event) error {
		if ev.Type == agent.EventToolCall {
			return veto
		}
		return nil
	})
	if !errors.Is(err, veto) || ran.Load() != 0 {
		t.Fatalf("StreamChat = %v; the tool ran %d times", err, ran.Load())
	}
	if got, err := a.Chat(t.Context(), "and now?"); err != nil || got != "fine" {
		t.Fatalf("the next question: %q, %v", got, err)
	}
	results := answered(t, p.requests()[1])
	if got := results["call2"].Content; got != "Error executing echo: the turn was stopped before the tool ran" {
		t.Errorf("a vetoed call's result: %q", got)
	}
}

// TestAgentEventsAsTheyHappen: the result of a fast call comes while a
// slow one of the same turn still runs, with its duration; the results
// go back to the model in the calls' order all the same.
func TestAgentEventsAsTheyHappen(t *testing.T) {
	t.Parallel()
	p := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "slow", `{"text":"s"}`, "fast", `{"text":"f"}`),
		answer("done"),
	}}
	a := newAgent(t, p, agent.Options{})
	release := make(chan struct{})
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "slow", Description: "Slow.", Annotations: sdk.Annotations{ReadOnly: true}}, func(ctx context.Context, in textIn) (string, error) {
		select {
		case <-release:
			return "slow done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})); err != nil {
		t.Fatal(err)
	}
	if err := a.AddTool(sdk.NewTool(sdk.Info{Name: "fast", Description: "Fast."}, func(ctx context.Context, in textIn) (string, error) {
		time.Sleep(5 * time.Millisecond)
		return "fast done", nil
	})); err != nil {
		t.Fatal(err)
	}
	var order []string
	_, err := a.StreamChat(t.Context(), "go", func(ev agent.Event) error {
		switch ev.Type {
		case agent.EventToolCall:
			order = append(order, "call "+ev.ToolCall.Name)
		case agent.EventToolResult:
			order = append(order, "result "+ev.ToolCall.Name)
			if ev.ToolCall.Name == "fast" {
				if ev.Duration < 5*time.Millisecond {
					t.Errorf("fast took %v", ev.Duration)
				}
				// Only now may the slow call end: its result cannot
				// have held this one back.
				close(release)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ", "); got != "call slow, call fast, result fast, result slow" {
		t.Errorf("events: %s", got)
	}
	msgs := p.requests()[1].Messages
	if msgs[2].ToolCallID != "call1" || msgs[2].Content != "slow done" || msgs[3].ToolCallID != "call2" {
		t.Errorf("results sent back: %+v", msgs[2:])
	}
}

// thinker streams a reasoning delta before its answer.
type thinker struct{ scripted }

func (p *thinker) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta) error) (*llm.Response, error) {
	if err := onDelta(llm.Delta{Thinking: "let me see"}); err != nil {
		return nil, err
	}
	return p.scripted.Stream(ctx, req, onDelta)
}

func TestAgentStreamsThinking(t *testing.T) {
	t.Parallel()
	p := &thinker{scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("yes")}}}
	a := newAgent(t, p, agent.Options{})
	var got []string
	if _, err := a.StreamChat(t.Context(), "q", func(ev agent.Event) error {
		if ev.Type == agent.EventThinking || ev.Type == agent.EventText {
			got = append(got, ev.Type.String()+":"+ev.Text)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "thinking:let me see,text:yes" {
		t.Errorf("events %q", got)
	}
	if u := a.Usage(); u.InputTokens != 10 || u.OutputTokens != 2 {
		t.Errorf("usage %+v", u)
	}
}
