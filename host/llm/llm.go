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
	"fmt"
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
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
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
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// Response is a model's answer: one assistant message.
type Response struct {
	Message Message
	// StopReason is the provider's reason, normalised: "end_turn",
	// "tool_use", "max_tokens", or the provider's own word.
	StopReason string
	Usage      Usage
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
	Status   int
	// Type is the API's error type or code, when it gives one.
	Type    string
	Message string
	// RetryAfter is what the API asked to wait, if it did.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Provider, e.Status)
	if e.Status == 0 {
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
