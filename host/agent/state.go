package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// StateVersion is the version of the documents State makes. Restore reads
// documents of this version and before.
const StateVersion = 1

// State is a conversation as a document: what an Agent needs to go on
// with it in another process. It is JSON; fields a later version adds
// are kept through a read and a write.
type State struct {
	// Version is the document's version (StateVersion when made).
	Version int `json:"version"`
	// Model is the model the conversation was held with.
	Model string `json:"model,omitempty"`
	// SystemPrompt and SessionFile are the agent's.
	SystemPrompt string `json:"system_prompt,omitempty"`
	SessionFile  string `json:"session_file,omitempty"`
	// Messages are the conversation. When Pending is set, the last one
	// is the assistant message whose calls wait.
	Messages []llm.Message `json:"messages"`
	// Usage is the sum of the conversation's model calls.
	Usage llm.Usage `json:"usage"`
	// Approvals are what the user allowed for the session (the
	// Approver's AllowSession answers).
	Approvals *Approvals `json:"approvals,omitempty"`
	// Pending is a turn stopped at questions put off (policy.Later).
	Pending *Pending `json:"pending,omitempty"`

	// extra are the fields this version does not know, kept as they came.
	extra map[string]json.RawMessage
}

// Approvals are a session's remembered answers (policy.Session).
type Approvals struct {
	// Asks are the ask rules answered "allow for the session".
	Asks []string `json:"asks,omitempty"`
	// Allows are the rules added for what the mode asked.
	Allows []string `json:"allows,omitempty"`
}

// Pending is a turn that waits for the answers to questions put off: the
// results of its calls that ran, and the calls that wait.
type Pending struct {
	// Results are the turn's results, one per tool call of the last
	// assistant message, in order; those of the waiting calls are empty
	// until Resume.
	Results []llm.Message `json:"results"`
	// Waiting are the calls whose question waits, in order.
	Waiting []PendingCall `json:"waiting"`
}

// PendingCall is a call whose question waits for an answer.
type PendingCall struct {
	// ID is the tool call's ID; answers to Resume are keyed by it.
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Source    string          `json:"source,omitempty"`
	Arguments json.RawMessage `json:"arguments"`
	// Why says what asks: `rule "..."` or "mode ask".
	Why string `json:"why"`
	// SessionRules are what an AllowSession answer adds.
	SessionRules []string `json:"session_rules,omitempty"`
}

// ErrPending: the conversation waits for the answers to questions put
// off; Resume gives them.
var ErrPending = errors.New("tool calls wait for an answer")

// PendingError is the error of a Chat whose turn stopped at questions
// put off (an Approver answering policy.Later): the calls that wait. The
// calls of the turn that were allowed have run, and their results are
// kept; save the agent's State, and Resume with the answers, in this
// process or another.
type PendingError struct {
	Calls []PendingCall
}

func (e *PendingError) Error() string {
	names := make([]string, len(e.Calls))
	for i, c := range e.Calls {
		names[i] = c.Tool
	}
	return fmt.Sprintf("agent: %v: %s", ErrPending, strings.Join(names, ", "))
}

func (e *PendingError) Unwrap() error { return ErrPending }

// stateFields are the fields State knows, by their JSON names.
var stateFields = []string{"version", "model", "system_prompt", "session_file", "messages", "usage", "approvals", "pending"}

// MarshalJSON writes the state with the fields it kept unread. A tool
// call's arguments are written as a JSON string of the model's text, byte
// for byte, so that a resumed conversation sends what the model wrote.
func (s State) MarshalJSON() ([]byte, error) {
	type plain State
	s.Messages = mapArguments(s.Messages, func(raw json.RawMessage) (json.RawMessage, error) {
		return json.Marshal(string(raw))
	})
	data, err := json.Marshal(plain(s))
	if err != nil || len(s.extra) == 0 {
		return data, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	for k, v := range s.extra {
		if _, ok := all[k]; !ok {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// UnmarshalJSON reads a state, keeping the fields it does not know.
func (s *State) UnmarshalJSON(data []byte) error {
	type plain State
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	*s = State(p)
	// Arguments written as a JSON string are the model's text; others
	// (a document written by hand) are taken as they are.
	s.Messages = mapArguments(s.Messages, func(raw json.RawMessage) (json.RawMessage, error) {
		var text string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &text) != nil {
			return raw, nil
		}
		return json.RawMessage(text), nil
	})
	for k, v := range all {
		if !slices.Contains(stateFields, k) {
			if s.extra == nil {
				s.extra = map[string]json.RawMessage{}
			}
			s.extra[k] = v
		}
	}
	return nil
}

// mapArguments returns msgs with each tool call's arguments changed by
// f; msgs itself is left as it is.
func mapArguments(msgs []llm.Message, f func(json.RawMessage) (json.RawMessage, error)) []llm.Message {
	out := slices.Clone(msgs)
	for i, m := range out {
		if len(m.ToolCalls) == 0 {
			continue
		}
		calls := slices.Clone(m.ToolCalls)
		for j := range calls {
			calls[j].Arguments, _ = f(calls[j].Arguments)
		}
		out[i].ToolCalls = calls
	}
	return out
}

// State returns the conversation as a document (see Restore).
func (a *Agent) State() State {
	a.mu.Lock()
	st := State{
		Version:      StateVersion,
		Model:        a.model,
		SystemPrompt: a.system,
		SessionFile:  a.sessionFile,
		Messages:     slices.Clone(a.messages),
		Usage:        a.usage,
		extra:        a.extra,
	}
	if a.pending != nil {
		p := *a.pending
		p.Results, p.Waiting = slices.Clone(p.Results), slices.Clone(p.Waiting)
		st.Pending = &p
	}
	a.mu.Unlock()
	if a.session != nil {
		asks, allows := a.session.Remembered()
		if len(asks)+len(allows) > 0 {
			st.Approvals = &Approvals{Asks: asks, Allows: allows}
		}
	}
	return st
}

// Restore replaces the agent's conversation with st's: the messages, the
// system prompt, the usage so far, the session's approvals and a turn
// that waits for answers. The session file and the model stay the
// agent's own, unless it has none. A document of a later version, or one
// whose messages are not a valid conversation (a tool call without its
// result, a result without its call), is refused and nothing changes.
func (a *Agent) Restore(st State) error {
	switch {
	case st.Version > StateVersion:
		return fmt.Errorf("agent: the conversation was saved by a later version of agenthost (state version %d; this one reads %d and before): upgrade agenthost to resume it", st.Version, StateVersion)
	case st.Version < 1:
		return fmt.Errorf("agent: not a saved conversation: version %d", st.Version)
	}
	if err := checkConversation(st.Messages, st.Pending); err != nil {
		return fmt.Errorf("agent: the saved conversation cannot be resumed: %w", err)
	}
	if st.Approvals != nil {
		if a.session == nil {
			a.session = policy.NewSession(nil)
		}
		if err := a.session.Remember(st.Approvals.Asks, st.Approvals.Allows); err != nil {
			return fmt.Errorf("agent: the saved approvals: %w", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = slices.Clone(st.Messages)
	a.system = st.SystemPrompt
	a.usage = st.Usage
	a.extra = st.extra
	a.pending = st.Pending
	if a.sessionFile == "" {
		a.sessionFile = st.SessionFile
	}
	if a.model == "" {
		a.model = st.Model
	}
	return nil
}

// checkConversation reports a conversation no provider would take: a
// tool call whose result does not follow it, or a result of no call.
// With p, the last message's calls wait for results.
func checkConversation(msgs []llm.Message, p *Pending) error {
	for i, m := range msgs {
		if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant && m.Role != llm.RoleTool {
			return fmt.Errorf("message %d has the role %q", i+1, m.Role)
		}
	}
	if p == nil {
		return checkToolResults(msgs)
	}
	last := len(msgs) - 1
	if last < 0 || msgs[last].Role != llm.RoleAssistant || len(msgs[last].ToolCalls) != len(p.Results) {
		return errors.New("the waiting turn does not match the last message")
	}
	if err := checkToolResults(msgs[:last]); err != nil {
		return err
	}
	for _, w := range p.Waiting {
		if !slices.ContainsFunc(msgs[last].ToolCalls, func(c llm.ToolCall) bool { return c.ID == w.ID }) {
			return fmt.Errorf("the waiting call %q is not one of the last message's", w.ID)
		}
	}
	return nil
}

// Pending returns the turn that waits for answers, or nil.
func (a *Agent) Pending() *Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		return nil
	}
	p := *a.pending
	p.Results, p.Waiting = slices.Clone(p.Results), slices.Clone(p.Waiting)
	return &p
}

// setPending records a turn stopped at questions put off.
func (a *Agent) setPending(calls []llm.ToolCall, results []llm.Message, waiting map[int]policy.Deferred) *Pending {
	p := &Pending{Results: slices.Clone(results)}
	for i, c := range calls {
		d, ok := waiting[i]
		if !ok {
			continue
		}
		p.Results[i] = llm.Message{}
		p.Waiting = append(p.Waiting, PendingCall{ID: c.ID, Tool: c.Name, Source: d.Call.Source, Arguments: c.Arguments, Why: d.Why, SessionRules: d.SessionRules})
	}
	a.mu.Lock()
	a.pending = p
	a.mu.Unlock()
	return p
}

// Resume gives the answers to the questions a turn waits for (by call
// ID; every waiting call needs one) and goes on with the turn as Chat
// would: the calls allowed run now, once (deny rules still deny them),
// the others are answered as denied, every result goes back to the
// model in the calls' order, and the loop goes on to an answer. The
// calls that ran before the turn stopped do not run again. onEvent, if
// not nil, is called as StreamChat calls it, and the model's answers are
// streamed.
func (a *Agent) Resume(ctx context.Context, answers map[string]policy.Answer, onEvent func(Event) error) (string, error) {
	p := a.Pending()
	if p == nil {
		return "", errors.New("agent: no tool call waits for an answer")
	}
	for _, w := range p.Waiting {
		ans, ok := answers[w.ID]
		switch {
		case !ok:
			return "", fmt.Errorf("agent: no answer for the call %s (%s)", w.ID, w.Tool)
		case ans.Verdict == policy.Later:
			return "", fmt.Errorf("agent: the call %s (%s) is put off again: give it an answer", w.ID, w.Tool)
		}
	}
	call, emit := a.provider.Chat, onEvent
	if onEvent != nil {
		call = a.streamer(onEvent)
	} else {
		emit = func(Event) error { return nil }
	}
	ctx = a.callContext(ctx)
	results := p.Results
	a.mu.Lock()
	calls := a.messages[len(a.messages)-1].ToolCalls
	a.mu.Unlock()
	for _, w := range p.Waiting {
		i := slices.IndexFunc(calls, func(c llm.ToolCall) bool { return c.ID == w.ID })
		ans := answers[w.ID]
		tc := calls[i]
		if err := emit(Event{Type: EventToolCall, ToolCall: &tc}); err != nil {
			return "", err
		}
		var out string
		if ans.Verdict == policy.Refuse {
			out = "Error executing " + toolcall.Bound(w.Tool, toolcall.MaxName) + ": denied by the user"
			if r := strings.TrimSpace(ans.Reason); r != "" {
				out += ": " + r
			}
		} else {
			out = a.registry.Execute(policy.WithAnswer(ctx, ans), w.Tool, w.Arguments)
		}
		results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: w.ID, Content: out, IsError: host.IsError(out)}
		if err := emit(Event{Type: EventToolResult, ToolCall: &tc, Result: out, IsError: results[i].IsError}); err != nil {
			return "", err
		}
	}
	a.mu.Lock()
	a.pending = nil
	a.messages = append(a.messages, results...)
	a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	return a.turns(ctx, call, emit, -1)
}

// WriteStateFile writes st to path as JSON, readable by its owner only,
// replacing the file at once: a crash leaves the old file or the new.
func WriteStateFile(path string, st State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o600)
}

// ReadStateFile reads a state WriteStateFile wrote.
func ReadStateFile(path string) (State, error) {
	var st State
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: not a saved conversation: %v", path, err)
	}
	return st, nil
}
