package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/sdk"
)

// TestStateResumes: a conversation saved mid-way and restored into a new
// agent goes on as if it had never stopped: the next request carries the
// same conversation as the one an agent that never stopped sends.
func TestStateResumes(t *testing.T) {
	t.Parallel()
	steps := []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "echo", `{"text":"one"}`), answer("first answer"),
		answer("second answer"),
	}
	// The agent that never stops.
	whole := &scripted{steps: steps}
	a := newAgent(t, whole, agent.Options{SystemPrompt: "be brief"})
	if err := a.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(t.Context(), "q1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat(t.Context(), "q2"); err != nil {
		t.Fatal(err)
	}

	// The same, saved after the first question and resumed elsewhere.
	first := &scripted{steps: steps[:2]}
	b := newAgent(t, first, agent.Options{SystemPrompt: "be brief"})
	if err := b.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Chat(t.Context(), "q1"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "s.json")
	if err := agent.WriteStateFile(file, b.State()); err != nil {
		t.Fatal(err)
	}
	st, err := agent.ReadStateFile(file)
	if err != nil {
		t.Fatal(err)
	}
	second := &scripted{steps: steps[2:]}
	c := newAgent(t, second, agent.Options{})
	if err := c.AddTool(echoTool("echo")); err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(st); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Chat(t.Context(), "q2"); err != nil || got != "second answer" {
		t.Fatalf("resumed: %q, %v", got, err)
	}
	want, got := whole.requests()[2], second.requests()[0]
	if !reflect.DeepEqual(want.Messages, got.Messages) || want.System != got.System {
		t.Errorf("the resumed request differs:\n%+v\nwant\n%+v", got, want)
	}
	if u := c.Usage(); u != a.Usage() {
		t.Errorf("usage %+v, want %+v", u, a.Usage())
	}
}

func TestStateDocument(t *testing.T) {
	t.Parallel()
	a := newAgent(t, &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("a")}}, agent.Options{})
	doc := `{"version":1,"system_prompt":"p","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"}],"usage":{"input_tokens":3,"output_tokens":1},"a_later_field":{"x":[1,2]}}`
	var st agent.State
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(st); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"a_later_field":{"x":[1,2]}`) || !strings.Contains(string(out), `"system_prompt":"p"`) {
		t.Errorf("written back: %s", out)
	}

	for _, tc := range []struct{ doc, want string }{
		{`{"version":2,"messages":[]}`, "saved by a later version of agenthost (state version 2; this one reads 1 and before): upgrade agenthost"},
		{`{"messages":[]}`, "not a saved conversation: version 0"},
		{`{"version":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","name":"echo","arguments":{}}]},{"role":"user","content":"q"}]}`, "message 3 follows tool calls that have no result: c1"},
		{`{"version":1,"messages":[{"role":"tool","tool_call_id":"x","content":"r"}]}`, `message 1 is the result of tool call "x", which the assistant message before it did not make`},
	} {
		var st agent.State
		if err := json.Unmarshal([]byte(tc.doc), &st); err != nil {
			t.Fatal(err)
		}
		if err := a.Restore(st); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
	if n := len(a.Messages()); n != 2 {
		t.Errorf("a refused document changed the conversation: %d messages", n)
	}
}

// TestPausedApprovalResumes: an Approver that puts a question off stops
// the turn; the calls it allowed have run; the state, saved and restored
// into another agent, resumes with the answer: the waiting call runs
// once, the others never again, and the model gets every result in
// order.
func TestPausedApprovalResumes(t *testing.T) {
	t.Parallel()
	reg := host.NewToolRegistry(&host.Options{Logger: hclog.NewNullLogger(),
		Interceptors: []host.Interceptor{policy.NewGuard(nil, policy.Options{Mode: policy.ModeAsk}).Intercept}})
	var reads, writes atomic.Int64
	if err := reg.Register(sdk.NewTool(sdk.Info{Name: "reader", Description: "Reads.", Annotations: sdk.Annotations{ReadOnly: true}}, func(ctx context.Context, in textIn) (string, error) {
		reads.Add(1)
		return "read " + in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(sdk.NewTool(sdk.Info{Name: "writer", Description: "Writes."}, func(ctx context.Context, in textIn) (string, error) {
		writes.Add(1)
		return "wrote " + in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	later := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		return policy.Answer{Verdict: policy.Later}, nil
	})
	first := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){
		callTools("", "reader", `{"text":"a"}`, "writer", `{"text":"b"}`, "writer", `{"text":"c"}`),
	}}
	a := newAgent(t, first, agent.Options{Registry: reg, Approver: later})
	_, err := a.Chat(t.Context(), "go")
	var pe *agent.PendingError
	if !errors.As(err, &pe) || len(pe.Calls) != 2 || pe.Calls[0].ID != "call2" || pe.Calls[1].Why != "mode ask" {
		t.Fatalf("Chat = %v", err)
	}
	if reads.Load() != 1 || writes.Load() != 0 {
		t.Fatalf("before the answers: %d reads, %d writes", reads.Load(), writes.Load())
	}
	if _, err := a.Chat(t.Context(), "more"); !errors.Is(err, agent.ErrPending) {
		t.Fatalf("a question while calls wait: %v", err)
	}
	data, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}

	var st agent.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	second := &scripted{steps: []func(context.Context, *llm.Request) (*llm.Response, error){answer("done")}}
	b := newAgent(t, second, agent.Options{Registry: reg, Approver: later})
	if err := b.Restore(st); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resume(t.Context(), map[string]policy.Answer{"call2": {Verdict: policy.AllowOnce}}, nil); err == nil || !strings.Contains(err.Error(), "no answer for the call call3 (writer)") {
		t.Fatalf("Resume without every answer: %v", err)
	}
	got, err := b.Resume(t.Context(), map[string]policy.Answer{
		"call2": {Verdict: policy.AllowOnce},
		"call3": {Verdict: policy.Refuse, Reason: "not c"},
	}, nil)
	if err != nil || got != "done" {
		t.Fatalf("Resume = %q, %v", got, err)
	}
	if reads.Load() != 1 || writes.Load() != 1 {
		t.Errorf("after the answers: %d reads, %d writes; want 1 and 1", reads.Load(), writes.Load())
	}
	results := answered(t, second.requests()[0])
	for id, want := range map[string]string{"call1": "read a", "call2": "wrote b", "call3": "Error executing writer: denied by the user: not c"} {
		if results[id].Content != want {
			t.Errorf("%s: %q, want %q", id, results[id].Content, want)
		}
	}
	if b.Pending() != nil {
		t.Error("still pending after Resume")
	}
}
