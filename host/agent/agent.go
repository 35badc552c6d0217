// Package agent runs the conversation between a model and the tools of a
// registry: it sends the user's message with the enabled tools' schemas,
// runs every tool call the model asks for, and repeats until the model
// answers without calling a tool (the seeds' chat and streamChat loop).
//
// An [Agent] needs of its registry only what [Registry] says: the schemas
// to offer and a way to run a call. A [host.ToolRegistry] is one; so is
// any type that routes calls elsewhere.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// DefaultMaxTurns bounds the model calls of one Chat when
// Options.MaxTurns is zero.
const DefaultMaxTurns = 20

// ErrMaxTurns: the model kept asking for tools and gave no final answer
// within the agent's MaxTurns model calls. The conversation so far is kept.
var ErrMaxTurns = errors.New("no final answer")

// Registry is what an [Agent] needs of its tools: the schemas of the tools
// to offer the model, and a way to run the call the model makes. A
// failure is a result text (see [host.IsError]), not an error: the model
// reads it. [*host.ToolRegistry] implements Registry, and also the
// optional [SessionFileAllower] and [ToolManager].
//
// The agent gives its state (system prompt, session context, session
// file) with each call, through the context (host.WithToolContext), so
// any number of agents can share one registry and its plugin processes.
type Registry interface {
	EnabledSchemas() []host.ChatTool
	Execute(ctx context.Context, name string, args json.RawMessage) string
}

// SessionFileAllower is a [Registry] whose sandboxed tools may write the
// session file only once told of it: the agent tells it its own
// (host.ToolRegistry.AllowSessionFile).
type SessionFileAllower interface {
	AllowSessionFile(path string)
}

// ToolManager is a [Registry] to which the agent's AddTool, RemoveTool,
// EnableTool and DisableTool pass on.
type ToolManager interface {
	Register(host.ExecutableTool) error
	Unregister(name string)
	Enable(name string) error
	Disable(name string) error
}

// Options configure an [Agent]. The zero value works: no system prompt,
// no plugins, 20 turns.
type Options struct {
	// Model is the model name sent with every request.
	Model string

	// SystemPrompt is the initial system prompt; see SetSystemPrompt.
	SystemPrompt string

	// PluginsDir is where the agent finds its tools' plugin binaries when
	// it builds its own registry (Registry nil). Empty means no plugins:
	// an empty registry, to which tools can be added.
	PluginsDir string

	// SessionContextFilePath is where save_session_context writes the
	// session; tools read it through the ToolContext.
	SessionContextFilePath string

	// MaxTurns bounds the model calls of one Chat or StreamChat. Zero
	// means DefaultMaxTurns.
	MaxTurns int

	// MaxTokens bounds each answer's length, in tokens; zero means the
	// provider client's default.
	MaxTokens int

	// Temperature is the sampling temperature of every request; nil
	// leaves the provider's default.
	Temperature *float64

	// Stop are sequences that end an answer where they appear.
	Stop []string

	// ToolChoice says whether the model must, may or must not call a
	// tool, or which (llm.ToolChoice); the zero value leaves it to the
	// model.
	ToolChoice llm.ToolChoice

	// ThinkingBudget turns on Anthropic's extended thinking with this
	// many tokens; zero leaves it off.
	ThinkingBudget int

	// Registry is the registry the agent runs tools with; other agents
	// may share it. The agent does not close it. Nil: the agent builds
	// the default registry from PluginsDir (host.NewDefaultToolRegistry)
	// and closes it in Close.
	Registry Registry

	// RegistryOptions are the options of the registry the agent builds;
	// unused when Registry is set. May be nil.
	RegistryOptions *host.Options

	// Approver answers, for this agent's conversation, the questions of
	// the registry's policy guard (a policy.Guard among the registry's
	// interceptors): may this call run? It is asked before a call runs,
	// never after, one call at a time in the order the model asked for
	// them; the calls it allows run in parallel. Its "allow for the
	// session" answers hold for this agent only. When the agent builds
	// its registry, Guard (or, with Guard nil, a guard of mode ask and no
	// rules) is installed in it.
	Approver policy.Approver

	// ContextWindow is the model's context window, in tokens; zero means
	// the window known for Model (see ContextWindowOf), else 128,000.
	ContextWindow int

	// CompactAt is the share of the context window a request may fill
	// before the conversation is compacted; zero means 0.8.
	CompactAt float64

	// Compactor makes a conversation that would not fit smaller; nil means
	// the default (see Compactor).
	Compactor Compactor

	// Guard is the policy installed in the registry the agent builds,
	// after RegistryOptions.Interceptors; unused when Registry is set
	// (install it there).
	Guard *policy.Guard

	// NoToolImages keeps the images of tools' results (an MCP server's
	// screenshot, say) out of the requests: the model reads their text
	// alone ("[image: 4033 bytes, image/png]"). Set it for a model that
	// takes no images. Without it, a result's images of a type the APIs
	// take, each of at most llm.MaxImageSize bytes, at most 8, go with
	// the result (a registry that is a ContentRegistry).
	NoToolImages bool

	// Sampling has the agent's model answer the sampling requests
	// (sampling/createMessage) that MCP servers send during the agent's
	// calls of their tools, the tokens counting in the agent's usage.
	// Without it, they are told sampling is not supported.
	Sampling bool
}

// Agent holds a conversation with a model and runs the tools the model
// asks for through a [Registry].
//
// An Agent is the ToolContext of the calls it makes: tools that ask for
// the host state read the agent's current system prompt, session
// context and session file, so after ClearContext or SetSystemPrompt the
// next tool call sees the change, and agents that share a registry never
// see each other's state.
//
// The methods are safe for concurrent use, but one conversation has one
// turn at a time: Chat and StreamChat must not run concurrently with each
// other on the same Agent.
type Agent struct {
	provider llm.Provider
	model    string
	maxTurns int
	// The settings every request carries (Options).
	maxTokens   int
	temperature *float64
	toolChoice  llm.ToolChoice
	thinking    int
	stop        []string
	registry    Registry
	owned       *host.ToolRegistry // the registry New built, which Close closes
	// session carries the Approver to the registry's guard.
	session *policy.Session
	// noToolImages and sampling are Options.NoToolImages and
	// Options.Sampling.
	noToolImages, sampling bool

	mu          sync.Mutex
	system      string
	sessionFile string
	messages    []llm.Message
	// usage is the sum of the session's model calls.
	usage llm.Usage
	// window is what keeps the conversation inside the context window.
	window *window
	// pending is a turn that waits for answers put off; extra are the
	// fields of a restored State this version does not know.
	pending *Pending
	extra   map[string]json.RawMessage
}

var _ host.ToolContext = (*Agent)(nil)

// New returns an agent that talks to provider. Unless opts.Registry
// is set it builds the default registry from opts.PluginsDir, starting
// the plugins there, and from opts.RegistryOptions.MCPServers; the error
// is for a plugins directory that cannot be read. Close the agent to stop
// them.
func New(ctx context.Context, provider llm.Provider, opts Options) (*Agent, error) {
	if provider == nil {
		return nil, errors.New("agent: no provider")
	}
	a := &Agent{
		provider:    provider,
		model:       opts.Model,
		maxTurns:    opts.MaxTurns,
		maxTokens:   opts.MaxTokens,
		stop:        slices.Clone(opts.Stop),
		toolChoice:  opts.ToolChoice,
		thinking:    opts.ThinkingBudget,
		registry:    opts.Registry,
		system:      opts.SystemPrompt,
		sessionFile: opts.SessionContextFilePath,
	}
	a.noToolImages, a.sampling = opts.NoToolImages, opts.Sampling
	if a.maxTurns <= 0 {
		a.maxTurns = DefaultMaxTurns
	}
	if opts.Temperature != nil {
		t := *opts.Temperature
		a.temperature = &t
	}
	if opts.Approver != nil {
		a.session = policy.NewSession(opts.Approver)
	}
	a.window = newWindow(opts)
	if a.registry == nil {
		guard := opts.Guard
		if guard == nil && opts.Approver != nil {
			guard = policy.NewGuard(nil, policy.Options{Mode: policy.ModeAsk})
		}
		if guard != nil {
			ro := host.Options{}
			if opts.RegistryOptions != nil {
				ro = *opts.RegistryOptions
			}
			ro.Interceptors = append(slices.Clone(ro.Interceptors), guard.Intercept)
			opts.RegistryOptions = &ro
		}
		reg, err := newRegistry(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.registry, a.owned = reg, reg
	}
	if s, ok := a.registry.(SessionFileAllower); ok && a.sessionFile != "" {
		s.AllowSessionFile(a.sessionFile)
	}
	return a, nil
}

// newRegistry builds the registry of an agent given none: the plugins of
// opts.PluginsDir, if any, and the MCP servers of opts.RegistryOptions.
func newRegistry(ctx context.Context, opts Options) (*host.ToolRegistry, error) {
	if opts.PluginsDir != "" {
		return host.NewDefaultToolRegistry(ctx, opts.PluginsDir, opts.RegistryOptions)
	}
	reg := host.NewToolRegistry(opts.RegistryOptions)
	if opts.RegistryOptions != nil {
		reg.LoadMCPServers(ctx, opts.RegistryOptions.MCPServers)
	}
	return reg, nil
}

// Close stops the plugins of the registry the agent built. A registry
// given in Options is left to its owner.
func (a *Agent) Close() error {
	if a.owned != nil {
		return a.owned.Close()
	}
	return nil
}

// Registry returns the agent's tool registry: Options.Registry, or the
// *host.ToolRegistry New built.
func (a *Agent) Registry() Registry { return a.registry }

// ErrFixedTools: the agent's registry is not a [ToolManager], so its tools
// cannot be added, removed, enabled or disabled through the agent.
var ErrFixedTools = errors.New("agent: the registry's tools cannot be changed through the agent")

func (a *Agent) manager() (ToolManager, error) {
	m, ok := a.registry.(ToolManager)
	if !ok {
		return nil, ErrFixedTools
	}
	return m, nil
}

// AddTool registers a tool with the agent's registry.
func (a *Agent) AddTool(tool host.ExecutableTool) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	return m.Register(tool)
}

// RemoveTool unregisters a tool; removing an unknown tool does nothing,
// and so does a registry that is not a [ToolManager].
func (a *Agent) RemoveTool(name string) {
	if m, err := a.manager(); err == nil {
		m.Unregister(name)
	}
}

// EnableTool offers a registered tool to the model again.
func (a *Agent) EnableTool(name string) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	return m.Enable(name)
}

// DisableTool hides a registered tool from the model.
func (a *Agent) DisableTool(name string) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	return m.Disable(name)
}

// Tools returns the enabled tools, in registration order: what the next
// model request carries.
func (a *Agent) Tools() []llm.Tool {
	schemas := a.registry.EnabledSchemas()
	tools := make([]llm.Tool, 0, len(schemas))
	for _, s := range schemas {
		tools = append(tools, llm.Tool{Name: s.Function.Name, Description: s.Function.Description, Parameters: s.Function.Parameters})
	}
	return tools
}

// SystemPrompt returns the current system prompt.
func (a *Agent) SystemPrompt() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.system
}

// SetSystemPrompt replaces the system prompt from the next model call on.
func (a *Agent) SetSystemPrompt(prompt string) {
	a.mu.Lock()
	a.system = prompt
	a.mu.Unlock()
}

// SessionContextFilePath returns the file save_session_context writes.
func (a *Agent) SessionContextFilePath() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessionFile
}

// SessionContext renders the conversation so far as text, one message
// after another:
//
//	user: TEXT
//	assistant: TEXT
//	assistant → NAME(ARGUMENTS)      one line per tool call
//	tool NAME: RESULT                "tool NAME (error): RESULT" for a failure
//
// Lines of multi-line content after the first are indented by two spaces.
// An empty conversation renders as "".
func (a *Agent) SessionContext() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return renderConversation(a.messages)
}

func renderConversation(msgs []llm.Message) string {
	var b strings.Builder
	names := map[string]string{} // tool call ID → tool name
	for _, m := range msgs {
		b.WriteString(renderMessage(m, names))
	}
	return b.String()
}

// ClearContext empties the conversation, and forgets a turn that waits
// for answers. The system prompt stays.
func (a *Agent) ClearContext() {
	a.mu.Lock()
	a.messages = nil
	a.pending = nil
	a.mu.Unlock()
}

// Usage returns the tokens of every model call of the conversation, summed
// (cache reads and writes included).
func (a *Agent) Usage() llm.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage
}

// Messages returns a copy of the conversation so far.
func (a *Agent) Messages() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.messages)
}

// SaveContext runs save_session_context through the registry with the
// reason and returns its result (a failure is text, see
// host.ToolRegistry.Execute).
func (a *Agent) SaveContext(ctx context.Context, reason string) string {
	args, _ := json.Marshal(map[string]string{"reason": reason})
	// The program asks for it, not the model: no one is asked.
	return a.registry.Execute(policy.Typed(a.callContext(ctx)), "save_session_context", args)
}

// callContext is ctx for the agent's tool calls: they read the agent's
// state, and its Approver answers for them.
func (a *Agent) callContext(ctx context.Context) context.Context {
	ctx = host.WithToolContext(ctx, a)
	if a.session != nil {
		ctx = policy.WithSession(ctx, a.session)
	}
	return ctx
}

// EventType says what an [Event] reports.
type EventType int

// The events of StreamChat, in the order they come within one model call:
// thinking and text deltas, then usage, then (when the model asks for
// tools) each tool call as it is launched, in the model's order, and each
// result as soon as its call ends; after the last model call, the final
// message.
const (
	// EventText: Text is a piece of the answer's visible text.
	EventText EventType = iota + 1
	// EventToolCall: ToolCall is about to run (name and arguments).
	EventToolCall
	// EventToolResult: ToolCall has run; Result is what the model reads
	// and IsError says whether it is a failure text.
	EventToolResult
	// EventMessage: Message is the final assistant message.
	EventMessage
	// EventUsage: Usage is the token count of one model call (one event
	// per call, right after it ends; sum them for the total).
	EventUsage
	// EventWarning: Text is something the provider's client skipped in
	// the model's answer and went on without (llm.Response.Warnings), one
	// event each, right after the call's EventUsage.
	EventWarning
	// EventThinking: Text is a piece of the model's reasoning, as the
	// provider streams it (StreamChat only).
	EventThinking
	// EventCompacted: the conversation was made smaller to fit the
	// context window before a request; Text says how.
	EventCompacted
)

func (t EventType) String() string {
	switch t {
	case EventText:
		return "text"
	case EventToolCall:
		return "tool_call"
	case EventToolResult:
		return "tool_result"
	case EventMessage:
		return "message"
	case EventUsage:
		return "usage"
	case EventWarning:
		return "warning"
	case EventThinking:
		return "thinking"
	case EventCompacted:
		return "compacted"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one thing that happened during StreamChat; Type says which
// fields are set.
type Event struct {
	Type     EventType
	Text     string
	ToolCall *llm.ToolCall
	Result   string
	IsError  bool
	Usage    llm.Usage
	Message  *llm.Message
	// Duration is how long a tool call took, from its launch (its
	// question to an Approver included) to its result (EventToolResult).
	Duration time.Duration
	// StopReason is the final answer's stop reason (EventMessage):
	// "end_turn", or "refusal" when Message.Content is the model's
	// refusal, "max_tokens"...
	StopReason string
}

// Chat sends text as the user's message with the enabled tools, runs every
// tool call the model asks for, and repeats until the model answers
// without tool calls; it returns that answer's text.
//
// The tool calls of one turn run in parallel through the registry; their
// results go back to the model in the order the model asked for them. A
// tool failure is a result the model reads, not an error of Chat.
//
// After MaxTurns model calls without a final answer Chat returns an error
// wrapping ErrMaxTurns; the conversation so far is kept. Cancelling ctx
// stops the model request and the running tool calls, and Chat returns an
// error wrapping ctx's error.
//
// When the first model call fails (an API error, a cancellation), the
// question is taken back out of the conversation, so that the next Chat
// does not send two user turns in a row. A failure after tools have run
// keeps everything so far: the calls happened, and the model is told of
// their results on the next Chat.
func (a *Agent) Chat(ctx context.Context, text string) (string, error) {
	return a.loop(ctx, llm.Message{Role: llm.RoleUser, Content: text}, a.provider.Chat, nil)
}

// ChatMessage is Chat with a user message of its own: text with images
// (llm.ImageFile reads one). onEvent, if not nil, is called as StreamChat
// calls it, and the answer is streamed.
func (a *Agent) ChatMessage(ctx context.Context, msg llm.Message, onEvent func(Event) error) (string, error) {
	msg.Role = llm.RoleUser
	if onEvent == nil {
		return a.loop(ctx, msg, a.provider.Chat, nil)
	}
	return a.loop(ctx, msg, a.streamer(onEvent), onEvent)
}

// StreamChat is Chat reporting as it goes: it calls onEvent for each
// [Event], in order, from the calling goroutine's point of view (never
// concurrently). An error from onEvent stops the turn and is returned.
func (a *Agent) StreamChat(ctx context.Context, text string, onEvent func(Event) error) (string, error) {
	if onEvent == nil {
		onEvent = func(Event) error { return nil }
	}
	return a.loop(ctx, llm.Message{Role: llm.RoleUser, Content: text}, a.streamer(onEvent), onEvent)
}

// streamer is the model call of StreamChat: it streams the answer,
// reporting thinking and text deltas to onEvent.
func (a *Agent) streamer(onEvent func(Event) error) func(context.Context, *llm.Request) (*llm.Response, error) {
	return func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return a.provider.Stream(ctx, req, func(d llm.Delta) error {
			if d.Thinking != "" {
				if err := onEvent(Event{Type: EventThinking, Text: d.Thinking}); err != nil {
					return err
				}
			}
			if d.Text == "" {
				return nil
			}
			return onEvent(Event{Type: EventText, Text: d.Text})
		})
	}
}

// loop is the chat ↔ tool loop of Chat and StreamChat; emit is nil for
// Chat.
func (a *Agent) loop(ctx context.Context, question llm.Message, call func(context.Context, *llm.Request) (*llm.Response, error), emit func(Event) error) (string, error) {
	if emit == nil {
		emit = func(Event) error { return nil }
	}
	if p := a.Pending(); p != nil {
		return "", fmt.Errorf("agent: %w: %d tool calls wait for an answer (Resume)", ErrPending, len(p.Waiting))
	}
	ctx = a.callContext(ctx)
	return a.turns(ctx, call, emit, a.append(question))
}

// turns runs model calls and their tools until an answer without tool
// calls. question is the index of the question to take back when the
// first model call fails, or -1.
func (a *Agent) turns(ctx context.Context, call func(context.Context, *llm.Request) (*llm.Response, error), emit func(Event) error, question int) (string, error) {
	for turn := range a.maxTurns {
		req := &llm.Request{
			Model: a.model, System: a.SystemPrompt(), Messages: a.Messages(), Tools: a.Tools(),
			MaxTokens: a.maxTokens, Temperature: a.temperature, Stop: a.stop,
			ToolChoice: a.toolChoice, ThinkingBudget: a.thinking,
		}
		if err := a.fit(ctx, req, emit); err != nil {
			if turn == 0 && question >= 0 {
				a.truncate(question)
			}
			return "", err
		}
		resp, err := call(ctx, req)
		if err != nil {
			if turn == 0 && question >= 0 {
				// The question got no answer at all: take it back, so
				// that the next one does not follow it as a second user
				// turn the model would answer too.
				a.truncate(question)
			}
			if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
				err = fmt.Errorf("%w: %v", ctxErr, err)
			}
			return "", fmt.Errorf("agent: %w", err)
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		a.append(msg)
		a.mu.Lock()
		a.usage = a.usage.Add(resp.Usage)
		a.mu.Unlock()
		a.window.observe(req, resp.Usage)
		// From here on, a turn that stops early answers the tool calls it
		// did not run: every tool call has its result, or the next request
		// is refused.
		stopped := func(err error) (string, error) {
			a.unanswered(msg.ToolCalls)
			return "", err
		}
		if err := emit(Event{Type: EventUsage, Usage: resp.Usage}); err != nil {
			return stopped(err)
		}
		for _, w := range resp.Warnings {
			if err := emit(Event{Type: EventWarning, Text: w}); err != nil {
				return stopped(err)
			}
		}
		if len(msg.ToolCalls) == 0 {
			if err := emit(Event{Type: EventMessage, Message: &msg, StopReason: resp.StopReason}); err != nil {
				return "", err
			}
			return msg.Content, nil
		}
		results, waiting, err := a.runTools(ctx, msg.ToolCalls, emit)
		if len(waiting) > 0 && err == nil && ctx.Err() == nil {
			// Some questions were put off: the turn waits for their
			// answers (Resume), with the results it has.
			p := a.setPending(msg.ToolCalls, results, waiting)
			return "", &PendingError{Calls: p.Waiting}
		}
		// The results are kept even when ctx was cancelled, so that the
		// conversation stays well-formed: every tool call has its result.
		a.append(results...)
		if err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("agent: %w", err)
		}
	}
	return "", fmt.Errorf("agent: %w after %d turns", ErrMaxTurns, a.maxTurns)
}

// unanswered answers the tool calls of a turn stopped before they ran.
func (a *Agent) unanswered(calls []llm.ToolCall) {
	results := make([]llm.Message, len(calls))
	for i, c := range calls {
		results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, IsError: true,
			Content: "Error executing " + toolcall.Bound(c.Name, toolcall.MaxName) + ": the turn was stopped before the tool ran"}
	}
	a.append(results...)
}

// runTools runs the calls in parallel and returns their results in the
// calls' order. A call the client marked Invalid (arguments that are not
// JSON, or cut off by the output limit) runs nothing: its result tells
// the model why.
//
// Each call's EventToolCall is emitted as it is launched, and its
// EventToolResult as soon as it ends, whatever the others do; emit is
// called from this goroutine only. An error from emit cancels the calls
// still running; their results (cancelled) are returned with it, so that
// every call has one.
//
// On a *host.ToolRegistry, each call is let go once the one before it has
// passed the registry's interceptors (host.NotifyStart): a policy asks
// about them one at a time, in the model's order, and those allowed run
// in parallel.
func (a *Agent) runTools(ctx context.Context, calls []llm.ToolCall, emit func(Event) error) (results []llm.Message, waiting map[int]policy.Deferred, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results = make([]llm.Message, len(calls))
	deferrals := make([]policy.Deferrals, len(calls))
	type ended struct {
		i    int
		took time.Duration
	}
	done := make(chan ended, len(calls))
	var emitErr error
	send := func(ev Event) {
		if emitErr == nil {
			if emitErr = emit(ev); emitErr != nil {
				cancel()
			}
		}
	}
	result := func(e ended) {
		r := results[e.i]
		send(Event{Type: EventToolResult, ToolCall: &calls[e.i], Result: r.Content, IsError: r.IsError, Duration: e.took})
	}
	_, ordered := a.registry.(*host.ToolRegistry)
	running := 0
	for i, c := range calls {
		if ctx.Err() != nil && emitErr == nil {
			// The turn was stopped (cancelled): the calls not launched
			// yet are not, and their results say so.
			results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, IsError: true,
				Content: "Error executing " + toolcall.Bound(c.Name, toolcall.MaxName) + ": the turn was stopped before the tool ran"}
			continue
		}
		send(Event{Type: EventToolCall, ToolCall: &calls[i]})
		if c.Invalid != "" || emitErr != nil {
			why := c.Invalid + "; the tool did not run"
			if c.Invalid == "" {
				why = "the turn was stopped before the tool ran"
			}
			results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, IsError: true,
				Content: "Error executing " + toolcall.Bound(c.Name, toolcall.MaxName) + ": " + why}
			result(ended{i: i})
			continue
		}
		callCtx, ready := policy.WithDeferrals(ctx, &deferrals[i]), (<-chan struct{})(nil)
		if ordered {
			callCtx, ready = host.NotifyStart(callCtx)
		}
		running++
		go func() {
			start := time.Now()
			out, images := a.execute(host.WithMCPPeer(callCtx, a.peer()), c.Name, c.Arguments)
			results[i] = llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: out, IsError: host.IsError(out), Images: images}
			done <- ended{i, time.Since(start)}
		}()
		// The next call waits until this one has passed the
		// interceptors; the results that come meanwhile are reported.
		for ready != nil {
			select {
			case <-ready:
				ready = nil
			case e := <-done:
				running--
				result(e)
				if e.i == i {
					ready = nil
				}
			}
		}
	}
	for ; running > 0; running-- {
		result(<-done)
	}
	for i := range deferrals {
		if d := deferrals[i].Calls(); len(d) > 0 {
			if waiting == nil {
				waiting = map[int]policy.Deferred{}
			}
			waiting[i] = d[0]
		}
	}
	return results, waiting, emitErr
}

// append adds msgs to the conversation and returns its length before.
func (a *Agent) append(msgs ...llm.Message) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.messages)
	a.messages = append(a.messages, msgs...)
	return n
}

// truncate takes the conversation back to its first n messages, if
// nothing cleared it meanwhile.
func (a *Agent) truncate(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n <= len(a.messages) {
		a.messages = a.messages[:n]
	}
}
