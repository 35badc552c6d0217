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
	"strconv"
	"strings"
	"unicode/utf8"
)

// OpenAIConfig configures a client of an OpenAI-compatible chat
// completions API: OpenAI itself, Azure, OpenRouter, DeepSeek, Groq, xAI,
// Mistral, Gemini, Ollama, vLLM or llama.cpp's server. The zero value
// talks to OpenAI without a key.
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
//
// An error object sent with HTTP 200 is retried like its HTTP twin
// (server_error as 500, a numeric code as that status...), drawing on the
// same attempts.
func (o *OpenAI) Chat(ctx context.Context, req *Request) (*Response, error) {
	r := newRetrier(o.cfg.Retry)
	for {
		resp, err := o.do(ctx, r, req, false)
		if err != nil {
			return nil, err
		}
		out, err := o.readJSON(ctx, resp)
		resp.Body.Close()
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || !apiErr.Retryable() {
			return out, err
		}
		ok, werr := r.again(ctx, apiErr.RetryAfter)
		if werr != nil {
			return nil, werr
		}
		if !ok {
			return nil, err
		}
	}
}

// Stream sends req with streaming on, calls onDelta with each piece of
// text or reasoning as it arrives, and returns the whole answer with the
// tool calls assembled from their fragments. An error the API sends
// inside the stream is retried like its HTTP twin until something has
// been delivered; after that a failure comes back as an
// *InterruptedError holding the part delivered.
func (o *OpenAI) Stream(ctx context.Context, req *Request, onDelta func(Delta) error) (*Response, error) {
	rt := newRetrier(o.cfg.Retry)
	return streamWithRetry(ctx, rt, onDelta, func(ctx context.Context, deliver func(Delta) error) (*Response, error) {
		return o.stream(ctx, rt, req, deliver)
	})
}

// stream is one attempt of Stream: it sends req (with rt, which the
// attempts share), reads the answer and passes its pieces to deliver. On
// failure it returns, with the error, what it had assembled so far.
func (o *OpenAI) stream(ctx context.Context, rt *retrier, req *Request, deliver func(Delta) error) (*Response, error) {
	resp, err := o.do(ctx, rt, req, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignored "stream": the whole answer at once.
		res, err := o.readJSON(ctx, resp)
		if err != nil {
			if apiErr, ok := errors.AsType[*APIError](err); ok {
				// The API answered 200 with an error in place of the
				// stream: the same as an error sent in it.
				apiErr.InStream = true
			}
			return nil, err
		}
		var thinking strings.Builder
		for _, t := range res.Message.Thinking {
			thinking.WriteString(t.Text)
		}
		if err := deliver(Delta{Thinking: thinking.String()}); err != nil {
			return nil, err
		}
		if err := deliver(Delta{Text: res.Message.Content}); err != nil {
			return nil, err
		}
		return res, nil
	}
	acc := newOpenAIStreamAcc()
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
		if !json.Valid(data) {
			acc.warn(o.redact("skipped a stream event that is not JSON: " + openaiExcerpt(data)))
			return nil
		}
		if err := json.Unmarshal(data, &c); err != nil {
			acc.warn(o.redact("skipped a stream event of an unknown shape: " + openaiExcerpt(data)))
			return nil
		}
		if e := c.apiError(); e != nil {
			apiErr := o.apiError(openaiErrorStatus(e), e)
			apiErr.InStream = true
			return apiErr
		}
		return deliver(acc.add(&c))
	})
	if err != nil && !errors.Is(err, errOpenAIDone) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return acc.partial(), err
	}
	if !done && acc.finish == "" {
		return acc.partial(), fmt.Errorf("%s: stream ended early: %w", o.cfg.Name, io.ErrUnexpectedEOF)
	}
	res := acc.partial()
	res.Message.ToolCalls, err = o.toolCalls(acc.wireCalls(), acc.finish)
	if err != nil {
		return res, err
	}
	res.StopReason = openaiStopReason(acc.finish, len(res.Message.ToolCalls) > 0, acc.refused)
	return res, nil
}

// do marshals req and sends it, with the retries rt allows, returning the
// 2xx answer.
func (o *OpenAI) do(ctx context.Context, rt *retrier, req *Request, stream bool) (*http.Response, error) {
	wire, err := o.wireRequest(req, stream)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.cfg.Name, err)
	}
	body, err := json.Marshal(wire)
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
	return send(ctx, o.client, rt, o.cfg.Name, build, o.parseError)
}

// readJSON decodes a whole (non-streamed) answer. An error in a 2xx body
// becomes an *APIError whose Status is what the error stands for (see
// openaiErrorStatus), the HTTP status saying nothing.
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
	if e := w.apiError(); e != nil {
		return nil, o.apiError(openaiErrorStatus(e), e)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("%s: response has no choices", o.cfg.Name)
	}
	// The first choice (index 0) when the server sent several.
	ch := &w.Choices[0]
	for i := range w.Choices {
		if w.Choices[i].Index == nil || *w.Choices[i].Index == 0 {
			ch = &w.Choices[i]
			break
		}
	}
	m := &ch.Message
	text, thinking := openaiContent(m.Content)
	msg := Message{Role: RoleAssistant, Content: text + m.Refusal}
	if t := openaiReasoning(m.ReasoningContent, m.Reasoning) + thinking; t != "" {
		msg.Thinking = []Thinking{{Text: t}}
	}
	msg.ToolCalls, err = o.toolCalls(m.ToolCalls, ch.FinishReason)
	if err != nil {
		return nil, err
	}
	r := &Response{Message: msg, StopReason: openaiStopReason(ch.FinishReason, len(msg.ToolCalls) > 0, m.Refusal != "")}
	if w.Usage != nil {
		r.Usage = w.Usage.usage()
	}
	return r, nil
}

// toolCalls makes the answer's tool calls of the API's, checked: a call
// without a name is an error (the answer cannot be run nor sent back);
// a call whose arguments are not JSON, or the last one when the output
// limit ended the answer, is marked Invalid; every call gets a unique
// id.
func (o *OpenAI) toolCalls(wire []openaiToolCall, finish string) ([]ToolCall, error) {
	if len(wire) == 0 {
		return nil, nil
	}
	calls := make([]ToolCall, len(wire))
	for i, w := range wire {
		if w.Function.Name == "" {
			return nil, fmt.Errorf("%s: the answer has a tool call without a name (index %d, id %q)", o.cfg.Name, i, w.ID)
		}
		args, valid := openaiArgs(w.Function.Arguments)
		c := ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: args}
		// Only the last call can have been cut off: the ones before it
		// were complete when the next began.
		cut := finish == "length" && i == len(wire)-1
		switch {
		case !valid && cut:
			c.Invalid = "the arguments are not valid JSON; they were cut off by the output limit"
		case !valid:
			c.Invalid = "the arguments are not valid JSON"
		case cut:
			// They parse, but may still be short of what the model meant.
			c.Invalid = "the arguments were cut off by the output limit (max_tokens)"
		}
		calls[i] = c
	}
	uniqueCallIDs(calls)
	return calls, nil
}

// parseError makes an APIError of a non-2xx answer: the API's JSON error
// object, or else the body's text.
func (o *OpenAI) parseError(status int, body []byte) *APIError {
	var w openaiErrorFields
	if json.Unmarshal(body, &w) == nil {
		if e := w.apiError(); e != nil {
			return o.apiError(status, e)
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
// message in case the API quotes it. The Type is the error's type, else
// its code when that is a string: a numeric code is an HTTP status,
// already in status when it is one.
func (o *OpenAI) apiError(status int, e *openaiError) *APIError {
	typ := e.Type
	if typ == "" {
		json.Unmarshal(e.Code, &typ) // a string, or left empty
	}
	return &APIError{Provider: o.cfg.Name, Status: status, Type: o.redact(typ), Message: o.redact(e.Message)}
}

// redact removes the key from a text that might quote it.
func (o *OpenAI) redact(s string) string {
	if o.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, o.cfg.APIKey, "[redacted]")
}

// openaiErrorStatus is the HTTP status an error sent with a 200 answer
// stands for: its numeric code when that is an HTTP error status
// (OpenRouter, vLLM), else what its type or string code means, else 0.
func openaiErrorStatus(e *openaiError) int {
	if n, err := strconv.Atoi(string(bytes.TrimSpace(e.Code))); err == nil {
		if n >= 400 && n <= 599 {
			return n
		}
		return 0
	}
	var code string
	json.Unmarshal(e.Code, &code)
	for _, s := range []string{e.Type, code} {
		switch s {
		case "server_error", "internal_error", "api_error":
			return 500
		case "rate_limit_exceeded", "rate_limit_error":
			return 429
		case "overloaded", "overloaded_error", "service_unavailable":
			return 503
		}
	}
	return 0
}

// wireRequest maps a neutral Request to the chat completions body. It
// refuses, with an error saying why, images on a message other than a
// user's or a tool's, images of a type the APIs do not take, and a tool choice that
// does not fit the tools offered. ThinkingBudget has no equivalent here
// and is left out.
func (o *OpenAI) wireRequest(req *Request, stream bool) (*openaiRequest, error) {
	if err := checkImages(req.Messages, 0); err != nil {
		return nil, err
	}
	choice, err := req.ToolChoice.resolve(req.Tools)
	if err != nil {
		return nil, err
	}
	w := &openaiRequest{Model: req.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop}
	switch choice {
	case "":
	case ToolChoiceNamed:
		w.ToolChoice = openaiNamedChoice{Type: "function", Function: openaiChoiceFunction{Name: req.ToolChoice.Name}}
	default: // auto, none, required: the API's own words
		w.ToolChoice = string(choice)
	}
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
	// The images of a turn's tool results, sent in a user message after
	// them: a tool message's content is text alone.
	var toolImages []openaiPart
	flush := func() {
		if len(toolImages) > 0 {
			w.Messages = append(w.Messages, openaiMessage{Role: "user", Content: toolImages})
			toolImages = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role != RoleTool {
			flush()
		}
		wm := openaiMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		switch {
		case m.Role == RoleTool:
			wm.Content = openaiStr(m.Content)
			if len(m.Images) > 0 {
				toolImages = append(toolImages, openaiPart{Type: "text", Text: fmt.Sprintf("The images of the result of tool call %s:", m.ToolCallID)})
				for _, im := range m.Images {
					mt, _ := im.mediaType() // checked above
					toolImages = append(toolImages, openaiPart{Type: "image_url", ImageURL: &openaiImageURL{URL: "data:" + mt + ";base64," + im.base64()}})
				}
			}
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
		case len(m.Images) > 0:
			// Content parts: the text, then each image as a data URL.
			var parts []openaiPart
			if m.Content != "" {
				parts = append(parts, openaiPart{Type: "text", Text: m.Content})
			}
			for _, im := range m.Images {
				mt, _ := im.mediaType() // checked above
				url := "data:" + mt + ";base64," + im.base64()
				parts = append(parts, openaiPart{Type: "image_url", ImageURL: &openaiImageURL{URL: url}})
			}
			wm.Content = parts
		default:
			wm.Content = openaiStr(m.Content)
		}
		w.Messages = append(w.Messages, wm)
	}
	flush()
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		w.Tools = append(w.Tools, openaiTool{Type: "function", Function: openaiFunction{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return w, nil
}

// The wire format of chat completions.

type openaiRequest struct {
	Model    string          `json:"model"`
	Messages []openaiMessage `json:"messages"`
	Tools    []openaiTool    `json:"tools,omitempty"`
	// ToolChoice is "auto", "none", "required" or an openaiNamedChoice.
	ToolChoice    any                  `json:"tool_choice,omitempty"`
	MaxTokens     int                  `json:"max_tokens,omitempty"`
	Temperature   *float64             `json:"temperature,omitempty"`
	Stop          []string             `json:"stop,omitempty"`
	Stream        bool                 `json:"stream,omitempty"`
	StreamOptions *openaiStreamOptions `json:"stream_options,omitempty"`
}

type openaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// openaiNamedChoice is a tool_choice that names the function to call.
type openaiNamedChoice struct {
	Type     string               `json:"type"` // "function"
	Function openaiChoiceFunction `json:"function"`
}

type openaiChoiceFunction struct {
	Name string `json:"name"`
}

type openaiMessage struct {
	Role string `json:"role"`
	// Content is a *string, or []openaiPart for a user message with
	// images; nil (null) for an assistant message made only of tool
	// calls.
	Content    any              `json:"content"`
	ToolCalls  []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// openaiPart is a content part of a message: text or an image.
type openaiPart struct {
	Type     string          `json:"type"` // "text" or "image_url"
	Text     string          `json:"text,omitempty"`
	ImageURL *openaiImageURL `json:"image_url,omitempty"`
}

type openaiImageURL struct {
	URL string `json:"url"` // here always a data: URL
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
		Index   *int `json:"index"`
		Message struct {
			// Content is a string, null, or an array of typed parts.
			Content json.RawMessage `json:"content"`
			// Refusal is the model's refusal, in place of Content.
			Refusal          string           `json:"refusal"`
			Reasoning        string           `json:"reasoning"`
			ReasoningContent string           `json:"reasoning_content"`
			ToolCalls        []openaiToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage `json:"usage"`
	openaiErrorFields
}

type openaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		// CacheWriteTokens is OpenRouter's count of input written to
		// the cache (Anthropic and Gemini models behind it).
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// PromptCacheHitTokens is DeepSeek's count of cached input.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

// usage maps the API's counts. Reasoning is part of completion_tokens
// (OpenAI), except where the total shows the provider counted it apart
// (xAI: total = prompt + completion + reasoning): it is then added to
// the output.
func (u *openaiUsage) usage() Usage {
	v := Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
	if v.CacheReadTokens == 0 {
		v.CacheReadTokens = u.PromptCacheHitTokens
	}
	if r := v.ReasoningTokens; r > 0 && u.TotalTokens == u.PromptTokens+u.CompletionTokens+r {
		v.OutputTokens += r
	}
	return v
}

type openaiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	// Code is a string, a number or null depending on the server.
	Code json.RawMessage `json:"code"`
}

// openaiErrorFields are where an answer or a stream chunk may carry an
// error: an "error" member, an object or (Ollama) a string, or vLLM's
// older shape, the error's own fields at the top with "object":"error".
type openaiErrorFields struct {
	Error  json.RawMessage `json:"error"`
	Object string          `json:"object"`
	// Message is a string, or an object (Mistral's validation errors).
	Message json.RawMessage `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// apiError returns the error the fields carry, or nil.
func (f *openaiErrorFields) apiError() *openaiError {
	if raw := bytes.TrimSpace(f.Error); len(raw) > 0 && string(raw) != "null" {
		var e openaiError
		if json.Unmarshal(raw, &e) == nil {
			return &e
		}
		var s string
		if json.Unmarshal(raw, &s) == nil { // Ollama: {"error":"..."}
			return &openaiError{Message: s}
		}
		return &openaiError{Message: string(raw)}
	}
	if f.Object == "error" {
		var msg string
		if raw := bytes.TrimSpace(f.Message); string(raw) != "null" && json.Unmarshal(raw, &msg) != nil {
			msg = string(raw)
			if len(msg) > 500 {
				msg = msg[:500] + "..."
			}
		}
		return &openaiError{Message: msg, Type: f.Type, Code: f.Code}
	}
	return nil
}

type openaiChunk struct {
	Choices []openaiChunkChoice `json:"choices"`
	Usage   *openaiUsage        `json:"usage"`
	openaiErrorFields
}

type openaiChunkChoice struct {
	Index *int `json:"index"`
	Delta struct {
		// Content is a string, null, or an array of typed parts.
		Content          json.RawMessage   `json:"content"`
		Refusal          string            `json:"refusal"`
		Reasoning        string            `json:"reasoning"`
		ReasoningContent string            `json:"reasoning_content"`
		ToolCalls        []openaiChunkCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// openaiChunkCall is a fragment of a streamed tool call.
type openaiChunkCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// choice returns the chunk's choice of index 0 (one without an index
// counts as 0), or nil. The others, when the server sends several
// (n > 1), are left out rather than mixed in.
func (c *openaiChunk) choice() *openaiChunkChoice {
	for i := range c.Choices {
		if ch := &c.Choices[i]; ch.Index == nil || *ch.Index == 0 {
			return ch
		}
	}
	return nil
}

// openaiMaxWarnings bounds the warnings of one answer; past it they are
// counted.
const openaiMaxWarnings = 10

// openaiStreamAcc assembles a streamed answer.
type openaiStreamAcc struct {
	text, thinking strings.Builder
	refused        bool // the text is a refusal
	calls          []*openaiCallAcc
	byIndex        map[int]*openaiCallAcc
	byID           map[string]*openaiCallAcc
	finish         string
	usage          Usage
	warnings       []string
	moreWarnings   int // warnings past openaiMaxWarnings
}

type openaiCallAcc struct {
	key      int // its index in byIndex, or -1
	id, name string
	args     []byte
}

func newOpenAIStreamAcc() *openaiStreamAcc {
	return &openaiStreamAcc{byIndex: map[int]*openaiCallAcc{}, byID: map[string]*openaiCallAcc{}}
}

// add folds one chunk in and returns the text it carried.
func (a *openaiStreamAcc) add(c *openaiChunk) Delta {
	if c.Usage != nil {
		a.usage = c.Usage.usage()
	}
	var d Delta
	ch := c.choice()
	if ch == nil {
		return d
	}
	text, thinking := openaiContent(ch.Delta.Content)
	if ch.Delta.Refusal != "" {
		text += ch.Delta.Refusal
		a.refused = true
	}
	d.Text = text
	d.Thinking = openaiReasoning(ch.Delta.ReasoningContent, ch.Delta.Reasoning) + thinking
	a.text.WriteString(d.Text)
	a.thinking.WriteString(d.Thinking)
	for i := range ch.Delta.ToolCalls {
		f := &ch.Delta.ToolCalls[i]
		if f.ID == "" && f.Function.Name == "" && f.Function.Arguments == "" {
			continue // nothing to add, nor a call to start
		}
		call := a.call(f)
		if call.id == "" {
			call.id = f.ID
		}
		if call.name == "" {
			call.name = f.Function.Name
		}
		call.args = append(call.args, f.Function.Arguments...)
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		a.finish = *ch.FinishReason
	}
	return d
}

// call finds the call a tool-call fragment continues, or starts one.
// Calls are keyed by index; a fragment with no index (or -1) is matched
// by its id, and failing that counts as index 0. A new id at a known
// index starts a new call (some servers put every call at index 0), and
// so does a fragment naming a function where the call is complete, named
// and its arguments whole JSON (Gemini streams parallel calls whole, at
// one index, with no id or the same one).
func (a *openaiStreamAcc) call(f *openaiChunkCall) *openaiCallAcc {
	idx := -1
	if f.Index != nil && *f.Index >= 0 {
		idx = *f.Index
	}
	c, key := a.find(idx, f.ID)
	if c != nil {
		if !c.endedBy(f) {
			return c
		}
		if c.key >= 0 {
			key = c.key // the new call takes its place
		}
	}
	c = &openaiCallAcc{key: key, id: f.ID}
	a.calls = append(a.calls, c)
	if key >= 0 {
		a.byIndex[key] = c
	}
	if f.ID != "" {
		a.byID[f.ID] = c
	}
	return c
}

// find returns the call a fragment at idx (-1: none) with id continues,
// or nil, and the index a new call would be kept at (-1: none).
func (a *openaiStreamAcc) find(idx int, id string) (*openaiCallAcc, int) {
	same := func(c *openaiCallAcc) bool { return c != nil && (id == "" || c.id == "" || c.id == id) }
	if idx >= 0 {
		if c := a.byIndex[idx]; same(c) {
			return c, idx
		}
		return nil, idx
	}
	if c := a.byID[id]; id != "" && c != nil {
		return c, -1
	}
	if c := a.byIndex[0]; same(c) {
		return c, 0
	}
	if id == "" && len(a.calls) > 0 {
		return a.calls[len(a.calls)-1], -1
	}
	if a.byIndex[0] != nil {
		return nil, -1 // a second call without an index: keyed by id only
	}
	return nil, 0
}

// endedBy reports whether fragment f, which would continue c, starts a
// new call instead: c is named and its arguments are whole JSON, and f
// names a function. A fragment that only repeats c's name and id,
// bringing no arguments, continues it.
func (c *openaiCallAcc) endedBy(f *openaiChunkCall) bool {
	if f.Function.Name == "" || c.name == "" || !json.Valid(c.args) {
		return false
	}
	repeat := f.Function.Name == c.name && (f.ID == "" || f.ID == c.id) && f.Function.Arguments == ""
	return !repeat
}

// warn records that something of the stream was skipped.
func (a *openaiStreamAcc) warn(w string) {
	if len(a.warnings) < openaiMaxWarnings {
		a.warnings = append(a.warnings, w)
		return
	}
	a.moreWarnings++
}

// wireCalls returns the assembled calls in the wire form of a whole
// answer.
func (a *openaiStreamAcc) wireCalls() []openaiToolCall {
	var calls []openaiToolCall
	for _, c := range a.calls {
		calls = append(calls, openaiToolCall{ID: c.id, Type: "function",
			Function: openaiFunctionCall{Name: c.name, Arguments: string(c.args)}})
	}
	return calls
}

// partial returns the answer so far without its tool calls: text,
// thinking, usage and warnings.
func (a *openaiStreamAcc) partial() *Response {
	msg := Message{Role: RoleAssistant, Content: a.text.String()}
	if a.thinking.Len() > 0 {
		msg.Thinking = []Thinking{{Text: a.thinking.String()}}
	}
	r := &Response{Message: msg, StopReason: openaiStopReason(a.finish, false, a.refused), Usage: a.usage}
	r.Warnings = append(r.Warnings, a.warnings...)
	if a.moreWarnings > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("skipped %d more stream events the same way", a.moreWarnings))
	}
	return r
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

// openaiStopReason normalises finish_reason. A refusal says so; the
// output limit wins over tool calls, which it may have cut short.
func openaiStopReason(finish string, hasToolCalls, refused bool) string {
	switch {
	case refused:
		return "refusal"
	case finish == "length":
		return "max_tokens"
	case hasToolCalls:
		return "tool_use"
	}
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls", "function_call":
		return "tool_use"
	}
	return finish
}

// openaiArgs turns the arguments string into JSON: "{}" when empty, and
// a JSON string holding the text when the model wrote invalid JSON (so
// the conversation stays well-formed); valid reports which.
func openaiArgs(s string) (args json.RawMessage, valid bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), true
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s), true
	}
	b, _ := json.Marshal(s)
	return b, false
}

// openaiReasoning picks the reasoning of a message or delta: servers
// send it as reasoning_content (DeepSeek, vLLM) or reasoning (Ollama,
// OpenRouter), some as both with the same text.
func openaiReasoning(reasoningContent, reasoning string) string {
	if reasoningContent != "" {
		return reasoningContent
	}
	return reasoning
}

// openaiContent reads the content of a message or delta: a string, null,
// or an array of typed parts. Mistral's reasoning models send
// {"type":"thinking","thinking":[parts]} and {"type":"text","text":...};
// the text of a thinking part is thinking. Other parts are skipped.
func openaiContent(raw json.RawMessage) (text, thinking string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", ""
	}
	var tb, hb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "":
			tb.WriteString(p.Text)
		case "thinking":
			t, h := openaiContent(p.Thinking)
			hb.WriteString(t)
			hb.WriteString(h)
		}
	}
	return tb.String(), hb.String()
}

// openaiExcerpt quotes the start of a stream event for a warning.
func openaiExcerpt(data []byte) string {
	const limit = 100
	if len(data) <= limit {
		return strconv.Quote(string(data))
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return strconv.Quote(string(data[:cut])) + "..."
}

func openaiStr(s string) *string { return &s }
