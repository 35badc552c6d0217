package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// openaiStep is one answer of a replay server.
type openaiStep struct {
	status  int               // 0: 200
	file    string            // fixture under testdata/openai
	headers map[string]string // extra response headers
}

// openaiRequestLog is what a replay server received.
type openaiRequestLog struct {
	mu   sync.Mutex
	reqs []*openaiSeen
}

type openaiSeen struct {
	path   string
	header http.Header
	body   []byte
}

func (l *openaiRequestLog) all() []*openaiSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*openaiSeen(nil), l.reqs...)
}

// openaiReplay serves steps in order, one per request.
func openaiReplay(t *testing.T, steps ...openaiStep) (*httptest.Server, *openaiRequestLog) {
	t.Helper()
	log := &openaiRequestLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		log.mu.Lock()
		n := len(log.reqs)
		log.reqs = append(log.reqs, &openaiSeen{path: r.URL.Path, header: r.Header.Clone(), body: body})
		log.mu.Unlock()
		if n >= len(steps) {
			t.Errorf("unexpected request %d", n+1)
			http.Error(w, "no more steps", http.StatusTeapot)
			return
		}
		st := steps[n]
		data := openaiFixture(t, st.file)
		if strings.HasSuffix(st.file, ".sse") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		for k, v := range st.headers {
			w.Header().Set(k, v)
		}
		if st.status != 0 {
			w.WriteHeader(st.status)
		}
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

func openaiFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "openai", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func openaiTestClient(url, key string) *OpenAI {
	return NewOpenAI(OpenAIConfig{
		BaseURL: url,
		APIKey:  key,
		Retry:   RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond},
	})
}

func openaiSimpleRequest() *Request {
	return &Request{Model: "gpt-4.1", Messages: []Message{{Role: RoleUser, Content: "Hi"}}}
}

var openaiTwoCalls = []ToolCall{
	{ID: "call_12345xyz", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
	{ID: "call_67890abc", Name: "list_dir", Arguments: json.RawMessage(`{"path":".","recursive":false}`)},
}

func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		want Response
	}{
		"plain text": {
			file: "chat_text.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello! How can I help you today?"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 19, OutputTokens: 10},
			},
		},
		"two parallel tool calls": {
			file: "chat_tool_calls.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, ToolCalls: openaiTwoCalls},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 120, OutputTokens: 48},
			},
		},
		"tool calls with finish_reason stop": {
			file: "chat_tool_calls_stop.json",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_m3k1a9qz", Name: "read_file", Arguments: json.RawMessage(`{"path":"README.md"}`)},
				}},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 210, OutputTokens: 22},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, log := openaiReplay(t, openaiStep{file: tc.file})
			got, err := openaiTestClient(srv.URL, "sk-test").Chat(t.Context(), openaiSimpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
			reqs := log.all()
			if len(reqs) != 1 || reqs[0].path != "/chat/completions" {
				t.Fatalf("requests: %+v", reqs)
			}
			var sent map[string]any
			if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
				t.Fatal(err)
			}
			if _, ok := sent["stream"]; ok {
				t.Errorf("Chat sent stream: %s", reqs[0].body)
			}
		})
	}
}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file   string
		deltas []Delta
		want   Response
	}{
		"text deltas, comments, usage-only chunk, DONE": {
			file:   "stream_text.sse",
			deltas: []Delta{{Text: "Hello"}, {Text: ","}, {Text: " world"}, {Text: "!"}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello, world!"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 19, OutputTokens: 4},
			},
		},
		"two parallel tool calls": {
			file: "stream_tool_calls.sse",
			want: Response{
				Message:    Message{Role: RoleAssistant, ToolCalls: openaiTwoCalls},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 120, OutputTokens: 48},
			},
		},
		"whole tool call in one chunk with finish_reason stop (Ollama)": {
			file:   "stream_ollama_tool_call.sse",
			deltas: []Delta{{Thinking: "The user wants the README. "}},
			want: Response{
				Message: Message{
					Role:      RoleAssistant,
					Thinking:  []Thinking{{Text: "The user wants the README. "}},
					ToolCalls: []ToolCall{{ID: "call_x1y2z3w4", Name: "read_file", Arguments: json.RawMessage(`{"path":"README.md"}`)}},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 210, OutputTokens: 22},
			},
		},
		"missing index and index -1": {
			file:   "stream_no_index.sse",
			deltas: []Delta{{Text: "Let me look."}},
			want: Response{
				Message: Message{
					Role:      RoleAssistant,
					Content:   "Let me look.",
					ToolCalls: []ToolCall{{ID: "tool_0_read_file", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)}},
				},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 55, OutputTokens: 17},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, log := openaiReplay(t, openaiStep{file: tc.file})
			var deltas []Delta
			got, err := openaiTestClient(srv.URL, "sk-test").Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
				deltas = append(deltas, d)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
			if !reflect.DeepEqual(deltas, tc.deltas) {
				t.Errorf("deltas %q, want %q", deltas, tc.deltas)
			}
			reqs := log.all()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			var sent struct {
				Stream        bool `json:"stream"`
				StreamOptions struct {
					IncludeUsage bool `json:"include_usage"`
				} `json:"stream_options"`
			}
			if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
				t.Fatal(err)
			}
			if !sent.Stream || !sent.StreamOptions.IncludeUsage {
				t.Errorf("stream request: %s", reqs[0].body)
			}
			if a := reqs[0].header.Get("Accept"); a != "text/event-stream" {
				t.Errorf("Accept = %q", a)
			}
		})
	}
}

// TestOpenAISampling: the request's settings reach the body, a zero
// temperature included; without them the body has none.
func TestOpenAISampling(t *testing.T) {
	t.Parallel()
	srv, log := openaiReplay(t, openaiStep{file: "chat_text.json"}, openaiStep{file: "chat_text.json"})
	c := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, APIKey: "sk-test"})
	zero := 0.0
	for _, req := range []*Request{
		{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}, MaxTokens: 77, Temperature: &zero, Stop: []string{"END"}},
		{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}},
	} {
		if _, err := c.Chat(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []map[string]any{
		{"max_tokens": 77.0, "temperature": 0.0, "stop": []any{"END"}},
		{},
	} {
		var body map[string]any
		if err := json.Unmarshal(log.all()[i].body, &body); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"max_tokens", "temperature", "stop"} {
			got, ok := body[key]
			if w, wantIt := want[key]; ok != wantIt || !reflect.DeepEqual(got, w) {
				t.Errorf("request %d: %s = %v (present %v), want %v (present %v)", i, key, got, ok, w, wantIt)
			}
		}
	}
}

func TestOpenAIRequestMapping(t *testing.T) {
	t.Parallel()
	srv, log := openaiReplay(t, openaiStep{file: "chat_text.json"})
	c := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/", APIKey: "sk-test", MaxTokens: 1024})
	req := &Request{
		Model:  "gpt-4.1",
		System: "You are a careful assistant.",
		Messages: []Message{
			{Role: RoleUser, Content: "What module is this, and what is in the root?"},
			{Role: RoleAssistant, Content: "Let me look.", ToolCalls: []ToolCall{
				{ID: "call_12345xyz", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
				{ID: "call_67890abc", Name: "list_dir"}, // no arguments: "{}"
			}},
			{Role: RoleTool, ToolCallID: "call_12345xyz", Content: "module github.com/agenthost/agenthost"},
			{Role: RoleTool, ToolCallID: "call_67890abc", Content: "go.mod\nhost/"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{
				{ID: "call_aaa", Name: "read_file", Arguments: json.RawMessage(`{"path":"missing"}`)},
			}},
			{Role: RoleTool, ToolCallID: "call_aaa", Content: "error: no such file", IsError: true},
			{Role: RoleAssistant, Content: "It is github.com/agenthost/agenthost."},
			{Role: RoleUser, Content: "Thanks."},
		},
		Tools: []Tool{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_dir"},
		},
	}
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	reqs := log.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].path != "/chat/completions" {
		t.Errorf("path %q", reqs[0].path)
	}
	if ct := reqs[0].header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var got, want any
	if err := json.Unmarshal(reqs[0].body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(openaiFixture(t, "request_conversation.json"), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request body:\n%s\nwant the JSON of testdata/openai/request_conversation.json", reqs[0].body)
	}
	// Arguments travel as a JSON string, not an object.
	var typed openaiRequest
	if err := json.Unmarshal(reqs[0].body, &typed); err != nil {
		t.Fatalf("arguments not a string? %v", err)
	}
}

func TestOpenAIStreamErrorMidStream(t *testing.T) {
	t.Parallel()
	srv, _ := openaiReplay(t, openaiStep{file: "stream_error.sse"})
	c := NewOpenAI(OpenAIConfig{Name: "openrouter", BaseURL: srv.URL, APIKey: "sk-or-test"})
	var text strings.Builder
	_, err := c.Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
		text.WriteString(d.Text)
		return nil
	})
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *APIError", err)
	}
	if apiErr.Provider != "openrouter" || apiErr.Status != 200 || apiErr.Type != "502" ||
		!strings.Contains(apiErr.Message, "upstream overloaded") {
		t.Errorf("APIError %+v", apiErr)
	}
	if !strings.Contains(err.Error(), "upstream overloaded") || !strings.Contains(err.Error(), "openrouter") {
		t.Errorf("error text %q", err)
	}
	if text.String() != "Partial" {
		t.Errorf("text before the error %q", text.String())
	}
}

func TestOpenAIRetries(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		steps    []openaiStep
		requests int
		wantErr  []string // substrings of the error; nil: success
	}{
		"429 with Retry-After 0 then success": {
			steps: []openaiStep{
				{status: 429, file: "error_429.json", headers: map[string]string{"Retry-After": "0"}},
				{file: "chat_text.json"},
			},
			requests: 2,
		},
		"500 then success": {
			steps:    []openaiStep{{status: 500, file: "error_500.json"}, {file: "chat_text.json"}},
			requests: 2,
		},
		"400 not retried": {
			steps:    []openaiStep{{status: 400, file: "error_400.json"}},
			requests: 1,
			wantErr:  []string{"openai", "400", "invalid_request_error", "Invalid type for 'messages[1].content'"},
		},
		"500 until attempts run out": {
			steps:    []openaiStep{{status: 500, file: "error_500.json"}, {status: 500, file: "error_500.json"}, {status: 500, file: "error_500.json"}},
			requests: 3,
			wantErr:  []string{"openai", "500", "server_error", "The server had an error"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, log := openaiReplay(t, tc.steps...)
			got, err := openaiTestClient(srv.URL, "sk-test").Chat(t.Context(), openaiSimpleRequest())
			if n := len(log.all()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.Message.Content != "Hello! How can I help you today?" {
					t.Errorf("content %q", got.Message.Content)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestOpenAIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-SECRET"
	t.Run("401 quoting the key", func(t *testing.T) {
		t.Parallel()
		srv, log := openaiReplay(t, openaiStep{status: 401, file: "error_401.json"}, openaiStep{status: 401, file: "error_401.json"})
		c := openaiTestClient(srv.URL, key)
		_, err := c.Chat(t.Context(), openaiSimpleRequest())
		_, serr := c.Stream(t.Context(), openaiSimpleRequest(), nil)
		for _, err := range []error{err, serr} {
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Status != 401 {
				t.Fatalf("err = %v, want a 401 *APIError", err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(fmt.Sprintf("%+v %#v", err, apiErr), key) {
				t.Errorf("error holds the key: %q", err)
			}
			if !strings.Contains(err.Error(), "Incorrect API key provided") {
				t.Errorf("error lost the API's message: %q", err)
			}
		}
		reqs := log.all()
		if len(reqs) != 2 || reqs[0].header.Get("Authorization") != "Bearer "+key {
			t.Errorf("the key was not sent as a bearer token")
		}
	})
	t.Run("transport error", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		_, err := openaiTestClient(srv.URL, key).Chat(t.Context(), openaiSimpleRequest())
		if err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestOpenAIHeaders(t *testing.T) {
	t.Parallel()
	srv, log := openaiReplay(t, openaiStep{file: "chat_text.json"})
	c := NewOpenAI(OpenAIConfig{Name: "ollama", BaseURL: srv.URL, Headers: map[string]string{"X-Title": "agenthost"}})
	if c.Name() != "ollama" {
		t.Errorf("Name() = %q", c.Name())
	}
	if _, err := c.Chat(t.Context(), openaiSimpleRequest()); err != nil {
		t.Fatal(err)
	}
	h := log.all()[0].header
	if _, ok := h["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", h.Get("Authorization"))
	}
	if h.Get("X-Title") != "agenthost" {
		t.Errorf("extra header missing: %v", h)
	}
}

func TestOpenAIStreamCancel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	_, err := openaiTestClient(srv.URL, "").Stream(ctx, openaiSimpleRequest(), func(d Delta) error {
		if d.Text == "first" {
			go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

func TestOpenAIStreamCallbackError(t *testing.T) {
	t.Parallel()
	srv, _ := openaiReplay(t, openaiStep{file: "stream_text.sse"})
	stop := errors.New("stop")
	n := 0
	_, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), func(Delta) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err = %v after %d deltas", err, n)
	}
}

func TestOpenAIStreamEndedEarly(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut\"}}]}\n\n")
	}))
	t.Cleanup(srv.Close)
	_, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestOpenAISSE(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2<<20)
	tests := map[string]struct {
		in   string
		want []string
	}{
		"comments and other fields": {
			in:   ": OPENROUTER PROCESSING\n\nevent: message\nid: 1\ndata: {\"a\":1}\n\n:ping\ndata:{\"b\":2}\n\n",
			want: []string{`{"a":1}`, `{"b":2}`},
		},
		"multi-line data and CRLF": {
			in:   "data: one\r\ndata: two\r\n\r\n",
			want: []string{"one\ntwo"},
		},
		"last event without a blank line": {
			in:   "data: [DONE]",
			want: []string{"[DONE]"},
		},
		"a 2 MiB line": {
			in:   "data: " + long + "\n\n",
			want: []string{long},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			err := openaiSSE(strings.NewReader(tc.in), func(b []byte) error {
				got = append(got, string(b))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %.80q, want %.80q", got, tc.want)
			}
		})
	}
}

func TestOpenAIToolCallAssembly(t *testing.T) {
	t.Parallel()
	type frag struct {
		index    *int
		id, name string
		args     string
	}
	idx := func(i int) *int { return &i }
	tests := map[string]struct {
		frags []frag
		want  []ToolCall
	}{
		"two calls without index, told apart by id": {
			frags: []frag{{id: "a", name: "f", args: `{"x":1}`}, {id: "b", name: "g", args: `{"y":2}`}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {ID: "b", Name: "g", Arguments: json.RawMessage(`{"y":2}`)}},
		},
		"every call at index 0 with its own id": {
			frags: []frag{{index: idx(0), id: "a", name: "f", args: `{}`}, {index: idx(0), id: "b", name: "g"}, {index: idx(0), args: `{"y":2}`}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "g", Arguments: json.RawMessage(`{"y":2}`)}},
		},
		"id repeated on every fragment, name not appended": {
			frags: []frag{{index: idx(0), id: "a", name: "f", args: `{"x"`}, {index: idx(0), id: "a", name: "f", args: `:1}`}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}},
		},
		"empty and invalid arguments": {
			frags: []frag{{index: idx(0), id: "a", name: "f"}, {index: idx(1), id: "b", name: "g", args: `{"x":`}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "g", Arguments: json.RawMessage(`"{\"x\":"`)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			acc := openaiStreamAcc{byIndex: map[int]*openaiCallAcc{}, byID: map[string]*openaiCallAcc{}}
			for _, f := range tc.frags {
				tcj := map[string]any{"id": f.id, "function": map[string]any{"name": f.name, "arguments": f.args}}
				if f.index != nil {
					tcj["index"] = *f.index
				}
				b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]any{"tool_calls": []any{tcj}}}}})
				var c openaiChunk
				if err := json.Unmarshal(b, &c); err != nil {
					t.Fatal(err)
				}
				acc.add(&c)
			}
			if got := acc.response().Message.ToolCalls; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", openaiJSON(got), openaiJSON(tc.want))
			}
		})
	}
}

func openaiJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestOpenAIChatCancelDuringBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := openaiTestClient(srv.URL, "").Chat(ctx, openaiSimpleRequest())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

func TestOpenAIStreamIgnoredByServer(t *testing.T) {
	t.Parallel()
	srv, _ := openaiReplay(t, openaiStep{file: "chat_text.json"})
	var deltas []Delta
	got, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
		deltas = append(deltas, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Delta{{Text: "Hello! How can I help you today?"}}
	if !reflect.DeepEqual(deltas, want) || got.Message.Content != want[0].Text || got.StopReason != "end_turn" {
		t.Errorf("got %+v, deltas %q", got, deltas)
	}
}
