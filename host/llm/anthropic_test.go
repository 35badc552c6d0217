package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const anthropicTestKey = "sk-ant-SECRET"

// anthropicReply is one recorded answer the replay server sends.
type anthropicReply struct {
	status int               // 0: 200
	header map[string]string // extra response headers
	file   string            // fixture under testdata/anthropic
}

// anthropicReplay is an httptest server that answers requests with
// replies in order and records what the client sent.
type anthropicReplay struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []anthropicReply
	bodies  [][]byte
	headers []http.Header
	times   []time.Time
}

func newAnthropicReplay(t *testing.T, replies ...anthropicReply) *anthropicReplay {
	t.Helper()
	r := &anthropicReplay{t: t, replies: replies}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *anthropicReplay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1/messages" {
		r.t.Errorf("request %s %s, want POST /v1/messages", req.Method, req.URL.Path)
	}
	if n >= len(r.replies) {
		r.t.Errorf("request %d: no reply left", n+1)
		http.Error(w, "no reply", http.StatusTeapot)
		return
	}
	rep := r.replies[n]
	data := anthropicFixture(r.t, rep.file)
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if strings.HasSuffix(rep.file, ".sse") {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(data)
}

// requests returns the bodies the client sent, decoded.
func (r *anthropicReplay) requests() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]map[string]any, len(r.bodies))
	for i, b := range r.bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			r.t.Fatalf("request %d is not JSON: %v\n%s", i+1, err, b)
		}
	}
	return out
}

func (r *anthropicReplay) client(key string) *Anthropic {
	return NewAnthropic(AnthropicConfig{
		BaseURL:    r.srv.URL,
		APIKey:     key,
		HTTPClient: r.srv.Client(),
		Retry:      RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
	})
}

func anthropicFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// anthropicJSONEqual reports whether two JSON texts hold the same value.
func anthropicJSONEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

func anthropicCheckHeaders(t *testing.T, h http.Header, stream bool) {
	t.Helper()
	if got := h.Get("x-api-key"); got != anthropicTestKey {
		t.Errorf("x-api-key = %q", got)
	}
	if got := h.Get("anthropic-version"); got != "2023-06-01" {
		t.Errorf("anthropic-version = %q", got)
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := h.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if stream && h.Get("Accept") != "text/event-stream" {
		t.Errorf("Accept = %q for a stream", h.Get("Accept"))
	}
}

func anthropicSimpleRequest() *Request {
	return &Request{
		Model:    "claude-sonnet-4-5",
		System:   "Be brief.",
		Messages: []Message{{Role: RoleUser, Content: "Hello"}},
	}
}

func TestAnthropicName(t *testing.T) {
	t.Parallel()
	if got := NewAnthropic(AnthropicConfig{}).Name(); got != "anthropic" {
		t.Errorf("Name() = %q", got)
	}
}

func TestAnthropicChatText(t *testing.T) {
	t.Parallel()
	r := newAnthropicReplay(t, anthropicReply{file: "text.json"})
	resp, err := r.client(anthropicTestKey).Chat(t.Context(), anthropicSimpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{
		Message:    Message{Role: RoleAssistant, Content: "Hello! How can I help you today?"},
		StopReason: "end_turn",
		Usage:      Usage{InputTokens: 12, OutputTokens: 9},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response = %+v\nwant %+v", resp, want)
	}
	anthropicCheckHeaders(t, r.headers[0], false)
	wantReq := `{"model":"claude-sonnet-4-5","system":"Be brief.","max_tokens":4096,
		"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`
	if !anthropicJSONEqual(t, r.bodies[0], []byte(wantReq)) {
		t.Errorf("request = %s\nwant %s", r.bodies[0], wantReq)
	}
}

// TestAnthropicSampling: the request's settings reach the body, a zero
// temperature included.
func TestAnthropicSampling(t *testing.T) {
	t.Parallel()
	r := newAnthropicReplay(t, anthropicReply{file: "text.json"})
	req := anthropicSimpleRequest()
	zero := 0.0
	req.MaxTokens, req.Temperature, req.Stop = 77, &zero, []string{"END", "\n\nHuman:"}
	if _, err := r.client(anthropicTestKey).Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	wantReq := `{"model":"claude-sonnet-4-5","system":"Be brief.","max_tokens":77,"temperature":0,"stop_sequences":["END","\n\nHuman:"],
		"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`
	if !anthropicJSONEqual(t, r.bodies[0], []byte(wantReq)) {
		t.Errorf("request = %s\nwant %s", r.bodies[0], wantReq)
	}
}

func TestAnthropicChatToolsAndThinking(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		want *Response
	}{
		"two parallel tool_use blocks": {
			file: "parallel_tools.json",
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "I'll read both files.",
					ToolCalls: []ToolCall{
						{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
						{ID: "toolu_01B19r01rx01mr028946mr0", Name: "read_file", Arguments: json.RawMessage(`{"path":"b.txt","max_lines":10}`)},
					},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 400, OutputTokens: 96},
			},
		},
		"thinking and redacted thinking kept": {
			file: "thinking.json",
			want: &Response{
				Message: Message{
					Role: RoleAssistant,
					Thinking: []Thinking{
						{Text: "The user wants the date; I should call the tool.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
						{Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
					},
					ToolCalls: []ToolCall{{ID: "toolu_01Date", Name: "date", Arguments: json.RawMessage(`{}`)}},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 50, OutputTokens: 40},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t, anthropicReply{file: tc.file})
			resp, err := r.client(anthropicTestKey).Chat(t.Context(), anthropicSimpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			anthropicCompareResponse(t, resp, tc.want)
		})
	}
}

// anthropicCompareResponse compares responses, tool arguments as JSON.
func anthropicCompareResponse(t *testing.T, got, want *Response) {
	t.Helper()
	if len(got.Message.ToolCalls) != len(want.Message.ToolCalls) {
		t.Fatalf("tool calls = %+v\nwant %+v", got.Message.ToolCalls, want.Message.ToolCalls)
	}
	for i := range got.Message.ToolCalls {
		g, w := got.Message.ToolCalls[i], want.Message.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || !anthropicJSONEqual(t, g.Arguments, w.Arguments) {
			t.Errorf("tool call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
	}
	g, w := *got, *want
	g.Message.ToolCalls, w.Message.ToolCalls = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("response = %+v\nwant %+v", g, w)
	}
}

func TestAnthropicRequestMapping(t *testing.T) {
	t.Parallel()
	req := &Request{
		Model:     "claude-sonnet-4-5",
		System:    "You are a careful assistant.",
		MaxTokens: 1024,
		Tools: []Tool{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "date"},
		},
		Messages: []Message{
			{Role: RoleUser, Content: "Compare a.txt and b.txt"},
			{
				Role:    RoleAssistant,
				Content: "Reading them.",
				Thinking: []Thinking{
					{Text: "I need both files.", Signature: "sig-abc=="},
					{Redacted: "opaque-xyz"},
				},
				ToolCalls: []ToolCall{
					{ID: "toolu_a", Name: "read_file", Arguments: json.RawMessage(` {"path": "a.txt"} `)},
					{ID: "toolu_b", Name: "read_file", Arguments: json.RawMessage(`not json`)},
					{ID: "toolu_c", Name: "date"},
				},
			},
			{Role: RoleTool, ToolCallID: "toolu_a", Content: "alpha"},
			{Role: RoleTool, ToolCallID: "toolu_b", Content: "error: missing path", IsError: true},
			{Role: RoleTool, ToolCallID: "toolu_c", Content: "2025-01-01"},
			{Role: RoleAssistant, Content: "a.txt says alpha."},
			{Role: RoleUser, Content: "Thanks"},
		},
	}
	want := anthropicFixture(t, "conversation_request.json")
	for name, stream := range map[string]bool{"Chat": false, "Stream": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := "text.json"
			if stream {
				file = "text.sse"
			}
			r := newAnthropicReplay(t, anthropicReply{file: file})
			c := r.client(anthropicTestKey)
			var err error
			if stream {
				_, err = c.Stream(t.Context(), req, nil)
			} else {
				_, err = c.Chat(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			anthropicCheckHeaders(t, r.headers[0], stream)
			got := r.requests()[0]
			if stream {
				if got["stream"] != true {
					t.Errorf("stream = %v, want true", got["stream"])
				}
				delete(got, "stream")
			} else if _, ok := got["stream"]; ok {
				t.Errorf("Chat sent stream = %v", got["stream"])
			}
			var w map[string]any
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, w) {
				g, _ := json.MarshalIndent(got, "", "  ")
				t.Errorf("request =\n%s\nwant\n%s", g, want)
			}
		})
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file   string
		deltas []Delta
		want   *Response
	}{
		"text deltas, ping ignored": {
			file:   "text.sse",
			deltas: []Delta{{Text: "Hello"}, {Text: "!"}, {Text: " How can I help?"}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello! How can I help?"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 25, OutputTokens: 15},
			},
		},
		"two parallel tool_use blocks, input_json_delta replaces {}": {
			file:   "parallel_tools.sse",
			deltas: []Delta{{Text: "Reading both"}, {Text: " files."}},
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "Reading both files.",
					ToolCalls: []ToolCall{
						{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
						{ID: "toolu_02U2y2gK45rBnl3uOUsO8Vq7", Name: "read_file", Arguments: json.RawMessage(`{"path":"b.txt","max_lines":10}`)},
					},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 472, OutputTokens: 89},
			},
		},
		"tool_use without input deltas": {
			file: "tool_no_input.sse",
			want: &Response{
				Message: Message{
					Role:      RoleAssistant,
					ToolCalls: []ToolCall{{ID: "toolu_01Date", Name: "date", Arguments: json.RawMessage(`{}`)}},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 100, OutputTokens: 30},
			},
		},
		"thinking and signature accumulated": {
			file: "thinking.sse",
			deltas: []Delta{
				{Thinking: "Let me work out 27 * 453 step by step.\n\n"},
				{Thinking: "27 * 453 = 12231."},
				{Text: "27 * 453 = 12,231"},
			},
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "27 * 453 = 12,231",
					Thinking: []Thinking{
						{Text: "Let me work out 27 * 453 step by step.\n\n27 * 453 = 12231.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
						{Redacted: "EmwKAhgBEgy3va3pzix"},
					},
				},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 85, OutputTokens: 120},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t, anthropicReply{file: tc.file})
			var deltas []Delta
			resp, err := r.client(anthropicTestKey).Stream(t.Context(), anthropicSimpleRequest(), func(d Delta) error {
				deltas = append(deltas, d)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(deltas, tc.deltas) {
				t.Errorf("deltas = %q\nwant %q", deltas, tc.deltas)
			}
			anthropicCompareResponse(t, resp, tc.want)
			anthropicCheckHeaders(t, r.headers[0], true)
		})
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	t.Parallel()
	r := newAnthropicReplay(t, anthropicReply{file: "error_midstream.sse"})
	var text strings.Builder
	resp, err := r.client(anthropicTestKey).Stream(t.Context(), anthropicSimpleRequest(), func(d Delta) error {
		text.WriteString(d.Text)
		return nil
	})
	if resp != nil {
		t.Errorf("response = %+v, want nil", resp)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error = %v (%T), want *APIError", err, err)
	}
	if apiErr.Provider != "anthropic" || apiErr.Type != "overloaded_error" || apiErr.Message != "Overloaded" {
		t.Errorf("APIError = %+v", apiErr)
	}
	if text.String() != "Partial" {
		t.Errorf("text before the error = %q", text.String())
	}
	if len(r.bodies) != 1 {
		t.Errorf("%d requests, want 1 (a stream is not retried once it has begun)", len(r.bodies))
	}
}

func TestAnthropicStreamOnDeltaError(t *testing.T) {
	t.Parallel()
	r := newAnthropicReplay(t, anthropicReply{file: "text.sse"})
	stop := errors.New("enough")
	calls := 0
	_, err := r.client(anthropicTestKey).Stream(t.Context(), anthropicSimpleRequest(), func(Delta) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("error = %v after %d calls, want %v after 1", err, calls, stop)
	}
}

func TestAnthropicStreamTruncated(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse := anthropicFixture(t, "text.sse")
		w.Write(sse[:bytes.Index(sse, []byte("event: message_delta"))])
	}))
	defer srv.Close()
	c := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, APIKey: anthropicTestKey})
	_, err := c.Stream(t.Context(), anthropicSimpleRequest(), nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestAnthropicRetry(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		first  anthropicReply
		stream bool
		wait   time.Duration // at least, between the attempts
	}{
		"429 with Retry-After": {
			first: anthropicReply{status: 429, file: "error_429.json", header: map[string]string{"Retry-After": "0.04"}},
			wait:  40 * time.Millisecond,
		},
		"529 overloaded": {
			first: anthropicReply{status: 529, file: "error_529.json"},
		},
		"429 with Retry-After, streaming": {
			first:  anthropicReply{status: 429, file: "error_429.json", header: map[string]string{"Retry-After": "0.04"}},
			stream: true,
			wait:   40 * time.Millisecond,
		},
		"529 overloaded, streaming": {
			first:  anthropicReply{status: 529, file: "error_529.json"},
			stream: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := "text.json"
			if tc.stream {
				file = "text.sse"
			}
			r := newAnthropicReplay(t, tc.first, anthropicReply{file: file})
			c := r.client(anthropicTestKey)
			var resp *Response
			var err error
			if tc.stream {
				resp, err = c.Stream(t.Context(), anthropicSimpleRequest(), nil)
			} else {
				resp, err = c.Chat(t.Context(), anthropicSimpleRequest())
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(resp.Message.Content, "Hello!") {
				t.Errorf("content = %q", resp.Message.Content)
			}
			if len(r.bodies) != 2 {
				t.Fatalf("%d requests, want 2", len(r.bodies))
			}
			if gap := r.times[1].Sub(r.times[0]); gap < tc.wait {
				t.Errorf("retried after %v, want Retry-After's %v", gap, tc.wait)
			}
			if !bytes.Equal(r.bodies[0], r.bodies[1]) {
				t.Errorf("the retry sent another body:\n%s\n%s", r.bodies[0], r.bodies[1])
			}
		})
	}
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		reply    anthropicReply
		requests int
		want     APIError
	}{
		"400 not retried": {
			reply:    anthropicReply{status: 400, file: "error_400.json"},
			requests: 1,
			want:     APIError{Provider: "anthropic", Status: 400, Type: "invalid_request_error", Message: `messages: roles must alternate between "user" and "assistant"`},
		},
		"401 not retried": {
			reply:    anthropicReply{status: 401, file: "error_401.json"},
			requests: 1,
			want:     APIError{Provider: "anthropic", Status: 401, Type: "authentication_error", Message: "invalid x-api-key"},
		},
		"529 until attempts run out": {
			reply:    anthropicReply{status: 529, file: "error_529.json"},
			requests: 3,
			want:     APIError{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			replies := make([]anthropicReply, tc.requests)
			for i := range replies {
				replies[i] = tc.reply
			}
			r := newAnthropicReplay(t, replies...)
			_, err := r.client(anthropicTestKey).Chat(t.Context(), anthropicSimpleRequest())
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error = %v (%T), want *APIError", err, err)
			}
			if got := *apiErr; got != tc.want {
				t.Errorf("APIError = %+v\nwant %+v", got, tc.want)
			}
			for _, s := range []string{"anthropic", "HTTP " + strconv.Itoa(tc.want.Status), tc.want.Message} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if len(r.bodies) != tc.requests {
				t.Errorf("%d requests, want %d", len(r.bodies), tc.requests)
			}
		})
	}
}

func TestAnthropicNoKeyInErrors(t *testing.T) {
	t.Parallel()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A hostile or buggy server that quotes the key back.
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"bad key `+r.Header.Get("x-api-key")+`"}}`)
	}))
	defer echo.Close()
	plain := newAnthropicReplay(t, anthropicReply{status: 401, file: "error_401.json"}, anthropicReply{status: 401, file: "error_401.json"})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := map[string]string{
		"401":             plain.srv.URL,
		"key echoed back": echo.URL,
		"transport error": closed.URL,
	}
	for name, url := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := NewAnthropic(AnthropicConfig{
				BaseURL: url,
				APIKey:  anthropicTestKey,
				Retry:   RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
			})
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					_, err = c.Stream(t.Context(), anthropicSimpleRequest(), nil)
				} else {
					_, err = c.Chat(t.Context(), anthropicSimpleRequest())
				}
				if err == nil {
					t.Fatal("no error")
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error holds the key: %q", err)
				}
				if !strings.Contains(err.Error(), "anthropic") {
					t.Errorf("error %q does not name the provider", err)
				}
			}
		})
	}
}

func TestAnthropicNoKey(t *testing.T) {
	t.Parallel()
	c := NewAnthropic(AnthropicConfig{BaseURL: "http://127.0.0.1:1"})
	if _, err := c.Chat(t.Context(), anthropicSimpleRequest()); !errors.Is(err, ErrNoKey) {
		t.Errorf("Chat error = %v, want ErrNoKey", err)
	}
	if _, err := c.Stream(t.Context(), anthropicSimpleRequest(), nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("Stream error = %v, want ErrNoKey", err)
	}
}

func TestAnthropicStreamCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse := anthropicFixture(t, "text.sse")
		// Everything up to the first text delta, then silence.
		end := bytes.Index(sse, []byte(`"text":"!"`))
		w.Write(sse[:bytes.LastIndex(sse[:end], []byte("event:"))])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := NewAnthropic(AnthropicConfig{BaseURL: srv.URL, APIKey: anthropicTestKey, HTTPClient: srv.Client()})
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, anthropicSimpleRequest(), func(d Delta) error {
			if d.Text == "Hello" {
				cancel()
			}
			return nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after the context was cancelled")
	}
}
