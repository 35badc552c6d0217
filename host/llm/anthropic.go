package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
	// and transport errors, and after the same errors sent with HTTP 200:
	// as an error body, or in a stream before anything was delivered. The
	// zero value means the defaults.
	Retry RetryPolicy
	// MaxTokens is the max_tokens of a Request that sets none; the API
	// requires one. Zero means 4096.
	MaxTokens int
	// Headers are extra request headers, such as anthropic-beta. The
	// client's own (x-api-key, anthropic-version, Content-Type, Accept)
	// are set after them and win.
	Headers map[string]string
	// NoCache turns prompt caching off. By default it is on: the client
	// marks cache breakpoints ("cache_control": {"type": "ephemeral"})
	// on the last tool, on the system prompt and on the last content
	// block of the last message, three of the four the API allows, so
	// that the next request, which repeats this one as its prefix, reads
	// it from the cache. Usage reports the cache's reads and writes.
	NoCache bool
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

// Chat sends req and returns the whole answer. An error answer sent with
// HTTP 200 (a body of type "error") is an *APIError with the status its
// type stands for, and is retried like an answer with that status.
func (a *Anthropic) Chat(ctx context.Context, req *Request) (*Response, error) {
	out, _, err := a.exchange(ctx, req, false, newRetrier(a.cfg.Retry))
	return out, err
}

// Stream sends req with stream: true, calls onDelta for each piece of
// text or thinking as it arrives, and returns the whole answer.
//
// An error event in the stream is an *APIError with InStream set and the
// status its type stands for (529 for overloaded_error...). Before any
// text or thinking was delivered, a retryable one is retried like its
// HTTP twin, with the same attempts; after, the stream's failure is an
// *InterruptedError holding what was delivered. A server that ignored
// stream and answered with the whole message (JSON) is read as Chat
// reads it, its thinking and then its text passed to onDelta.
func (a *Anthropic) Stream(ctx context.Context, req *Request, onDelta func(Delta) error) (*Response, error) {
	r := newRetrier(a.cfg.Retry)
	return streamWithRetry(ctx, r, onDelta, func(ctx context.Context, deliver func(Delta) error) (*Response, error) {
		out, body, err := a.exchange(ctx, req, true, r)
		if err != nil {
			return nil, err
		}
		if body == nil {
			return out, anthropicDeliverWhole(&out.Message, deliver)
		}
		defer body.Close()
		return a.readStream(body, deliver)
	})
}

// exchange sends req and returns the answer: the whole message decoded
// (always for Chat; for Stream when the server answered JSON), or else
// the body of the stream, for the caller to read and close. An error
// answer sent with HTTP 200 is retried like its HTTP twin, drawing on
// the attempts of r.
func (a *Anthropic) exchange(ctx context.Context, req *Request, stream bool, r *retrier) (*Response, io.ReadCloser, error) {
	for {
		resp, err := a.post(ctx, req, stream, r)
		if err != nil {
			return nil, nil, err
		}
		if stream && !anthropicIsJSON(resp.Header) {
			return nil, resp.Body, nil
		}
		out, err := a.readMessage(ctx, resp)
		if err == nil {
			return out, nil, nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Retryable() {
			return nil, nil, err
		}
		ok, werr := r.again(ctx, apiErr.RetryAfter)
		if werr != nil {
			return nil, nil, werr
		}
		if !ok {
			return nil, nil, err
		}
	}
}

// anthropicIsJSON reports whether an answer's Content-Type is JSON.
func anthropicIsJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// readMessage reads and closes a whole (non-streamed) answer. A body of
// type "error" is returned as an *APIError whose Status is the one its
// type stands for, since the HTTP status was 200.
func (a *Anthropic) readMessage(ctx context.Context, resp *http.Response) (*Response, error) {
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
	if msg.Type == "error" {
		e := msg.Error
		if e == nil {
			e = &anthropicErrorBody{Message: "error answer without details"}
		}
		apiErr := a.apiError(anthropicErrorStatus(e.Type), e)
		apiErr.RetryAfter = retryAfter(resp.Header)
		return nil, apiErr
	}
	stop := anthropicStopReason(msg.StopReason)
	out := &Response{
		Message:    anthropicMessageFrom(msg.Content, stop),
		StopReason: stop,
	}
	if msg.Usage != nil {
		out.Usage = msg.Usage.usage()
	}
	return out, nil
}

// anthropicDeliverWhole passes a message that came whole to deliver as a
// stream would have: its thinking, then its text.
func anthropicDeliverWhole(m *Message, deliver func(Delta) error) error {
	for _, t := range m.Thinking {
		if err := deliver(Delta{Thinking: t.Text}); err != nil {
			return err
		}
	}
	return deliver(Delta{Text: m.Content})
}

// post sends req to /v1/messages, with the retries of the policy; r
// counts the attempts.
func (a *Anthropic) post(ctx context.Context, req *Request, stream bool, r *retrier) (*http.Response, error) {
	if a.cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w", ErrNoKey)
	}
	wire, err := a.wireRequest(req, stream)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encoding the request: %w", err)
	}
	url := a.cfg.BaseURL + "/v1/messages"
	build := func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("anthropic: %w", err)
		}
		for k, v := range a.cfg.Headers {
			r.Header.Set(k, v)
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
	return send(ctx, a.cfg.HTTPClient, r, "anthropic", build, a.parseError)
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

// anthropicErrorStatus is the HTTP status that an error type stands for,
// as the API's documentation pairs them, or 0 for a type it does not
// list. It is the Status of an error sent with HTTP 200: in a stream, or
// as a whole answer.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return 0
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
	Model string `json:"model"`
	// System is a string, or with caching one text block carrying a
	// breakpoint; nil when the request has no system prompt.
	System        any                      `json:"system,omitempty"`
	Messages      []anthropicMessage       `json:"messages"`
	Tools         []anthropicTool          `json:"tools,omitempty"`
	ToolChoice    *anthropicToolChoice     `json:"tool_choice,omitempty"`
	Thinking      *anthropicThinkingConfig `json:"thinking,omitempty"`
	MaxTokens     int                      `json:"max_tokens"`
	Temperature   *float64                 `json:"temperature,omitempty"`
	StopSequences []string                 `json:"stop_sequences,omitempty"`
	Stream        bool                     `json:"stream,omitempty"`
}

// anthropicCacheControl marks a cache breakpoint: the prefix of the
// request up to and including the block that carries it is cached.
type anthropicCacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

// anthropicEphemeral is the breakpoint the client sets.
var anthropicEphemeral = &anthropicCacheControl{Type: "ephemeral"}

type anthropicToolChoice struct {
	Type string `json:"type"` // "auto", "any", "tool" or "none"
	Name string `json:"name,omitempty"`
}

type anthropicThinkingConfig struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type anthropicTool struct {
	Name         string                 `json:"name"`
	Description  string                 `json:"description,omitempty"`
	InputSchema  json.RawMessage        `json:"input_schema"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

type anthropicTextBlock struct {
	Type         string                 `json:"type"` // "text"
	Text         string                 `json:"text"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

type anthropicImageBlock struct {
	Type         string                 `json:"type"` // "image"
	Source       anthropicImageSource   `json:"source"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

type anthropicImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
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
	Type         string                 `json:"type"` // "tool_use"
	ID           string                 `json:"id"`
	Name         string                 `json:"name"`
	Input        json.RawMessage        `json:"input"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

type anthropicToolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	// Content is the result's text, or, with images, its blocks: the
	// text, then the images.
	Content      any                    `json:"content"`
	IsError      bool                   `json:"is_error,omitempty"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

// anthropicMinThinking is the smallest thinking budget the API takes.
const anthropicMinThinking = 1024

// wireRequest maps a neutral Request to the Messages API's body. It
// refuses, with an error saying why, a request the API would refuse for
// its images, tool choice or thinking settings.
func (a *Anthropic) wireRequest(req *Request, stream bool) (*anthropicRequest, error) {
	if err := checkImages(req.Messages, MaxImageSize); err != nil {
		return nil, err
	}
	choice, err := req.ToolChoice.resolve(req.Tools)
	if err != nil {
		return nil, err
	}
	cache := !a.cfg.NoCache
	out := &anthropicRequest{
		Model:         req.Model,
		Messages:      anthropicMessages(req.Messages),
		MaxTokens:     req.MaxTokens,
		Temperature:   req.Temperature,
		StopSequences: req.Stop,
		Stream:        stream,
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = a.cfg.MaxTokens
	}
	if req.ThinkingBudget != 0 {
		if err := a.checkThinking(req, out.MaxTokens, choice); err != nil {
			return nil, err
		}
		out.Thinking = &anthropicThinkingConfig{Type: "enabled", BudgetTokens: req.ThinkingBudget}
	}
	switch choice {
	case "":
	case ToolChoiceRequired:
		out.ToolChoice = &anthropicToolChoice{Type: "any"}
	case ToolChoiceNamed:
		out.ToolChoice = &anthropicToolChoice{Type: "tool", Name: req.ToolChoice.Name}
	default: // auto, none
		out.ToolChoice = &anthropicToolChoice{Type: string(choice)}
	}
	switch {
	case req.System == "":
	case cache:
		out.System = []anthropicTextBlock{{Type: "text", Text: req.System, CacheControl: anthropicEphemeral}}
	default:
		out.System = req.System
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if cache {
		if n := len(out.Tools); n > 0 {
			out.Tools[n-1].CacheControl = anthropicEphemeral
		}
		if n := len(out.Messages); n > 0 {
			anthropicCacheLast(out.Messages[n-1].Content)
		}
	}
	return out, nil
}

// checkThinking checks a request's thinking budget against what the API
// takes: at least 1024 tokens, below max_tokens (unless the interleaved
// thinking beta is on, which lifts that bound), no temperature but 1 and
// no forced tool use.
func (a *Anthropic) checkThinking(req *Request, maxTokens int, choice ToolChoiceMode) error {
	b := req.ThinkingBudget
	switch {
	case b < anthropicMinThinking:
		return fmt.Errorf("thinking budget %d is below the API's minimum of %d tokens", b, anthropicMinThinking)
	case b >= maxTokens && !a.interleavedThinking():
		return fmt.Errorf("thinking budget %d is not below max_tokens %d: raise MaxTokens or lower the budget", b, maxTokens)
	case req.Temperature != nil && *req.Temperature != 1:
		return fmt.Errorf("extended thinking takes no temperature but 1, and the request sets %g", *req.Temperature)
	case choice == ToolChoiceRequired || choice == ToolChoiceNamed:
		return fmt.Errorf("extended thinking takes tool choice auto or none, not %q", choice)
	}
	return nil
}

// interleavedThinking reports whether the configured headers turn on the
// interleaved thinking beta, with which the budget may exceed max_tokens.
func (a *Anthropic) interleavedThinking() bool {
	for k, v := range a.cfg.Headers {
		if strings.EqualFold(k, "anthropic-beta") && strings.Contains(v, "interleaved-thinking-") {
			return true
		}
	}
	return false
}

// anthropicCacheLast marks a cache breakpoint on the last block of a
// message that can carry one: thinking blocks and empty text cannot.
func anthropicCacheLast(blocks []any) {
	for i := len(blocks) - 1; i >= 0; i-- {
		switch b := blocks[i].(type) {
		case anthropicTextBlock:
			if b.Text == "" {
				continue
			}
			b.CacheControl = anthropicEphemeral
			blocks[i] = b
		case anthropicImageBlock:
			b.CacheControl = anthropicEphemeral
			blocks[i] = b
		case anthropicToolUseBlock:
			b.CacheControl = anthropicEphemeral
			blocks[i] = b
		case anthropicToolResultBlock:
			b.CacheControl = anthropicEphemeral
			blocks[i] = b
		default:
			continue
		}
		return
	}
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
			if len(m.Images) > 0 {
				blocks := []any{anthropicTextBlock{Type: "text", Text: m.Content}}
				if m.Content == "" {
					blocks = nil
				}
				for _, im := range m.Images {
					mt, _ := im.mediaType() // checked by wireRequest
					blocks = append(blocks, anthropicImageBlock{Type: "image", Source: anthropicImageSource{Type: "base64", MediaType: mt, Data: im.base64()}})
				}
				block.Content = blocks
			}
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
			// Images first: the API's guide finds Claude does best so.
			var blocks []any
			for _, im := range m.Images {
				mt, _ := im.mediaType() // checked by wireRequest
				blocks = append(blocks, anthropicImageBlock{Type: "image", Source: anthropicImageSource{Type: "base64", MediaType: mt, Data: im.base64()}})
			}
			if m.Content != "" || len(blocks) == 0 {
				blocks = append(blocks, anthropicTextBlock{Type: "text", Text: m.Content})
			}
			out = append(out, anthropicMessage{Role: "user", Content: blocks})
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

// anthropicUsage is a usage object. A nil field is one the object leaves
// out (or sends as null), which is not the same as 0 when a
// message_delta's counts are merged into message_start's.
type anthropicUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// usage counts cached input as input: the neutral count is what the
// model read. The cache's reads and writes are kept as its breakdown.
// An absent count is 0.
func (u *anthropicUsage) usage() Usage {
	n := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return Usage{
		InputTokens:      n(u.InputTokens) + n(u.CacheCreationInputTokens) + n(u.CacheReadInputTokens),
		OutputTokens:     n(u.OutputTokens),
		CacheReadTokens:  n(u.CacheReadInputTokens),
		CacheWriteTokens: n(u.CacheCreationInputTokens),
	}
}

// merge takes in the counts of a message_delta. They are the whole
// request's so far, not increments, so each count the delta carries
// replaces message_start's, even when lower (server-side compaction
// shrinks the input mid-answer); a count it leaves out keeps
// message_start's (many deltas carry only output_tokens).
func (u *anthropicUsage) merge(v *anthropicUsage) {
	for _, f := range []struct{ dst, src **int }{
		{&u.InputTokens, &v.InputTokens},
		{&u.OutputTokens, &v.OutputTokens},
		{&u.CacheCreationInputTokens, &v.CacheCreationInputTokens},
		{&u.CacheReadInputTokens, &v.CacheReadInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

type anthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicMessageFrom assembles the assistant message of content blocks:
// text joined (see anthropicText), tool_use blocks as calls, thinking
// blocks kept. Other blocks (a server tool's call or result) are the
// API's own business and are left out. stopReason is the answer's: when
// it is max_tokens and the last block is a tool_use, that call was cut
// off.
func anthropicMessageFrom(blocks []anthropicBlock, stopReason string) Message {
	m := Message{Role: RoleAssistant}
	var text anthropicText
	for i, b := range blocks {
		text.block(b.Type)
		switch b.Type {
		case "text":
			text.add(b.Text)
		case "thinking":
			m.Thinking = append(m.Thinking, Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			m.Thinking = append(m.Thinking, Thinking{Redacted: b.Data})
		case "tool_use":
			cut := stopReason == "max_tokens" && i == len(blocks)-1
			m.ToolCalls = append(m.ToolCalls, anthropicCall(b, cut))
		}
	}
	m.Content = text.String()
	uniqueCallIDs(m.ToolCalls)
	return m
}

// anthropicText joins the text blocks of an answer. Consecutive text
// blocks are one text split apart (citations do that) and are joined as
// they are; text blocks with another kind of block between them, such as
// a server tool's call and result, are separate paragraphs and are
// joined by a blank line. Thinking blocks separate nothing.
type anthropicText struct {
	b     strings.Builder
	apart bool // a block of another kind came after the last text
}

// block notes the start of a content block of type typ.
func (t *anthropicText) block(typ string) {
	switch typ {
	case "text", "thinking", "redacted_thinking":
	default:
		t.apart = true
	}
}

// add appends a piece of text and returns what it appended: the piece,
// after a blank line when it starts a new paragraph.
func (t *anthropicText) add(s string) string {
	if s == "" {
		return ""
	}
	if t.apart && t.b.Len() > 0 {
		s = "\n\n" + s
	}
	t.apart = false
	t.b.WriteString(s)
	return s
}

func (t *anthropicText) String() string { return t.b.String() }

// anthropicCall makes a call of a tool_use block; an absent input is {}.
// An input that is not JSON (a streamed one cut short) is held as a JSON
// string of its text, and the call is marked Invalid. cut says the output
// limit ended the answer in this block: the call is then Invalid even if
// its input parses, since it may be short.
func anthropicCall(b anthropicBlock, cut bool) ToolCall {
	c := ToolCall{ID: b.ID, Name: b.Name}
	input := bytes.TrimSpace(b.Input)
	switch {
	case len(input) == 0 || string(input) == "null":
		c.Arguments = json.RawMessage(`{}`)
	case json.Valid(input):
		c.Arguments = slices.Clone(json.RawMessage(input))
	default:
		// Marshalling a string cannot fail.
		c.Arguments, _ = json.Marshal(string(input))
		c.Invalid = "the arguments are not valid JSON"
		if cut {
			c.Invalid += "; they were cut off by the output limit"
		}
		return c
	}
	if cut {
		c.Invalid = "the arguments were cut off by the output limit (max_tokens)"
	}
	return c
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

// readStream reads the server-sent events of a streamed answer, passing
// each piece of text or thinking to deliver. On failure it returns what
// it had assembled, with the error.
func (a *Anthropic) readStream(body io.Reader, deliver func(Delta) error) (*Response, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), anthropicMaxLine)
	var (
		data    strings.Builder
		hasData bool
		st      = anthropicStreamState{blocks: map[int]*anthropicStreamBlock{}, deliver: deliver}
	)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if !hasData {
				continue
			}
			done, err := st.handle(a, data.String())
			if err != nil {
				return st.response(), err
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
		return st.response(), fmt.Errorf("anthropic: reading the stream: %w", err)
	}
	if hasData {
		done, err := st.handle(a, data.String())
		if err != nil {
			return st.response(), err
		}
		if done {
			return st.response(), nil
		}
	}
	return st.response(), fmt.Errorf("anthropic: stream ended before message_stop: %w", io.ErrUnexpectedEOF)
}

// anthropicStreamState is what a stream has said so far.
type anthropicStreamState struct {
	deliver    func(Delta) error
	started    bool // message_start was seen
	blocks     map[int]*anthropicStreamBlock
	text       anthropicText // the text delivered
	stopReason string
	usage      anthropicUsage
	warnings   []string
}

// anthropicMaxQuote bounds what a warning quotes of an event.
const anthropicMaxQuote = 100

// handle applies one event; done reports message_stop. An event whose
// data is not JSON, or not of the shape its type has, is skipped and
// named in the answer's warnings.
func (st *anthropicStreamState) handle(a *Anthropic, data string) (done bool, err error) {
	if data == "" { // an empty event carries nothing
		return false, nil
	}
	var ev anthropicEvent
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		what := "of an unknown shape"
		if !json.Valid([]byte(data)) {
			what = "that is not JSON"
		}
		st.warnings = append(st.warnings, "skipped a stream event "+what+": "+anthropicQuote(a.redact(data), anthropicMaxQuote))
		return false, nil
	}
	switch ev.Type {
	case "message_start":
		// A second one means two answers spliced into one stream: their
		// blocks would mix.
		if st.started {
			return false, errors.New("anthropic: a second message_start in one stream")
		}
		st.started = true
		if ev.Message != nil && ev.Message.Usage != nil {
			st.usage = *ev.Message.Usage
		}
	case "content_block_start":
		b := &anthropicStreamBlock{}
		if ev.ContentBlock != nil {
			b.start = *ev.ContentBlock
		}
		b.text.WriteString(b.start.Text + b.start.Thinking)
		b.signature.WriteString(b.start.Signature)
		st.blocks[ev.Index] = b
		st.text.block(b.start.Type)
		if b.start.Type == "text" {
			if err := st.deliver(Delta{Text: st.text.add(b.start.Text)}); err != nil {
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
			if err := st.deliver(Delta{Text: st.text.add(ev.Delta.Text)}); err != nil {
				return false, err
			}
		case "input_json_delta":
			if b.start.Type == "" {
				b.start.Type = "tool_use"
				st.text.block(b.start.Type)
			}
			b.json.WriteString(ev.Delta.PartialJSON)
		case "thinking_delta":
			if b.start.Type == "" {
				b.start.Type = "thinking"
			}
			b.text.WriteString(ev.Delta.Thinking)
			if err := st.deliver(Delta{Thinking: ev.Delta.Thinking}); err != nil {
				return false, err
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
			st.usage.merge(ev.Usage)
		}
	case "message_stop":
		return true, nil
	case "error":
		e := ev.Error
		if e == nil {
			e = &anthropicErrorBody{Type: "error", Message: "error event without details"}
		}
		apiErr := a.apiError(anthropicErrorStatus(e.Type), e)
		apiErr.InStream = true
		return false, apiErr
	}
	return false, nil
}

// anthropicQuote is s quoted, cut to at most n bytes on a character
// boundary, with "..." after the quotes when cut.
func anthropicQuote(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + "..."
}

// response assembles the streamed blocks, in index order. Its text is
// the text delivered, separators included.
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
	stop := anthropicStopReason(st.stopReason)
	msg := anthropicMessageFrom(blocks, stop)
	msg.Content = st.text.String()
	return &Response{
		Message:    msg,
		StopReason: stop,
		Usage:      st.usage.usage(),
		Warnings:   st.warnings,
	}
}
