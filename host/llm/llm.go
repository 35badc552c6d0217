// Package llm is the provider-neutral side of talking to a model: the
// messages of a conversation, the tools offered, the Provider interface,
// and clients for the OpenAI-compatible chat completions API and
// Anthropic's Messages API, written on net/http.
//
// A Provider turns a Request into a Response. Stream does the same while
// reporting text as it arrives; either way the Response holds the whole
// assistant message, tool calls assembled.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Role says who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool messages carry one tool call's result.
	RoleTool Role = "tool"
)

// Message is one message of a conversation. The system prompt is not a
// message: it travels in Request.System.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message (for RoleTool, the result).
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a RoleTool message whose result is a failure.
	IsError bool `json:"is_error,omitempty"`
	// Thinking holds an assistant's reasoning blocks, kept so they can be
	// sent back unchanged (Anthropic requires it with tool use).
	Thinking []Thinking `json:"thinking,omitempty"`
	// Images are pictures sent with a user message's text, or with a
	// tool's result (RoleTool: the images of an MCP server's result).
	// Only those messages may carry them; the clients refuse others.
	// Anthropic's API takes a tool result's images in its tool_result
	// block; the OpenAI-compatible client, whose tool messages are text
	// alone, sends them in a user message after the turn's tool results.
	Images []Image `json:"images,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	// ID is unique among the calls of one answer: the model's own id, or
	// one the client made when the model gave none or repeated one.
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Invalid says why the call cannot run, when it cannot: its arguments
	// are not JSON (Arguments then holds the model's text as a JSON
	// string), or were cut off by the output limit. The agent runs no
	// tool for such a call and answers the model with this reason.
	Invalid string `json:"invalid,omitempty"`
}

// Thinking is one reasoning block of an assistant message.
type Thinking struct {
	// Text is the reasoning; empty for a redacted block.
	Text string `json:"text,omitempty"`
	// Signature authenticates Text to the provider.
	Signature string `json:"signature,omitempty"`
	// Redacted is the opaque data of a redacted block.
	Redacted string `json:"redacted,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema (an object schema) of the arguments.
	Parameters json.RawMessage
}

// Request is one call to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // 0: the client's default
	// Temperature is the sampling temperature; nil leaves the provider's
	// default.
	Temperature *float64
	// Stop are sequences that end the answer where they appear.
	Stop []string
	// ToolChoice says whether the model may, must or must not call a
	// tool. The zero value leaves the provider's default.
	ToolChoice ToolChoice
	// ThinkingBudget, when above 0, turns on Anthropic's extended
	// thinking with that many tokens to think in. The API wants at least
	// 1024, below the max_tokens of the request, and no temperature but
	// 1; the client returns an error rather than send a request it would
	// refuse. The OpenAI-compatible client ignores it.
	ThinkingBudget int
}

// ToolChoiceMode is a way of choosing tools; see ToolChoice.
type ToolChoiceMode string

// The modes of a ToolChoice.
const (
	// ToolChoiceAuto lets the model decide whether to call tools.
	ToolChoiceAuto ToolChoiceMode = "auto"
	// ToolChoiceNone forbids tool calls, though tools are offered.
	ToolChoiceNone ToolChoiceMode = "none"
	// ToolChoiceRequired makes the model call at least one tool.
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceNamed makes the model call the tool ToolChoice.Name.
	ToolChoiceNamed ToolChoiceMode = "tool"
)

// ToolChoice says whether the model may, must or must not call a tool.
// The zero value leaves the provider's default, which is auto when tools
// are offered.
type ToolChoice struct {
	// Mode is one of the ToolChoice modes; empty with a Name means
	// ToolChoiceNamed.
	Mode ToolChoiceMode
	// Name is the tool the model must call, with ToolChoiceNamed. It
	// must be one of the request's tools.
	Name string
}

// UseTool returns the choice that makes the model call the tool named
// name.
func UseTool(name string) ToolChoice {
	return ToolChoice{Mode: ToolChoiceNamed, Name: name}
}

// resolve checks c against the tools offered and returns its mode, ""
// when nothing need be sent: the zero choice, or auto or none with no
// tools offered (the model can then call none anyway).
func (c ToolChoice) resolve(tools []Tool) (ToolChoiceMode, error) {
	mode := c.Mode
	if mode == "" && c.Name != "" {
		mode = ToolChoiceNamed
	}
	switch mode {
	case "":
		return "", nil
	case ToolChoiceAuto, ToolChoiceNone:
		if c.Name != "" {
			return "", fmt.Errorf("tool choice %q names tool %q: only mode %q takes a name", mode, c.Name, ToolChoiceNamed)
		}
		if len(tools) == 0 {
			return "", nil
		}
		return mode, nil
	case ToolChoiceRequired:
		if c.Name != "" {
			return "", fmt.Errorf("tool choice %q names tool %q: only mode %q takes a name", mode, c.Name, ToolChoiceNamed)
		}
		if len(tools) == 0 {
			return "", fmt.Errorf("tool choice %q, but the request offers no tools", mode)
		}
		return mode, nil
	case ToolChoiceNamed:
		if c.Name == "" {
			return "", errors.New("tool choice \"tool\" without a tool name")
		}
		for _, t := range tools {
			if t.Name == c.Name {
				return mode, nil
			}
		}
		return "", fmt.Errorf("tool choice names tool %q, which the request does not offer", c.Name)
	}
	return "", fmt.Errorf("unknown tool choice mode %q", mode)
}

// Usage counts the tokens of one call. InputTokens and OutputTokens are
// the totals the provider bills; the other fields are its breakdown of
// them, where it gives one, and are included in the totals.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CacheReadTokens is input read from the provider's prompt cache.
	CacheReadTokens int `json:"cache_read_tokens,omitempty"`
	// CacheWriteTokens is input written to the provider's prompt cache.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens is output spent on reasoning.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Response is a model's answer: one assistant message.
type Response struct {
	Message Message
	// StopReason is the provider's reason, normalised: "end_turn",
	// "tool_use", "max_tokens", "refusal" (Message.Content is then the
	// model's refusal), or the provider's own word.
	StopReason string
	Usage      Usage
	// Warnings name what the client skipped in the provider's answer and
	// went on without, such as a stream event that was not JSON; the
	// caller should show them.
	Warnings []string
}

// Delta is a piece of a streamed answer.
type Delta struct {
	Text     string // visible text
	Thinking string // reasoning text, when the provider streams it
}

// Provider is a model API.
type Provider interface {
	// Name is the provider's name in messages: "openai", "anthropic"...
	Name() string
	// Chat sends req and returns the answer.
	Chat(ctx context.Context, req *Request) (*Response, error)
	// Stream sends req, calls onDelta as text arrives, and returns the
	// whole answer. An error from onDelta stops the stream and is
	// returned.
	Stream(ctx context.Context, req *Request, onDelta func(Delta) error) (*Response, error)
}

// APIError is an error answer of a model API. Its text names the
// provider, the status and the API's own message; it never holds a key.
type APIError struct {
	Provider string
	// Status is the HTTP status of the answer; for an error sent inside
	// a streamed answer (InStream), the status its type stands for (529
	// for Anthropic's overloaded_error, 500 for a server_error...), or 0.
	Status int
	// InStream marks an error the API sent inside a streamed answer,
	// after answering HTTP 200.
	InStream bool
	// Type is the API's error type or code, when it gives one.
	Type    string
	Message string
	// RetryAfter is what the API asked to wait, if it did.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Provider, e.Status)
	switch {
	case e.InStream:
		s = e.Provider + ": error in the stream"
	case e.Status == 0:
		s = e.Provider + ": error"
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether the request may succeed if sent again.
func (e *APIError) Retryable() bool {
	return e.Status == 408 || e.Status == 409 || e.Status == 429 || e.Status >= 500
}

// InterruptedError is what Stream returns when the answer failed after
// part of it had been delivered through onDelta. Such a failure is never
// retried (the caller has shown the part); Partial is what was delivered
// (its text and thinking; a tool call not yet complete is left out) and
// Err is what ended the stream.
type InterruptedError struct {
	Partial *Response
	Err     error
}

func (e *InterruptedError) Error() string {
	n := 0
	if e.Partial != nil {
		n = len(e.Partial.Message.Content)
	}
	return fmt.Sprintf("%v (the stream broke off after %d bytes of the answer's text)", e.Err, n)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// uniqueCallIDs gives every call of an answer an id that no other call of
// it has: the model's own when it is unique, else a new random one, so
// that each result maps back to its call.
func uniqueCallIDs(calls []ToolCall) {
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		id := calls[i].ID
		if id == "" || seen[id] {
			for {
				id = newCallID()
				if !seen[id] {
					break
				}
			}
			calls[i].ID = id
		}
		seen[id] = true
	}
}

// newCallID is a random tool-call id: "call_" and 24 base-62 digits.
func newCallID() string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 0, 29)
	b = append(b, "call_"...)
	for range 24 {
		b = append(b, digits[rand.N(len(digits))])
	}
	return string(b)
}
