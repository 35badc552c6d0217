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
	"strings"
)

// OpenAIConfig configures a client of an OpenAI-compatible chat
// completions API: OpenAI itself, OpenRouter, Ollama, vLLM or llama.cpp's
// server. The zero value talks to OpenAI without a key.
type OpenAIConfig struct {
	// Name is the provider's name in messages and errors; "openai" when
	// empty. Set it to "openrouter", "ollama"... to tell them apart.
	Name string
	// BaseURL is the API's root; requests go to BaseURL+"/chat/completions".
	// Empty means "https://api.openai.com/v1".
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends no Authorization
	// header, which is what Ollama and local servers want. The key never
	// appears in an error.
	APIKey string
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (a streamed answer may take minutes: bound it with the
	// context instead).
	HTTPClient *http.Client
	// Retry bounds the retries after 429, 5xx and transport errors.
	Retry RetryPolicy
	// Headers are extra request headers, such as OpenRouter's
	// HTTP-Referer and X-Title.
	Headers map[string]string
	// MaxTokens is the default output limit, used when a Request has
	// none; 0 sends no limit.
	MaxTokens int
}

// OpenAI is a Provider for OpenAI-compatible chat completions APIs.
type OpenAI struct {
	cfg    OpenAIConfig
	client *http.Client
	url    string
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a client configured by cfg, defaults filled in.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &OpenAI{cfg: cfg, client: client, url: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"}
}

// Name returns the provider's name.
func (o *OpenAI) Name() string { return o.cfg.Name }

// Chat sends req and returns the answer.
func (o *OpenAI) Chat(ctx context.Context, req *Request) (*Response, error) {
	resp, err := o.do(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return o.readJSON(ctx, resp)
}

// Stream sends req with streaming on, calls onDelta with each piece of
// text or reasoning as it arrives, and returns the whole answer with the
// tool calls assembled from their fragments.
func (o *OpenAI) Stream(ctx context.Context, req *Request, onDelta func(Delta) error) (*Response, error) {
	resp, err := o.do(ctx, req, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignored "stream": the whole answer at once.
		r, err := o.readJSON(ctx, resp)
		if err != nil {
			return nil, err
		}
		if r.Message.Content != "" && onDelta != nil {
			if err := onDelta(Delta{Text: r.Message.Content}); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	acc := openaiStreamAcc{byIndex: map[int]*openaiCallAcc{}, byID: map[string]*openaiCallAcc{}}
	done := false
	err = openaiSSE(resp.Body, func(data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			done = true
			return errOpenAIDone
		}
		var c openaiChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("%s: bad stream chunk: %w", o.cfg.Name, err)
		}
		if c.Error != nil {
			return o.apiError(resp.StatusCode, c.Error)
		}
		d := acc.add(&c)
		if (d.Text != "" || d.Thinking != "") && onDelta != nil {
			return onDelta(d)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errOpenAIDone) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	if !done && acc.finish == "" {
		return nil, fmt.Errorf("%s: stream ended early: %w", o.cfg.Name, io.ErrUnexpectedEOF)
	}
	return acc.response(), nil
}

// do marshals req and sends it, with retries, returning the 2xx answer.
func (o *OpenAI) do(ctx context.Context, req *Request, stream bool) (*http.Response, error) {
	body, err := json.Marshal(o.wireRequest(req, stream))
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", o.cfg.Name, err)
	}
	build := func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.cfg.Name, err)
		}
		r.Header.Set("Content-Type", "application/json")
		if stream {
			r.Header.Set("Accept", "text/event-stream")
		} else {
			r.Header.Set("Accept", "application/json")
		}
		for k, v := range o.cfg.Headers {
			r.Header.Set(k, v)
		}
		if o.cfg.APIKey != "" {
			r.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
		}
		return r, nil
	}
	return send(ctx, o.client, o.cfg.Retry, o.cfg.Name, build, o.parseError)
}

// readJSON decodes a whole (non-streamed) answer.
func (o *OpenAI) readJSON(ctx context.Context, resp *http.Response) (*Response, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("%s: read response: %w", o.cfg.Name, err)
	}
	var w openaiResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%s: decode response: %w", o.cfg.Name, err)
	}
	if w.Error != nil {
		return nil, o.apiError(resp.StatusCode, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("%s: response has no choices", o.cfg.Name)
	}
	ch := w.Choices[0]
	msg := Message{Role: RoleAssistant, Content: openaiText(ch.Message.Content)}
	if t := ch.Message.Reasoning + ch.Message.ReasoningContent; t != "" {
		msg.Thinking = []Thinking{{Text: t}}
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: openaiArgs(tc.Function.Arguments)})
	}
	r := &Response{Message: msg, StopReason: openaiStopReason(ch.FinishReason, len(msg.ToolCalls) > 0)}
	if w.Usage != nil {
		r.Usage = w.Usage.usage()
	}
	return r, nil
}

// parseError makes an APIError of a non-2xx answer: the API's JSON error
// object, or else the body's text.
func (o *OpenAI) parseError(status int, body []byte) *APIError {
	var w struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &w) == nil && len(w.Error) > 0 && string(w.Error) != "null" {
		var e openaiError
		if json.Unmarshal(w.Error, &e) == nil {
			return o.apiError(status, &e)
		}
		var s string
		if json.Unmarshal(w.Error, &s) == nil { // Ollama: {"error":"..."}
			return o.apiError(status, &openaiError{Message: s})
		}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return o.apiError(status, &openaiError{Message: msg})
}

// apiError converts the API's error object, scrubbing the key from the
// message in case the API quotes it.
func (o *OpenAI) apiError(status int, e *openaiError) *APIError {
	typ := e.Type
	if typ == "" {
		typ = openaiText(e.Code)
	}
	msg := e.Message
	if o.cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, o.cfg.APIKey, "[redacted]")
		typ = strings.ReplaceAll(typ, o.cfg.APIKey, "[redacted]")
	}
	return &APIError{Provider: o.cfg.Name, Status: status, Type: typ, Message: msg}
}

// wireRequest maps a neutral Request to the chat completions body.
func (o *OpenAI) wireRequest(req *Request, stream bool) *openaiRequest {
	w := &openaiRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop}
	if w.MaxTokens <= 0 {
		w.MaxTokens = o.cfg.MaxTokens
	}
	if stream {
		w.Stream = true
		w.StreamOptions = &openaiStreamOptions{IncludeUsage: true}
	}
	if req.System != "" {
		w.Messages = append(w.Messages, openaiMessage{Role: "system", Content: openaiStr(req.System)})
	}
	for _, m := range req.Messages {
		wm := openaiMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		switch {
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			if m.Content != "" {
				wm.Content = openaiStr(m.Content)
			}
			for _, tc := range m.ToolCalls {
				args := string(bytes.TrimSpace(tc.Arguments))
				if args == "" || args == "null" {
					args = "{}"
				}
				wm.ToolCalls = append(wm.ToolCalls, openaiToolCall{
					ID: tc.ID, Type: "function",
					Function: openaiFunctionCall{Name: tc.Name, Arguments: args},
				})
			}
		default:
			wm.Content = openaiStr(m.Content)
		}
		w.Messages = append(w.Messages, wm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		w.Tools = append(w.Tools, openaiTool{Type: "function", Function: openaiFunction{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return w
}

// The wire format of chat completions.

type openaiRequest struct {
	Model         string               `json:"model"`
	Messages      []openaiMessage      `json:"messages"`
	Tools         []openaiTool         `json:"tools,omitempty"`
	MaxTokens     int                  `json:"max_tokens,omitempty"`
	Temperature   *float64             `json:"temperature,omitempty"`
	Stop          []string             `json:"stop,omitempty"`
	Stream        bool                 `json:"stream,omitempty"`
	StreamOptions *openaiStreamOptions `json:"stream_options,omitempty"`
}

type openaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openaiMessage struct {
	Role string `json:"role"`
	// Content is null for an assistant message made only of tool calls.
	Content    *string          `json:"content"`
	ToolCalls  []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openaiToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function openaiFunctionCall `json:"function"`
}

type openaiFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON document in a string
}

type openaiTool struct {
	Type     string         `json:"type"`
	Function openaiFunction `json:"function"`
}

type openaiFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type openaiResponse struct {
	Choices []struct {
		Message struct {
			Content          json.RawMessage  `json:"content"`
			Reasoning        string           `json:"reasoning"`
			ReasoningContent string           `json:"reasoning_content"`
			ToolCalls        []openaiToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage `json:"usage"`
	Error *openaiError `json:"error"`
}

type openaiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (u *openaiUsage) usage() Usage {
	return Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

type openaiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	// Code is a string, a number or null depending on the server.
	Code json.RawMessage `json:"code"`
}

type openaiChunk struct {
	Choices []struct {
		Delta struct {
			Content          *string `json:"content"`
			Reasoning        string  `json:"reasoning"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage `json:"usage"`
	Error *openaiError `json:"error"`
}

// openaiStreamAcc assembles a streamed answer.
type openaiStreamAcc struct {
	text, thinking strings.Builder
	calls          []*openaiCallAcc
	byIndex        map[int]*openaiCallAcc
	byID           map[string]*openaiCallAcc
	finish         string
	usage          Usage
}

type openaiCallAcc struct {
	id, name string
	args     strings.Builder
}

// add folds one chunk in and returns the text it carried.
func (a *openaiStreamAcc) add(c *openaiChunk) Delta {
	if c.Usage != nil {
		a.usage = c.Usage.usage()
	}
	var d Delta
	if len(c.Choices) == 0 {
		return d
	}
	ch := &c.Choices[0]
	if ch.Delta.Content != nil {
		d.Text = *ch.Delta.Content
	}
	d.Thinking = ch.Delta.Reasoning + ch.Delta.ReasoningContent
	a.text.WriteString(d.Text)
	a.thinking.WriteString(d.Thinking)
	for _, tc := range ch.Delta.ToolCalls {
		idx := -1
		if tc.Index != nil && *tc.Index >= 0 {
			idx = *tc.Index
		}
		call := a.call(idx, tc.ID)
		if call.id == "" {
			call.id = tc.ID
		}
		if call.name == "" {
			call.name = tc.Function.Name
		}
		call.args.WriteString(tc.Function.Arguments)
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finish = *ch.FinishReason
	}
	return d
}

// call finds the call a tool-call delta continues, or starts one. Calls
// are keyed by index; a delta with no index (or -1) is matched by its id,
// and failing that counts as index 0. A new id at a known index starts a
// new call (some servers put every call at index 0).
func (a *openaiStreamAcc) call(idx int, id string) *openaiCallAcc {
	if idx < 0 {
		if c := a.byID[id]; id != "" && c != nil {
			return c
		}
		if c := a.byIndex[0]; c != nil && (id == "" || c.id == "" || c.id == id) {
			return c
		}
		if id == "" && len(a.calls) > 0 {
			return a.calls[len(a.calls)-1]
		}
		idx = 0
		if a.byIndex[0] != nil {
			idx = -1 // a second call without an index: keyed by id only
		}
	}
	if idx >= 0 {
		if c := a.byIndex[idx]; c != nil && (id == "" || c.id == "" || c.id == id) {
			return c
		}
	}
	c := &openaiCallAcc{id: id}
	a.calls = append(a.calls, c)
	if idx >= 0 {
		a.byIndex[idx] = c
	}
	if id != "" {
		a.byID[id] = c
	}
	return c
}

func (a *openaiStreamAcc) response() *Response {
	msg := Message{Role: RoleAssistant, Content: a.text.String()}
	if a.thinking.Len() > 0 {
		msg.Thinking = []Thinking{{Text: a.thinking.String()}}
	}
	for _, c := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.id, Name: c.name, Arguments: openaiArgs(c.args.String())})
	}
	return &Response{Message: msg, StopReason: openaiStopReason(a.finish, len(msg.ToolCalls) > 0), Usage: a.usage}
}

// errOpenAIDone stops the SSE reader at "data: [DONE]".
var errOpenAIDone = errors.New("done")

// openaiSSE reads server-sent events from r and calls onData with each
// event's data (several data lines joined by newlines). Comment lines
// (": ...") and other fields are skipped. It stops at the end of r or at
// the first error onData returns. Lines may be up to 16 MiB long.
func openaiSSE(r io.Reader, onData func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var data []byte
	have := false
	flush := func() error {
		if !have {
			return nil
		}
		d := data
		data, have = data[:0], false
		return onData(d)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data = append(data, value...)
		have = true
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// openaiStopReason normalises finish_reason.
func openaiStopReason(finish string, hasToolCalls bool) string {
	if hasToolCalls {
		return "tool_use"
	}
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls", "function_call":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return finish
}

// openaiArgs turns the arguments string into JSON: "{}" when empty, and
// a JSON string holding the text when the model wrote invalid JSON (so
// the tool reports it rather than the conversation breaking).
func openaiArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// openaiText reads a JSON value that should be text: a string, an array
// of {"type":"text","text"} parts, a number (error codes), or null.
func openaiText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func openaiStr(s string) *string { return &s }
