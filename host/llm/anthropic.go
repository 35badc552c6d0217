package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// AnthropicConfig configures a client of Anthropic's Messages API.
type AnthropicConfig struct {
	// BaseURL is the API's address without the path; requests go to
	// BaseURL+"/v1/messages". Empty means "https://api.anthropic.com".
	BaseURL string
	// APIKey is sent as the x-api-key header. It is required: without it
	// Chat and Stream return ErrNoKey. It never appears in an error.
	APIKey string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// timeout, if any, bounds a whole streamed answer, so prefer the
	// context for deadlines.
	HTTPClient *http.Client
	// Retry bounds the retries after 429, 5xx (529 overloaded included)
	// and transport errors; the zero value means the defaults.
	Retry RetryPolicy
	// MaxTokens is the max_tokens of a Request that sets none; the API
	// requires one. Zero means 4096.
	MaxTokens int
}

// Anthropic is a Provider for Anthropic's Messages API, written on
// net/http.
type Anthropic struct {
	cfg AnthropicConfig
}

var _ Provider = (*Anthropic)(nil)

// anthropicVersion is the anthropic-version header every request carries.
const anthropicVersion = "2023-06-01"

// anthropicMaxLine bounds one line of a streamed answer.
const anthropicMaxLine = 16 << 20

// anthropicMaxBody bounds a whole non-streamed answer.
const anthropicMaxBody = 64 << 20

// NewAnthropic returns a client for the Messages API configured by cfg.
func NewAnthropic(cfg AnthropicConfig) *Anthropic {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.anthropic.com"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 4096
	}
	return &Anthropic{cfg: cfg}
}

// Name returns "anthropic".
func (a *Anthropic) Name() string { return "anthropic" }

// Chat sends req and returns the whole answer.
func (a *Anthropic) Chat(ctx context.Context, req *Request) (*Response, error) {
	resp, err := a.post(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, anthropicMaxBody))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("anthropic: reading the answer: %w", err)
	}
	var msg anthropicResponse
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("anthropic: decoding the answer: %w", err)
	}
	if msg.Type == "error" && msg.Error != nil {
		return nil, a.apiError(0, msg.Error)
	}
	out := &Response{
		Message:    anthropicMessageFrom(msg.Content),
		StopReason: anthropicStopReason(msg.StopReason),
	}
	if msg.Usage != nil {
		out.Usage = msg.Usage.usage()
	}
	return out, nil
}

// Stream sends req with stream: true, calls onDelta for each piece of
// text or thinking as it arrives, and returns the whole answer. An error
// event in the stream is returned as an *APIError.
func (a *Anthropic) Stream(ctx context.Context, req *Request, onDelta func(Delta) error) (*Response, error) {
	if onDelta == nil {
		onDelta = func(Delta) error { return nil }
	}
	resp, err := a.post(ctx, req, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := a.readStream(resp.Body, onDelta)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, err
}

// post sends req to /v1/messages, with the retries of the policy.
func (a *Anthropic) post(ctx context.Context, req *Request, stream bool) (*http.Response, error) {
	if a.cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w", ErrNoKey)
	}
	body, err := json.Marshal(a.wireRequest(req, stream))
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	url := a.cfg.BaseURL + "/v1/messages"
	build := func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("anthropic: %w", err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Api-Key", a.cfg.APIKey)
		r.Header.Set("Anthropic-Version", anthropicVersion)
		if stream {
			r.Header.Set("Accept", "text/event-stream")
		} else {
			r.Header.Set("Accept", "application/json")
		}
		return r, nil
	}
	return send(ctx, a.cfg.HTTPClient, a.cfg.Retry, "anthropic", build, a.parseError)
}

// parseError makes an *APIError of a non-2xx answer.
func (a *Anthropic) parseError(status int, body []byte) *APIError {
	var env struct {
		Error *anthropicErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		return a.apiError(status, env.Error)
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &APIError{Provider: "anthropic", Status: status, Message: a.redact(msg)}
}

func (a *Anthropic) apiError(status int, e *anthropicErrorBody) *APIError {
	return &APIError{Provider: "anthropic", Status: status, Type: a.redact(e.Type), Message: a.redact(e.Message)}
}

// redact removes the key from a text the API sent back, should it ever
// quote it.
func (a *Anthropic) redact(s string) string {
	if a.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, a.cfg.APIKey, "[redacted]")
}

// The request's wire form.

type anthropicRequest struct {
	Model         string             `json:"model"`
	System        string             `json:"system,omitempty"`
	Messages      []anthropicMessage `json:"messages"`
	Tools         []anthropicTool    `json:"tools,omitempty"`
	MaxTokens     int                `json:"max_tokens"`
	Temperature   *float64           `json:"temperature,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicTextBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type anthropicThinkingBlock struct {
	Type      string `json:"type"` // "thinking"
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthropicRedactedBlock struct {
	Type string `json:"type"` // "redacted_thinking"
	Data string `json:"data"`
}

type anthropicToolUseBlock struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicToolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// wireRequest maps a neutral Request to the Messages API's body.
func (a *Anthropic) wireRequest(req *Request, stream bool) *anthropicRequest {
	out := &anthropicRequest{
		Model:         req.Model,
		System:        req.System,
		Messages:      anthropicMessages(req.Messages),
		MaxTokens:     req.MaxTokens,
		Temperature:   req.Temperature,
		StopSequences: req.Stop,
		Stream:        stream,
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = a.cfg.MaxTokens
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// anthropicMessages maps a conversation to content-block messages.
// Consecutive tool results become one user message, as the API requires
// them in the user turn right after the assistant's tool_use turn.
func anthropicMessages(msgs []Message) []anthropicMessage {
	out := make([]anthropicMessage, 0, len(msgs))
	inResults := false // the last message of out is a user turn of tool results
	for _, m := range msgs {
		switch m.Role {
		case RoleTool:
			block := anthropicToolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content, IsError: m.IsError}
			if inResults {
				last := &out[len(out)-1]
				last.Content = append(last.Content, block)
			} else {
				out = append(out, anthropicMessage{Role: "user", Content: []any{block}})
				inResults = true
			}
			continue
		case RoleAssistant:
			var blocks []any
			for _, t := range m.Thinking {
				if t.Redacted != "" {
					blocks = append(blocks, anthropicRedactedBlock{Type: "redacted_thinking", Data: t.Redacted})
				} else {
					blocks = append(blocks, anthropicThinkingBlock{Type: "thinking", Thinking: t.Text, Signature: t.Signature})
				}
			}
			if m.Content != "" || (len(blocks) == 0 && len(m.ToolCalls) == 0) {
				blocks = append(blocks, anthropicTextBlock{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropicToolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: anthropicInput(c.Arguments)})
			}
			out = append(out, anthropicMessage{Role: "assistant", Content: blocks})
		default:
			out = append(out, anthropicMessage{Role: "user", Content: []any{anthropicTextBlock{Type: "text", Text: m.Content}}})
		}
		inResults = false
	}
	return out
}

// anthropicInput returns args compacted if they are a JSON object, and
// {} otherwise: the API takes only an object as a tool_use input.
func anthropicInput(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, trimmed) != nil {
		return json.RawMessage(`{}`)
	}
	return buf.Bytes()
}

// The answer's wire form.

type anthropicResponse struct {
	Type       string              `json:"type"`
	Content    []anthropicBlock    `json:"content"`
	StopReason string              `json:"stop_reason"`
	Usage      *anthropicUsage     `json:"usage"`
	Error      *anthropicErrorBody `json:"error"`
}

// anthropicBlock is a content block of an answer, any type.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// usage counts cached input as input: the neutral count is what the
// model read.
func (u *anthropicUsage) usage() Usage {
	return Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	}
}

type anthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicMessageFrom assembles the assistant message of content blocks:
// text concatenated, tool_use blocks as calls, thinking blocks kept.
func anthropicMessageFrom(blocks []anthropicBlock) Message {
	m := Message{Role: RoleAssistant}
	var text strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			m.Thinking = append(m.Thinking, Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			m.Thinking = append(m.Thinking, Thinking{Redacted: b.Data})
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: anthropicArgs(b.Input)})
		}
	}
	m.Content = text.String()
	return m
}

// anthropicArgs is a tool_use input as call arguments: {} when absent.
func anthropicArgs(input json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage(`{}`)
	}
	return slices.Clone(json.RawMessage(trimmed))
}

// anthropicStopReason normalises a stop_reason. The API's words
// (end_turn, tool_use, max_tokens, stop_sequence, pause_turn, refusal)
// are already the neutral ones, so they are kept.
func anthropicStopReason(s string) string { return s }

// Streaming.

// anthropicEvent is the data of one server-sent event.
type anthropicEvent struct {
	Type         string              `json:"type"`
	Message      *anthropicResponse  `json:"message"`
	Index        int                 `json:"index"`
	ContentBlock *anthropicBlock     `json:"content_block"`
	Delta        *anthropicDelta     `json:"delta"`
	Usage        *anthropicUsage     `json:"usage"`
	Error        *anthropicErrorBody `json:"error"`
}

// anthropicDelta is the delta of content_block_delta and message_delta.
type anthropicDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

// anthropicStreamBlock is a content block being assembled.
type anthropicStreamBlock struct {
	start     anthropicBlock
	text      strings.Builder // text or thinking
	json      strings.Builder // input_json_delta pieces
	signature strings.Builder
}

// readStream reads the server-sent events of a streamed answer.
func (a *Anthropic) readStream(body io.Reader, onDelta func(Delta) error) (*Response, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), anthropicMaxLine)
	var (
		data    strings.Builder
		hasData bool
		st      = anthropicStreamState{blocks: map[int]*anthropicStreamBlock{}}
	)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if !hasData {
				continue
			}
			done, err := st.handle(a, data.String(), onDelta)
			if err != nil {
				return nil, err
			}
			if done {
				return st.response(), nil
			}
			data.Reset()
			hasData = false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		// "event:" names the type the data repeats; comments and other
		// fields carry nothing the client needs.
		if field == "data" {
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("anthropic: reading the stream: %w", err)
	}
	if hasData {
		done, err := st.handle(a, data.String(), onDelta)
		if err != nil {
			return nil, err
		}
		if done {
			return st.response(), nil
		}
	}
	return nil, fmt.Errorf("anthropic: stream ended before message_stop: %w", io.ErrUnexpectedEOF)
}

// anthropicStreamState is what a stream has said so far.
type anthropicStreamState struct {
	blocks     map[int]*anthropicStreamBlock
	stopReason string
	usage      Usage
}

// handle applies one event; done reports message_stop.
func (st *anthropicStreamState) handle(a *Anthropic, data string, onDelta func(Delta) error) (done bool, err error) {
	var ev anthropicEvent
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return false, fmt.Errorf("anthropic: decoding a stream event: %w", err)
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil && ev.Message.Usage != nil {
			st.usage = ev.Message.Usage.usage()
		}
	case "content_block_start":
		b := &anthropicStreamBlock{}
		if ev.ContentBlock != nil {
			b.start = *ev.ContentBlock
		}
		b.text.WriteString(b.start.Text + b.start.Thinking)
		b.signature.WriteString(b.start.Signature)
		st.blocks[ev.Index] = b
		if b.start.Type == "text" && b.start.Text != "" {
			if err := onDelta(Delta{Text: b.start.Text}); err != nil {
				return false, err
			}
		}
	case "content_block_delta":
		if ev.Delta == nil {
			return false, nil
		}
		b := st.blocks[ev.Index]
		if b == nil { // a delta without its start: assume the delta's kind
			b = &anthropicStreamBlock{}
			st.blocks[ev.Index] = b
		}
		switch ev.Delta.Type {
		case "text_delta":
			if b.start.Type == "" {
				b.start.Type = "text"
			}
			b.text.WriteString(ev.Delta.Text)
			if ev.Delta.Text != "" {
				if err := onDelta(Delta{Text: ev.Delta.Text}); err != nil {
					return false, err
				}
			}
		case "input_json_delta":
			if b.start.Type == "" {
				b.start.Type = "tool_use"
			}
			b.json.WriteString(ev.Delta.PartialJSON)
		case "thinking_delta":
			if b.start.Type == "" {
				b.start.Type = "thinking"
			}
			b.text.WriteString(ev.Delta.Thinking)
			if ev.Delta.Thinking != "" {
				if err := onDelta(Delta{Thinking: ev.Delta.Thinking}); err != nil {
					return false, err
				}
			}
		case "signature_delta":
			b.signature.WriteString(ev.Delta.Signature)
		}
	case "content_block_stop", "ping":
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			st.stopReason = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			// message_delta's counts are cumulative.
			u := ev.Usage.usage()
			if u.InputTokens > 0 {
				st.usage.InputTokens = u.InputTokens
			}
			st.usage.OutputTokens = u.OutputTokens
		}
	case "message_stop":
		return true, nil
	case "error":
		e := ev.Error
		if e == nil {
			e = &anthropicErrorBody{Type: "error", Message: "error event without details"}
		}
		return false, a.apiError(0, e)
	}
	return false, nil
}

// response assembles the streamed blocks, in index order.
func (st *anthropicStreamState) response() *Response {
	idx := make([]int, 0, len(st.blocks))
	for i := range st.blocks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	blocks := make([]anthropicBlock, 0, len(idx))
	for _, i := range idx {
		b := st.blocks[i]
		out := b.start
		switch out.Type {
		case "text":
			out.Text = b.text.String()
		case "thinking":
			out.Thinking = b.text.String()
			out.Signature = b.signature.String()
		case "tool_use":
			// The start's input is {}; the deltas, if any, replace it.
			if b.json.Len() > 0 {
				out.Input = json.RawMessage(b.json.String())
			}
		}
		blocks = append(blocks, out)
	}
	return &Response{
		Message:    anthropicMessageFrom(blocks),
		StopReason: anthropicStopReason(st.stopReason),
		Usage:      st.usage,
	}
}
