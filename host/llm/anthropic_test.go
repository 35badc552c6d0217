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
	"slices"
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
	way    replayWay         // how the body is written
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
	rep.way.write(w, data)
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
	return NewAnthropic(r.config(key))
}

// config is the configuration of a client of the replay server.
func (r *anthropicReplay) config(key string) AnthropicConfig {
	return AnthropicConfig{
		BaseURL:    r.srv.URL,
		APIKey:     key,
		HTTPClient: r.srv.Client(),
		Retry:      RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 50 * time.Millisecond},
	}
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
	wantReq := `{"model":"claude-sonnet-4-5","max_tokens":4096,
		"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"Hello","cache_control":{"type":"ephemeral"}}]}]}`
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
	wantReq := `{"model":"claude-sonnet-4-5","max_tokens":77,"temperature":0,"stop_sequences":["END","\n\nHuman:"],
		"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"Hello","cache_control":{"type":"ephemeral"}}]}]}`
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
				Usage:      Usage{InputTokens: 400, OutputTokens: 96, CacheReadTokens: 20},
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

// anthropicCompareResponse compares responses, tool arguments as JSON,
// and checks that the answer marshals.
func anthropicCompareResponse(t *testing.T, got, want *Response) {
	t.Helper()
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("the response does not marshal: %v", err)
	}
	if len(got.Message.ToolCalls) != len(want.Message.ToolCalls) {
		t.Fatalf("tool calls = %+v\nwant %+v", got.Message.ToolCalls, want.Message.ToolCalls)
	}
	for i := range got.Message.ToolCalls {
		g, w := got.Message.ToolCalls[i], want.Message.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || !anthropicJSONEqual(t, g.Arguments, w.Arguments) || g.Invalid != w.Invalid {
			t.Errorf("tool call %d = %s %s %s %q\nwant %s %s %s %q", i, g.ID, g.Name, g.Arguments, g.Invalid, w.ID, w.Name, w.Arguments, w.Invalid)
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
	// By default the body carries cache breakpoints on the last tool, the
	// system prompt and the last message's last block; with NoCache, none
	// and the system prompt is a plain string.
	for _, tc := range []struct {
		name    string
		stream  bool
		noCache bool
		want    string
	}{
		{"Chat", false, false, "conversation_request.json"},
		{"Stream", true, false, "conversation_request.json"},
		{"Chat NoCache", false, true, "conversation_request_nocache.json"},
		{"Stream NoCache", true, true, "conversation_request_nocache.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stream, want := tc.stream, anthropicFixture(t, tc.want)
			file := "text.json"
			if stream {
				file = "text.sse"
			}
			r := newAnthropicReplay(t, anthropicReply{file: file})
			cfg := r.config(anthropicTestKey)
			cfg.NoCache = tc.noCache
			c := NewAnthropic(cfg)
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
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: tc.file, way: way})
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
		})
	}
}

// TestAnthropicStreamErrorEvent: an error event after text was delivered
// ends the stream, unretried, as an *InterruptedError holding the text.
func TestAnthropicStreamErrorEvent(t *testing.T) {
	t.Parallel()
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		r := newAnthropicReplay(t, anthropicReply{file: "error_midstream.sse", way: way})
		var text strings.Builder
		resp, err := r.client(anthropicTestKey).Stream(t.Context(), anthropicSimpleRequest(), func(d Delta) error {
			text.WriteString(d.Text)
			return nil
		})
		if resp != nil {
			t.Errorf("response = %+v, want nil", resp)
		}
		var ie *InterruptedError
		if !errors.As(err, &ie) {
			t.Fatalf("error = %v (%T), want *InterruptedError", err, err)
		}
		if ie.Partial == nil || ie.Partial.Message.Content != "Partial" {
			t.Errorf("partial answer = %+v, want the text %q", ie.Partial, "Partial")
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("error = %v, want an *APIError inside", err)
		}
		want := APIError{Provider: "anthropic", Status: 529, InStream: true, Type: "overloaded_error", Message: "Overloaded"}
		if *apiErr != want {
			t.Errorf("APIError = %+v\nwant %+v", *apiErr, want)
		}
		if text.String() != "Partial" {
			t.Errorf("text before the error = %q", text.String())
		}
		if len(r.bodies) != 1 {
			t.Errorf("%d requests, want 1 (a stream is not retried once it has delivered)", len(r.bodies))
		}
	})
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

// anthropicAsk sends the simple request through Chat, or through Stream
// collecting the deltas.
func anthropicAsk(t *testing.T, c *Anthropic, stream bool) (*Response, []Delta, error) {
	t.Helper()
	if !stream {
		resp, err := c.Chat(t.Context(), anthropicSimpleRequest())
		return resp, nil, err
	}
	var deltas []Delta
	resp, err := c.Stream(t.Context(), anthropicSimpleRequest(), func(d Delta) error {
		deltas = append(deltas, d)
		return nil
	})
	return resp, deltas, err
}

// anthropicStreamedText is the text of deltas, joined.
func anthropicStreamedText(deltas []Delta) string {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(d.Text)
	}
	return b.String()
}

// anthropicJSONString is s as a JSON string.
func anthropicJSONString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// TestAnthropicToolCallCutOff: arguments that are not JSON are held as a
// JSON string and the call marked Invalid; with stop_reason max_tokens,
// the call the limit ended in is Invalid even if its input parses.
func TestAnthropicToolCallCutOff(t *testing.T) {
	t.Parallel()
	writeA := ToolCall{ID: "toolu_01Wr1teA", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","text":"alpha"}`)}
	tests := map[string]struct {
		file string
		want *Response
	}{
		"stream: the last input cut short": {
			file: "tool_cut_off.sse",
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "Writing both files.",
					ToolCalls: []ToolCall{writeA, {
						ID: "toolu_02Wr1teB", Name: "write_file",
						Arguments: anthropicJSONString(`{"path": "b.txt", "text": "the first li`),
						Invalid:   "the arguments are not valid JSON; they were cut off by the output limit",
					}},
				},
				StopReason: "max_tokens",
				Usage:      Usage{InputTokens: 310, OutputTokens: 64},
			},
		},
		"stream: the last input cut off where it parses": {
			file: "tool_cut_off_parses.sse",
			want: &Response{
				Message: Message{
					Role: RoleAssistant,
					ToolCalls: []ToolCall{{
						ID: "toolu_01Run", Name: "run",
						Arguments: json.RawMessage(`{"command":"rm -r build"}`),
						Invalid:   "the arguments were cut off by the output limit (max_tokens)",
					}},
				},
				StopReason: "max_tokens",
				Usage:      Usage{InputTokens: 120, OutputTokens: 16},
			},
		},
		"stream: input not JSON without the limit": {
			file: "tool_invalid_json.sse",
			want: &Response{
				Message: Message{
					Role: RoleAssistant,
					ToolCalls: []ToolCall{{
						ID: "toolu_01Bad", Name: "read_file",
						Arguments: anthropicJSONString(`{"path": a.txt}`),
						Invalid:   "the arguments are not valid JSON",
					}},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 90, OutputTokens: 12},
			},
		},
		"chat: the last call cut off": {
			file: "tool_cut_off.json",
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "Writing both files.",
					ToolCalls: []ToolCall{writeA, {
						ID: "toolu_02Wr1teB", Name: "write_file",
						Arguments: json.RawMessage(`{"path":"b.txt"}`),
						Invalid:   "the arguments were cut off by the output limit (max_tokens)",
					}},
				},
				StopReason: "max_tokens",
				Usage:      Usage{InputTokens: 310, OutputTokens: 64},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: tc.file, way: way})
				stream := strings.HasSuffix(tc.file, ".sse")
				resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), stream)
				if err != nil {
					t.Fatal(err)
				}
				anthropicCompareResponse(t, resp, tc.want)
				if stream && anthropicStreamedText(deltas) != resp.Message.Content {
					t.Errorf("streamed text %q, content %q", anthropicStreamedText(deltas), resp.Message.Content)
				}
			})
		})
	}
}

// TestAnthropicStreamSecondMessageStart: two answers spliced into one
// stream are an error, not one answer mixing both.
func TestAnthropicStreamSecondMessageStart(t *testing.T) {
	t.Parallel()
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		r := newAnthropicReplay(t, anthropicReply{file: "second_message_start.sse", way: way})
		resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), true)
		if resp != nil {
			t.Errorf("response = %+v, want nil", resp)
		}
		// The first answer's text was delivered: the failure is an
		// interruption holding it.
		var ie *InterruptedError
		if !errors.As(err, &ie) {
			t.Fatalf("error = %v (%T), want *InterruptedError", err, err)
		}
		if got, want := ie.Err.Error(), "anthropic: a second message_start in one stream"; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
		if got := anthropicStreamedText(deltas); got != "The answer is" || ie.Partial.Message.Content != got {
			t.Errorf("streamed %q, partial %q, want %q both", got, ie.Partial.Message.Content, "The answer is")
		}
		if len(r.bodies) != 1 {
			t.Errorf("%d requests, want 1", len(r.bodies))
		}
	})
}

// TestAnthropicStreamSkipsEventNotJSON: an event whose data is not JSON,
// or not of its type's shape, is skipped and named in the warnings; the
// stream goes on.
func TestAnthropicStreamSkipsEventNotJSON(t *testing.T) {
	t.Parallel()
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		r := newAnthropicReplay(t, anthropicReply{file: "event_not_json.sse", way: way})
		resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), true)
		if err != nil {
			t.Fatal(err)
		}
		// The second event's data is quoted to its first 100 bytes.
		long := "upstream latency high; this line is not JSON and is long enough to be cut where the warning quotes it, well past one hundred bytes"
		want := &Response{
			Message:    Message{Role: RoleAssistant, Content: "Hello world."},
			StopReason: "end_turn",
			Usage:      Usage{InputTokens: 25, OutputTokens: 6},
			Warnings: []string{
				`skipped a stream event that is not JSON: "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"`,
				"skipped a stream event that is not JSON: " + strconv.Quote(long[:100]) + "...",
				`skipped a stream event of an unknown shape: "{\"type\":\"content_block_delta\",\"index\":\"0\",\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}"`,
			},
		}
		anthropicCompareResponse(t, resp, want)
		if wantDeltas := []Delta{{Text: "Hello"}, {Text: " world."}}; !reflect.DeepEqual(deltas, wantDeltas) {
			t.Errorf("deltas = %q, want %q", deltas, wantDeltas)
		}
	})
}

// TestAnthropicStreamErrorEventRetried: a retryable error event before
// anything was delivered is retried like its HTTP twin, with the same
// attempts.
func TestAnthropicStreamErrorEventRetried(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		replies  []anthropicReply
		requests int
		wantErr  *APIError // nil: the answer of text.sse
	}{
		"overloaded_error as the first event": {
			replies:  []anthropicReply{{file: "error_first.sse"}, {file: "text.sse"}},
			requests: 2,
		},
		"overloaded_error after message_start, before any text": {
			replies:  []anthropicReply{{file: "error_before_text.sse"}, {file: "text.sse"}},
			requests: 2,
		},
		"HTTP 200 with a JSON error body": {
			replies:  []anthropicReply{{file: "error_529.json"}, {file: "text.sse"}},
			requests: 2,
		},
		"attempts shared with the HTTP retries, until they run out": {
			replies:  []anthropicReply{{status: 529, file: "error_529.json"}, {file: "error_first.sse"}, {file: "error_before_text.sse"}},
			requests: 3,
			wantErr:  &APIError{Provider: "anthropic", Status: 529, InStream: true, Type: "overloaded_error", Message: "Overloaded"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				replies := slices.Clone(tc.replies)
				for i := range replies {
					replies[i].way = way
				}
				r := newAnthropicReplay(t, replies...)
				resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), true)
				if len(r.bodies) != tc.requests {
					t.Errorf("%d requests, want %d", len(r.bodies), tc.requests)
				}
				if tc.wantErr != nil {
					var apiErr *APIError
					if !errors.As(err, &apiErr) || *apiErr != *tc.wantErr {
						t.Fatalf("error = %#v, want %+v", err, *tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Content != "Hello! How can I help?" || anthropicStreamedText(deltas) != resp.Message.Content {
					t.Errorf("content %q, streamed %q", resp.Message.Content, anthropicStreamedText(deltas))
				}
			})
		})
	}
}

// TestAnthropicStreamErrorEventNotRetryable: an error event of a type
// that retrying cannot mend is returned at once.
func TestAnthropicStreamErrorEventNotRetryable(t *testing.T) {
	t.Parallel()
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		r := newAnthropicReplay(t, anthropicReply{file: "error_invalid_request.sse", way: way}, anthropicReply{file: "text.sse"})
		_, _, err := anthropicAsk(t, r.client(anthropicTestKey), true)
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("error = %v (%T), want *APIError", err, err)
		}
		var ie *InterruptedError
		if errors.As(err, &ie) {
			t.Errorf("error = %v, want no *InterruptedError: nothing was delivered", err)
		}
		want := APIError{Provider: "anthropic", Status: 400, InStream: true, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"}
		if *apiErr != want {
			t.Errorf("APIError = %+v\nwant %+v", *apiErr, want)
		}
		if !strings.Contains(err.Error(), "error in the stream") {
			t.Errorf("error %q does not say it came in the stream", err)
		}
		if len(r.bodies) != 1 {
			t.Errorf("%d requests, want 1", len(r.bodies))
		}
	})
}

// TestAnthropicChatErrorBody: an error body sent with HTTP 200 takes the
// status its type stands for, and is retried as that status would be.
func TestAnthropicChatErrorBody(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		replies  []anthropicReply
		requests int
		wantErr  *APIError // nil: the answer of text.json
	}{
		"overloaded_error retried": {
			replies:  []anthropicReply{{file: "error_529.json"}, {file: "text.json"}},
			requests: 2,
		},
		"rate_limit_error with Retry-After retried": {
			replies:  []anthropicReply{{file: "error_429.json", header: map[string]string{"Retry-After": "0"}}, {file: "text.json"}},
			requests: 2,
		},
		"invalid_request_error returned at once": {
			replies:  []anthropicReply{{file: "error_400.json"}, {file: "text.json"}},
			requests: 1,
			wantErr:  &APIError{Provider: "anthropic", Status: 400, Type: "invalid_request_error", Message: `messages: roles must alternate between "user" and "assistant"`},
		},
		"overloaded_error until attempts run out": {
			replies:  []anthropicReply{{file: "error_529.json"}, {status: 529, file: "error_529.json"}, {file: "error_529.json"}},
			requests: 3,
			wantErr:  &APIError{Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t, tc.replies...)
			resp, err := r.client(anthropicTestKey).Chat(t.Context(), anthropicSimpleRequest())
			if len(r.bodies) != tc.requests {
				t.Errorf("%d requests, want %d", len(r.bodies), tc.requests)
			}
			if tc.wantErr != nil {
				var apiErr *APIError
				if !errors.As(err, &apiErr) || *apiErr != *tc.wantErr {
					t.Fatalf("error = %#v, want %+v", err, *tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "Hello! How can I help you today?" {
				t.Errorf("content = %q", resp.Message.Content)
			}
		})
	}
}

func TestAnthropicErrorStatus(t *testing.T) {
	t.Parallel()
	tests := map[string]int{
		"invalid_request_error": 400,
		"authentication_error":  401,
		"billing_error":         402,
		"permission_error":      403,
		"not_found_error":       404,
		"request_too_large":     413,
		"rate_limit_error":      429,
		"api_error":             500,
		"timeout_error":         504,
		"overloaded_error":      529,
		"some_new_error":        0,
		"":                      0,
	}
	for typ, want := range tests {
		if got := anthropicErrorStatus(typ); got != want {
			t.Errorf("anthropicErrorStatus(%q) = %d, want %d", typ, got, want)
		}
	}
}

// TestAnthropicServerToolText: text blocks split by citations are joined
// as they are; text blocks with a server tool's blocks between them are
// paragraphs apart, and the stream delivers the blank line too.
func TestAnthropicServerToolText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file   string
		deltas []Delta
		want   *Response
	}{
		"chat": {
			file: "server_tools.json",
			want: &Response{
				Message: Message{
					Role:     RoleAssistant,
					Content:  "I'll look up the latest release.\n\nThe latest release is Go 1.26.\n\nIts garbage collector is new.",
					Thinking: []Thinking{{Text: "Now check the changelog with the MCP tool.", Signature: "EqQBCgIYAhIMsig"}},
				},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 6039, OutputTokens: 931},
			},
		},
		"stream": {
			file: "server_tools.sse",
			deltas: []Delta{
				{Text: "I'll look up the latest release."},
				{Text: "\n\nThe latest release is "},
				{Text: "Go 1.26"},
				{Text: "."},
				{Text: "\n\nIt is 26 releases"},
				{Text: " after Go 1."},
			},
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "I'll look up the latest release.\n\nThe latest release is Go 1.26.\n\nIt is 26 releases after Go 1.",
				},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 2679, OutputTokens: 510},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: tc.file, way: way})
				resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), tc.deltas != nil)
				if err != nil {
					t.Fatal(err)
				}
				anthropicCompareResponse(t, resp, tc.want)
				if !reflect.DeepEqual(deltas, tc.deltas) {
					t.Errorf("deltas = %q\nwant %q", deltas, tc.deltas)
				}
			})
		})
	}
}

// TestAnthropicDuplicateToolIDs: a repeated or empty tool_use id is
// replaced, so that every call has its own.
func TestAnthropicDuplicateToolIDs(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"duplicate_ids.json", "duplicate_ids.sse"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: file, way: way})
				resp, _, err := anthropicAsk(t, r.client(anthropicTestKey), strings.HasSuffix(file, ".sse"))
				if err != nil {
					t.Fatal(err)
				}
				calls := resp.Message.ToolCalls
				if len(calls) != 3 {
					t.Fatalf("tool calls = %+v, want 3", calls)
				}
				if calls[0].ID != "toolu_01Same" {
					t.Errorf("first call's id = %q, want the model's own", calls[0].ID)
				}
				seen := map[string]bool{}
				for i, c := range calls {
					if c.ID == "" || seen[c.ID] {
						t.Errorf("call %d has id %q, not unique", i, c.ID)
					}
					seen[c.ID] = true
				}
				wantArgs := []string{`{"path":"a.txt"}`, `{"path":"b.txt"}`, `{}`}
				for i, c := range calls {
					if !anthropicJSONEqual(t, c.Arguments, []byte(wantArgs[i])) {
						t.Errorf("call %d arguments = %s, want %s", i, c.Arguments, wantArgs[i])
					}
				}
			})
		})
	}
}

// TestAnthropicCacheUsage: the cache's reads and writes are kept as the
// breakdown of the input, whether message_delta repeats them or not.
func TestAnthropicCacheUsage(t *testing.T) {
	t.Parallel()
	want := Usage{InputTokens: 21 + 1200 + 8000, OutputTokens: 3, CacheReadTokens: 8000, CacheWriteTokens: 1200}
	for _, file := range []string{"cache_usage.json", "cache_usage.sse", "cache_usage_output_only.sse"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: file, way: way})
				resp, _, err := anthropicAsk(t, r.client(anthropicTestKey), strings.HasSuffix(file, ".sse"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
			})
		})
	}
}

// TestAnthropicStreamJSONAnswer: a server that ignores stream and answers
// with the whole message is read as Chat reads it, its thinking and then
// its text delivered.
func TestAnthropicStreamJSONAnswer(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		deltas []Delta
		want   *Response
	}{
		"text.json": {
			deltas: []Delta{{Text: "Hello! How can I help you today?"}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello! How can I help you today?"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 12, OutputTokens: 9},
			},
		},
		"thinking_text.json": {
			deltas: []Delta{{Thinking: "Two plus two is four."}, {Thinking: "Say it plainly."}, {Text: "2 + 2 = 4."}},
			want: &Response{
				Message: Message{
					Role:    RoleAssistant,
					Content: "2 + 2 = 4.",
					Thinking: []Thinking{
						{Text: "Two plus two is four.", Signature: "EqQBCgIYAhIMwhole"},
						{Redacted: "EmwKAhgBEgyWhole"},
						{Text: "Say it plainly.", Signature: "EqQBCgIYAhIMplain"},
					},
				},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 30, OutputTokens: 45},
			},
		},
	}
	for file, tc := range tests {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: file, way: way})
				resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), true)
				if err != nil {
					t.Fatal(err)
				}
				anthropicCompareResponse(t, resp, tc.want)
				if !reflect.DeepEqual(deltas, tc.deltas) {
					t.Errorf("deltas = %q\nwant %q", deltas, tc.deltas)
				}
				if len(r.bodies) != 1 {
					t.Errorf("%d requests, want 1", len(r.bodies))
				}
			})
		})
	}
}

// TestAnthropicRefusal: the stop reason refusal is kept, and the text the
// model wrote before it is the content.
func TestAnthropicRefusal(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"refusal.json": "I can't help with that.",
		"refusal.sse":  "Here is how to",
	}
	for file, content := range tests {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: file, way: way})
				stream := strings.HasSuffix(file, ".sse")
				resp, deltas, err := anthropicAsk(t, r.client(anthropicTestKey), stream)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StopReason != "refusal" || resp.Message.Content != content {
					t.Errorf("stop reason %q, content %q; want refusal, %q", resp.StopReason, resp.Message.Content, content)
				}
				if stream && anthropicStreamedText(deltas) != content {
					t.Errorf("streamed %q, want %q", anthropicStreamedText(deltas), content)
				}
			})
		})
	}
}

// TestAnthropicUsageDelta: the counts a message_delta carries are the
// request's totals and replace message_start's, even when lower (after
// server-side compaction); the counts it leaves out keep message_start's.
// A whole answer has one usage object, read as it is.
func TestAnthropicUsageDelta(t *testing.T) {
	t.Parallel()
	compacted := Usage{InputTokens: 612 + 8190, OutputTokens: 1207, CacheReadTokens: 8190}
	tests := map[string]Usage{
		// Only output_tokens in the delta: input and cache from the start.
		"usage_delta_output_only.sse": {InputTokens: 2095 + 18022, OutputTokens: 503, CacheReadTokens: 18022},
		// Input 60385 at the start, 612 in the delta: 612 it is, and the
		// cache write of 1024 is replaced by the delta's 0.
		"usage_delta_compacted.sse": compacted,
		"usage_compacted.json":      compacted,
	}
	for file, want := range tests {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				r := newAnthropicReplay(t, anthropicReply{file: file, way: way})
				resp, _, err := anthropicAsk(t, r.client(anthropicTestKey), strings.HasSuffix(file, ".sse"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
			})
		})
	}
}

// TestAnthropicUsageMerge: a count a message_delta sends as 0 replaces
// message_start's; one it leaves out or sends as null does not.
func TestAnthropicUsageMerge(t *testing.T) {
	t.Parallel()
	start := `{"input_tokens":100,"cache_creation_input_tokens":30,"cache_read_input_tokens":50,"output_tokens":1}`
	tests := map[string]struct {
		delta string
		want  Usage
	}{
		"absent keeps":       {`{"output_tokens":9}`, Usage{InputTokens: 180, OutputTokens: 9, CacheReadTokens: 50, CacheWriteTokens: 30}},
		"null keeps":         {`{"input_tokens":null,"cache_read_input_tokens":null,"output_tokens":9}`, Usage{InputTokens: 180, OutputTokens: 9, CacheReadTokens: 50, CacheWriteTokens: 30}},
		"zero replaces":      {`{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":9}`, Usage{InputTokens: 100, OutputTokens: 9}},
		"lower replaces":     {`{"input_tokens":7,"output_tokens":9}`, Usage{InputTokens: 87, OutputTokens: 9, CacheReadTokens: 50, CacheWriteTokens: 30}},
		"higher replaces":    {`{"input_tokens":120,"cache_read_input_tokens":60,"output_tokens":9}`, Usage{InputTokens: 210, OutputTokens: 9, CacheReadTokens: 60, CacheWriteTokens: 30}},
		"empty changes none": {`{}`, Usage{InputTokens: 180, OutputTokens: 1, CacheReadTokens: 50, CacheWriteTokens: 30}},
	}
	for name, tc := range tests {
		var u, d anthropicUsage
		if err := json.Unmarshal([]byte(start), &u); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.delta), &d); err != nil {
			t.Fatal(err)
		}
		u.merge(&d)
		if got := u.usage(); got != tc.want {
			t.Errorf("%s: usage = %+v, want %+v", name, got, tc.want)
		}
	}
}

// anthropicWire is the body the client would send for req, decoded.
func anthropicWire(t *testing.T, c *Anthropic, req *Request) map[string]any {
	t.Helper()
	w, err := c.wireRequest(req, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// anthropicBreakpoints lists where a request body carries cache_control:
// "tools[i]", "system[i]", "messages[i].content[j]".
func anthropicBreakpoints(body map[string]any) []string {
	var at []string
	marked := func(v any) bool {
		m, _ := v.(map[string]any)
		cc, _ := m["cache_control"].(map[string]any)
		return cc != nil && cc["type"] == "ephemeral"
	}
	for _, key := range []string{"tools", "system"} {
		list, _ := body[key].([]any)
		for i, v := range list {
			if marked(v) {
				at = append(at, key+"["+strconv.Itoa(i)+"]")
			}
		}
	}
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		content, _ := m.(map[string]any)["content"].([]any)
		for j, b := range content {
			if marked(b) {
				at = append(at, "messages["+strconv.Itoa(i)+"].content["+strconv.Itoa(j)+"]")
			}
		}
	}
	return at
}

// TestAnthropicCacheBreakpoints: the breakpoints go on the last tool, the
// system prompt and the last block of the last message that can carry
// one (not thinking, not empty text); never more than 4; none with
// NoCache.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	t.Parallel()
	png := Image{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")}
	tools := []Tool{{Name: "read_file"}, {Name: "date"}}
	tests := map[string]struct {
		req  *Request
		want []string
	}{
		"tools, system, last user text": {
			req:  &Request{System: "s", Tools: tools, Messages: []Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Content: "b"}, {Role: RoleUser, Content: "c"}}},
			want: []string{"tools[1]", "system[0]", "messages[2].content[0]"},
		},
		"no system, no tools": {
			req:  &Request{Messages: []Message{{Role: RoleUser, Content: "a"}}},
			want: []string{"messages[0].content[0]"},
		},
		"the last of the grouped tool results": {
			req: &Request{Messages: []Message{
				{Role: RoleUser, Content: "a"},
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "t1", Name: "date"}, {ID: "t2", Name: "date"}}},
				{Role: RoleTool, ToolCallID: "t1", Content: "1"},
				{Role: RoleTool, ToolCallID: "t2", Content: "2"},
			}},
			want: []string{"messages[2].content[1]"},
		},
		"an image without text": {
			req:  &Request{Messages: []Message{{Role: RoleUser, Images: []Image{png}}}},
			want: []string{"messages[0].content[0]"},
		},
		"a prefilled answer ending in a tool_use after thinking": {
			req: &Request{Messages: []Message{
				{Role: RoleUser, Content: "a"},
				{Role: RoleAssistant, Thinking: []Thinking{{Text: "hm", Signature: "sig"}}, ToolCalls: []ToolCall{{ID: "t1", Name: "date"}}},
			}},
			want: []string{"messages[1].content[1]"},
		},
		"thinking only: nothing in the message to mark": {
			req:  &Request{Messages: []Message{{Role: RoleUser, Content: "a"}, {Role: RoleAssistant, Thinking: []Thinking{{Redacted: "xyz"}}}}},
			want: nil,
		},
		"an empty text is not marked": {
			req:  &Request{System: "s", Messages: []Message{{Role: RoleUser}}},
			want: []string{"system[0]"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.req.Model = "claude-sonnet-4-5"
			body := anthropicWire(t, NewAnthropic(AnthropicConfig{APIKey: "k"}), tc.req)
			got := anthropicBreakpoints(body)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("breakpoints at %q, want %q", got, tc.want)
			}
			if len(got) > 4 {
				t.Errorf("%d breakpoints, the API allows 4", len(got))
			}
			off := anthropicWire(t, NewAnthropic(AnthropicConfig{APIKey: "k", NoCache: true}), tc.req)
			if got := anthropicBreakpoints(off); got != nil {
				t.Errorf("NoCache: breakpoints at %q", got)
			}
			if sys, ok := off["system"]; ok {
				if _, isString := sys.(string); !isString {
					t.Errorf("NoCache: system = %v, want a string", sys)
				}
			}
		})
	}
}

// TestAnthropicToolChoice: each choice reaches the body as the API spells
// it; the zero choice, and auto or none without tools, send none.
func TestAnthropicToolChoice(t *testing.T) {
	t.Parallel()
	tools := []Tool{{Name: "read_file"}, {Name: "date"}}
	tests := map[string]struct {
		choice ToolChoice
		tools  []Tool
		want   any // the tool_choice sent; nil: none
	}{
		"zero":            {ToolChoice{}, tools, nil},
		"auto":            {ToolChoice{Mode: ToolChoiceAuto}, tools, map[string]any{"type": "auto"}},
		"none":            {ToolChoice{Mode: ToolChoiceNone}, tools, map[string]any{"type": "none"}},
		"required is any": {ToolChoice{Mode: ToolChoiceRequired}, tools, map[string]any{"type": "any"}},
		"named":           {UseTool("date"), tools, map[string]any{"type": "tool", "name": "date"}},
		"a name alone":    {ToolChoice{Name: "read_file"}, tools, map[string]any{"type": "tool", "name": "read_file"}},
		"none, no tools":  {ToolChoice{Mode: ToolChoiceNone}, nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t, anthropicReply{file: "text.json"})
			req := anthropicSimpleRequest()
			req.Tools, req.ToolChoice = tc.tools, tc.choice
			if _, err := r.client(anthropicTestKey).Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			got, ok := r.requests()[0]["tool_choice"]
			if tc.want == nil && ok {
				t.Errorf("tool_choice = %v, want none", got)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tool_choice = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAnthropicThinkingBudget: a budget turns thinking on in the body; a
// request the API would refuse for it is refused with an error that says
// why, and nothing is sent.
func TestAnthropicThinkingBudget(t *testing.T) {
	t.Parallel()
	one, half := 1.0, 0.5
	t.Run("sent", func(t *testing.T) {
		t.Parallel()
		r := newAnthropicReplay(t, anthropicReply{file: "thinking.sse"})
		req := anthropicSimpleRequest()
		req.ThinkingBudget, req.MaxTokens, req.Temperature = 2048, 8192, &one
		req.Tools, req.ToolChoice = []Tool{{Name: "date"}}, ToolChoice{Mode: ToolChoiceAuto}
		var thinking strings.Builder
		if _, err := r.client(anthropicTestKey).Stream(t.Context(), req, func(d Delta) error {
			thinking.WriteString(d.Thinking)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		body := r.requests()[0]
		want := map[string]any{"type": "enabled", "budget_tokens": 2048.0}
		if !reflect.DeepEqual(body["thinking"], want) || body["max_tokens"] != 8192.0 {
			t.Errorf("thinking = %v, max_tokens = %v; want %v, 8192", body["thinking"], body["max_tokens"], want)
		}
		if thinking.Len() == 0 {
			t.Error("no thinking delivered")
		}
	})
	t.Run("none by default", func(t *testing.T) {
		t.Parallel()
		body := anthropicWire(t, NewAnthropic(AnthropicConfig{APIKey: "k"}), anthropicSimpleRequest())
		if v, ok := body["thinking"]; ok {
			t.Errorf("thinking = %v without a budget", v)
		}
	})
	t.Run("interleaved thinking lifts the max_tokens bound", func(t *testing.T) {
		t.Parallel()
		c := NewAnthropic(AnthropicConfig{APIKey: "k", Headers: map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"}})
		req := anthropicSimpleRequest()
		req.ThinkingBudget = 20000 // above the default max_tokens of 4096
		if _, err := c.wireRequest(req, false); err != nil {
			t.Errorf("error %v", err)
		}
	})
	refused := map[string]struct {
		set  func(*Request)
		want string
	}{
		"below 1024":       {func(r *Request) { r.ThinkingBudget = 500 }, "thinking budget 500 is below the API's minimum of 1024 tokens"},
		"negative":         {func(r *Request) { r.ThinkingBudget = -1 }, "thinking budget -1 is below"},
		"max_tokens equal": {func(r *Request) { r.ThinkingBudget, r.MaxTokens = 2048, 2048 }, "thinking budget 2048 is not below max_tokens 2048"},
		"default max_tokens": {func(r *Request) { r.ThinkingBudget = 4096 },
			"thinking budget 4096 is not below max_tokens 4096"},
		"temperature": {func(r *Request) { r.ThinkingBudget, r.Temperature = 2048, &half }, "no temperature but 1, and the request sets 0.5"},
		"forced tool use": {func(r *Request) {
			r.ThinkingBudget, r.Tools, r.ToolChoice = 2048, []Tool{{Name: "date"}}, UseTool("date")
		}, `tool choice auto or none, not "tool"`},
		"tool choice required": {func(r *Request) {
			r.ThinkingBudget, r.Tools, r.ToolChoice = 2048, []Tool{{Name: "date"}}, ToolChoice{Mode: ToolChoiceRequired}
		}, `not "required"`},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t)
			req := anthropicSimpleRequest()
			tc.set(req)
			_, err := r.client(anthropicTestKey).Chat(t.Context(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "anthropic: ") {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if len(r.bodies) != 0 {
				t.Errorf("%d requests sent", len(r.bodies))
			}
		})
	}
}

// TestAnthropicRequestRefused: a tool choice or images the API would
// refuse are refused before sending, with an error that says why.
func TestAnthropicRequestRefused(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := map[string]struct {
		set  func(*Request)
		want string
	}{
		"unknown tool":         {func(r *Request) { r.Tools, r.ToolChoice = []Tool{{Name: "date"}}, UseTool("rm") }, `tool choice names tool "rm", which the request does not offer`},
		"required, no tools":   {func(r *Request) { r.ToolChoice = ToolChoice{Mode: ToolChoiceRequired} }, `tool choice "required", but the request offers no tools`},
		"unknown mode":         {func(r *Request) { r.Tools, r.ToolChoice = []Tool{{Name: "date"}}, ToolChoice{Mode: "any"} }, `unknown tool choice mode "any"`},
		"named without a name": {func(r *Request) { r.Tools, r.ToolChoice = []Tool{{Name: "date"}}, ToolChoice{Mode: ToolChoiceNamed} }, "without a tool name"},
		"a name with auto": {func(r *Request) {
			r.Tools, r.ToolChoice = []Tool{{Name: "date"}}, ToolChoice{Mode: ToolChoiceAuto, Name: "date"}
		}, `only mode "tool" takes a name`},
		"image on an assistant message": {func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: "see", Images: []Image{{Data: png}}})
		}, "message 1 (assistant) has images; only user and tool messages may"},
		"not an image": {func(r *Request) { r.Messages[0].Images = []Image{{MediaType: "image/png", Data: []byte("%PDF-1.7")}} },
			"message 0, image 0: the image is not a PNG, JPEG, GIF or WebP image"},
		"wrong media type": {func(r *Request) { r.Messages[0].Images = []Image{{MediaType: "image/jpeg", Data: png}} },
			"the image is marked image/jpeg but its data is image/png"},
		"no data": {func(r *Request) { r.Messages[0].Images = []Image{{MediaType: "image/png"}} }, "the image has no data"},
		"too large": {func(r *Request) {
			r.Messages[0].Images = []Image{{Data: append(slices.Clone(png), make([]byte, MaxImageSize)...)}}
		}, "over the limit of 3932160"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newAnthropicReplay(t)
			req := anthropicSimpleRequest()
			tc.set(req)
			_, err := r.client(anthropicTestKey).Stream(t.Context(), req, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "anthropic: ") {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if len(r.bodies) != 0 {
				t.Errorf("%d requests sent", len(r.bodies))
			}
		})
	}
}

// TestAnthropicImages: a user message's images go as base64 image blocks
// before its text; the media type is the one the data shows when the
// Image leaves it empty.
func TestAnthropicImages(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	gif := []byte("GIF89a\x01\x00\x01\x00")
	r := newAnthropicReplay(t, anthropicReply{file: "text.json"})
	req := anthropicSimpleRequest()
	req.Messages = []Message{
		{Role: RoleUser, Content: "What differs?", Images: []Image{{MediaType: "image/png", Data: png}, {Data: gif}}},
	}
	c := NewAnthropic(func() AnthropicConfig { cfg := r.config(anthropicTestKey); cfg.NoCache = true; return cfg }())
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[
		{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="}},
		{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGODlhAQABAA=="}},
		{"type":"text","text":"What differs?"}]}]`
	got, _ := json.Marshal(r.requests()[0]["messages"])
	if !anthropicJSONEqual(t, got, []byte(want)) {
		t.Errorf("messages = %s\nwant %s", got, want)
	}
}

// TestAnthropicToolResultImages: a tool result's images go in its
// tool_result block, after its text; one without keeps its text alone.
func TestAnthropicToolResultImages(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	r := newAnthropicReplay(t, anthropicReply{file: "text.json"})
	req := anthropicSimpleRequest()
	req.Messages = []Message{
		{Role: RoleUser, Content: "Look."},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "shot", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "date", Arguments: json.RawMessage(`{}`)}}},
		{Role: RoleTool, ToolCallID: "a", Content: "a picture:\n[image: 16 bytes, image/png]", Images: []Image{{MediaType: "image/png", Data: png}}},
		{Role: RoleTool, ToolCallID: "b", Content: "Monday"},
	}
	c := NewAnthropic(func() AnthropicConfig { cfg := r.config(anthropicTestKey); cfg.NoCache = true; return cfg }())
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","content":[
		{"type":"tool_result","tool_use_id":"a","content":[
			{"type":"text","text":"a picture:\n[image: 16 bytes, image/png]"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="}}]},
		{"type":"tool_result","tool_use_id":"b","content":"Monday"}]}`
	msgs, _ := r.requests()[0]["messages"].([]any)
	got, _ := json.Marshal(msgs[len(msgs)-1])
	if !anthropicJSONEqual(t, got, []byte(want)) {
		t.Errorf("the tool results = %s\nwant %s", got, want)
	}
}

// TestAnthropicHeaders: the configured headers are sent, and cannot
// replace the client's own: its key, version and content type.
func TestAnthropicHeaders(t *testing.T) {
	t.Parallel()
	r := newAnthropicReplay(t, anthropicReply{file: "text.sse"})
	cfg := r.config(anthropicTestKey)
	cfg.Headers = map[string]string{
		"anthropic-beta":    "context-1m-2025-08-07",
		"X-Title":           "agenthost",
		"x-api-key":         "sk-ant-OTHER",
		"Anthropic-Version": "2020-01-01",
		"content-type":      "text/plain",
	}
	if _, err := NewAnthropic(cfg).Stream(t.Context(), anthropicSimpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	h := r.headers[0]
	anthropicCheckHeaders(t, h, true)
	if h.Get("Anthropic-Beta") != "context-1m-2025-08-07" || h.Get("X-Title") != "agenthost" {
		t.Errorf("extra headers missing: %v", h)
	}
	if n := len(h.Values("X-Api-Key")); n != 1 {
		t.Errorf("%d x-api-key headers", n)
	}
}
