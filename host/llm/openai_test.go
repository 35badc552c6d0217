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
	"slices"
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
	return openaiReplayAs(t, replayAsIs, steps...)
}

// openaiReplayAs serves steps in order, one per request, writing the
// bodies as way says (see replayWay).
func openaiReplayAs(t *testing.T, way replayWay, steps ...openaiStep) (*httptest.Server, *openaiRequestLog) {
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
		way.write(w, data)
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

// openaiCheckResponse compares got with want, except for the ids of the
// calls at newIDs: the client made those, and they must be well-formed.
// Every call's id must be unique.
func openaiCheckResponse(t *testing.T, got *Response, want Response, newIDs []int) {
	t.Helper()
	if got == nil {
		t.Fatal("nil response")
	}
	seen := map[string]bool{}
	for _, c := range got.Message.ToolCalls {
		if seen[c.ID] {
			t.Errorf("id %q given to two calls", c.ID)
		}
		seen[c.ID] = true
	}
	want.Message.ToolCalls = slices.Clone(want.Message.ToolCalls)
	for _, i := range newIDs {
		if i >= len(got.Message.ToolCalls) {
			t.Fatalf("%d calls, want a new id for call %d", len(got.Message.ToolCalls), i)
		}
		id := got.Message.ToolCalls[i].ID
		if !strings.HasPrefix(id, "call_") || len(id) != 29 {
			t.Errorf("call %d: id %q is not one the client makes", i, id)
		}
		want.Message.ToolCalls[i].ID = id
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got  %s\nwant %s", openaiJSON(*got), openaiJSON(want))
	}
}

func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file   string
		want   Response
		newIDs []int // calls whose id the client makes
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
		"refusal": {
			file: "chat_refusal.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "I'm sorry, but I can't help with that request."},
				StopReason: "refusal",
				Usage:      Usage{InputTokens: 85, OutputTokens: 12},
			},
		},
		"the choice of index 0 of two": {
			file: "chat_choices.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "First choice: hello."},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 14, OutputTokens: 12},
			},
		},
		"content as thinking and text parts (Mistral)": {
			file: "chat_mistral_thinking.json",
			want: Response{
				Message: Message{Role: RoleAssistant, Content: "17 × 3 = **51**.",
					Thinking: []Thinking{{Text: "The user asks for 17 times 3. 17*3 = 51."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 21, OutputTokens: 45},
			},
		},
		"reasoning_content and reasoning both (vLLM)": {
			file: "chat_reasoning_both.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Paris.", Thinking: []Thinking{{Text: "The capital of France is Paris."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 16, OutputTokens: 15},
			},
		},
		"repeated and empty call ids (Gemini)": {
			file: "chat_duplicate_ids.json",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "function-call-8217", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
					{Name: "get_time", Arguments: json.RawMessage(`{}`)},
				}},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 96, OutputTokens: 42},
			},
			newIDs: []int{1, 2},
		},
		"a call ended by the output limit, its arguments parsing": {
			file: "chat_length_tool_call.json",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_Nt3cX4", Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.md"}`),
						Invalid: "the arguments were cut off by the output limit (max_tokens)"},
				}},
				StopReason: "max_tokens",
				Usage:      Usage{InputTokens: 300, OutputTokens: 16},
			},
		},
		"arguments that are not JSON": {
			file: "chat_invalid_args.json",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_p0q9r8", Name: "read_file", Arguments: json.RawMessage(`"{'path': 'main.go'}"`),
						Invalid: "the arguments are not valid JSON"},
				}},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 150, OutputTokens: 20},
			},
		},
		"reasoning counted apart from completion_tokens (xAI)": {
			file: "chat_xai_usage.json",
			want: Response{
				Message: Message{Role: RoleAssistant, Content: "101 multiplied by 3 is 303.",
					Thinking: []Thinking{{Text: "101 times 3: 100 times 3 is 300, plus 3 is 303."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 32, OutputTokens: 103, CacheReadTokens: 6, ReasoningTokens: 94},
			},
		},
		"reasoning within completion_tokens, cached input (OpenAI)": {
			file: "chat_reasoning_usage.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "The build fails because go.sum is missing an entry."},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 1200, OutputTokens: 450, CacheReadTokens: 1024, ReasoningTokens: 320},
			},
		},
		"cache reads and writes (OpenRouter)": {
			file: "chat_openrouter_cache_write.json",
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Noted."},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 3120, OutputTokens: 4, CacheReadTokens: 1800, CacheWriteTokens: 1300},
			},
		},
		"prompt_cache_hit_tokens (DeepSeek)": {
			file: "chat_deepseek_reasoner.json",
			want: Response{
				Message: Message{Role: RoleAssistant, Content: "9.11 is smaller than 9.8.",
					Thinking: []Thinking{{Text: "Compare 9.11 and 9.8: 0.11 < 0.80."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 20, OutputTokens: 180, CacheReadTokens: 16, ReasoningTokens: 150},
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
			openaiCheckResponse(t, got, tc.want, tc.newIDs)
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
		newIDs []int // calls whose id the client makes
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
		"refusal deltas": {
			file:   "stream_refusal.sse",
			deltas: []Delta{{Text: "I'm sorry"}, {Text: ", I can't"}, {Text: " help with that."}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "I'm sorry, I can't help with that."},
				StopReason: "refusal",
				Usage:      Usage{InputTokens: 85, OutputTokens: 9},
			},
		},
		"only the choice of index 0 of two": {
			file:   "stream_choices.sse",
			deltas: []Delta{{Text: "Hello"}, {Text: " there"}, {Text: "!"}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello there!"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 14, OutputTokens: 21},
			},
		},
		"content as thinking and text parts (Mistral)": {
			file:   "stream_mistral_thinking.sse",
			deltas: []Delta{{Thinking: "The user asks for"}, {Thinking: " 17 times 3."}, {Text: "17 × 3"}, {Text: " = **51**."}},
			want: Response{
				Message: Message{Role: RoleAssistant, Content: "17 × 3 = **51**.",
					Thinking: []Thinking{{Text: "The user asks for 17 times 3."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 21, OutputTokens: 31},
			},
		},
		"reasoning_content and reasoning both (vLLM)": {
			file:   "stream_reasoning_both.sse",
			deltas: []Delta{{Thinking: "The capital"}, {Thinking: " is Paris."}, {Thinking: " Sure."}, {Text: "Paris."}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Paris.", Thinking: []Thinking{{Text: "The capital is Paris. Sure."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 16, OutputTokens: 10},
			},
		},
		"events that are not JSON are skipped and named": {
			file:   "stream_not_json.sse",
			deltas: []Delta{{Text: "Hello"}, {Text: " there"}, {Text: "!"}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Hello there!"},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 12, OutputTokens: 4},
				Warnings: []string{
					`skipped a stream event that is not JSON: "{\"id\":\"gen-1745581200-Qw\",\"provider\":\"SomeHost\",\"model\":\"vendor/model\",\"object\":\"chat.completion.chu"...`,
					`skipped a stream event that is not JSON: "<html><body>502 Bad Gateway</body></html>"`,
					`skipped a stream event of an unknown shape: "{\"choices\":{\"index\":0,\"delta\":{\"content\":\"lost\"}}}"`,
					`skipped a stream event that is not JSON: "` + strings.Repeat("x", 100) + `"...`,
				},
			},
		},
		"parallel calls whole at one index, no ids (Gemini)": {
			file: "stream_gemini_parallel.sse",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
					{Name: "get_time", Arguments: json.RawMessage(`{}`)},
				}},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 96, OutputTokens: 38},
			},
			newIDs: []int{0, 1, 2},
		},
		"parallel calls in consecutive chunks, one id (Gemini)": {
			file:   "stream_gemini_same_id.sse",
			deltas: []Delta{{Text: "Checking both cities."}},
			want: Response{
				Message: Message{Role: RoleAssistant, Content: "Checking both cities.", ToolCalls: []ToolCall{
					{ID: "function-call-8217", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
				}},
				StopReason: "tool_use",
				Usage:      Usage{InputTokens: 96, OutputTokens: 31},
			},
			newIDs: []int{1},
		},
		"calls ended by the output limit": {
			file: "stream_length_tool_call.sse",
			want: Response{
				Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "call_Rd0aQ1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
					{ID: "call_Wr1bZ2", Name: "write_file", Arguments: json.RawMessage(`"{\"path\":\"b.go\",\"content\":\"package b\\n\\nfunc"`),
						Invalid: "the arguments are not valid JSON; they were cut off by the output limit"},
				}},
				StopReason: "max_tokens",
				Usage:      Usage{InputTokens: 300, OutputTokens: 32},
			},
		},
		"cached input in the usage chunk": {
			file:   "stream_cache_usage.sse",
			deltas: []Delta{{Text: "Cached."}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "Cached."},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 2306, OutputTokens: 3, CacheReadTokens: 2048},
			},
		},
		"reasoning counted apart from completion_tokens (xAI)": {
			file:   "stream_xai_usage.sse",
			deltas: []Delta{{Thinking: "100 times 3 is 300,"}, {Thinking: " plus 3 is 303."}, {Text: "303"}, {Text: "."}},
			want: Response{
				Message:    Message{Role: RoleAssistant, Content: "303.", Thinking: []Thinking{{Text: "100 times 3 is 300, plus 3 is 303."}}},
				StopReason: "end_turn",
				Usage:      Usage{InputTokens: 32, OutputTokens: 96, ReasoningTokens: 94},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				srv, log := openaiReplayAs(t, way, openaiStep{file: tc.file})
				var deltas []Delta
				got, err := openaiTestClient(srv.URL, "sk-test").Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
					deltas = append(deltas, d)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				openaiCheckResponse(t, got, tc.want, tc.newIDs)
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

// TestOpenAIStreamErrorMidStream: OpenRouter's error chunk after some
// text: the text delivered, the error is an in-stream *APIError whose
// numeric code is its status, in an *InterruptedError.
func TestOpenAIStreamErrorMidStream(t *testing.T) {
	t.Parallel()
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		srv, log := openaiReplayAs(t, way, openaiStep{file: "stream_error.sse"})
		c := NewOpenAI(OpenAIConfig{Name: "openrouter", BaseURL: srv.URL, APIKey: "sk-or-test",
			Retry: RetryPolicy{BaseDelay: time.Millisecond}})
		var text strings.Builder
		_, err := c.Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
			text.WriteString(d.Text)
			return nil
		})
		var ie *InterruptedError
		if !errors.As(err, &ie) || ie.Partial == nil || ie.Partial.Message.Content != "Partial" {
			t.Fatalf("err = %v, want an *InterruptedError with the text", err)
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("err = %v, want *APIError", err)
		}
		want := APIError{Provider: "openrouter", Status: 502, InStream: true, Message: "Provider returned error: upstream overloaded"}
		if *apiErr != want {
			t.Errorf("APIError %+v, want %+v", *apiErr, want)
		}
		if got := apiErr.Error(); got != "openrouter: error in the stream: Provider returned error: upstream overloaded" {
			t.Errorf("error text %q", got)
		}
		if text.String() != "Partial" {
			t.Errorf("text before the error %q", text.String())
		}
		if n := len(log.all()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

// TestOpenAIStreamErrorRetries: an error chunk in a 200 stream is retried
// like its HTTP twin while nothing was delivered, from the same attempts
// as the HTTP retries; after delivery it is not.
func TestOpenAIStreamErrorRetries(t *testing.T) {
	t.Parallel()
	helloDeltas := []Delta{{Text: "Hello"}, {Text: ","}, {Text: " world"}, {Text: "!"}}
	tests := map[string]struct {
		steps    []openaiStep
		requests int
		deltas   []Delta
		// wantErr is the in-stream error expected; nil: success.
		wantErr *APIError
		// partial is the text of the *InterruptedError expected, if any.
		partial string
	}{
		"server_error before any text, then success": {
			steps:    []openaiStep{{file: "stream_error_first.sse"}, {file: "stream_text.sse"}},
			requests: 2,
			deltas:   helloDeltas,
		},
		"HTTP 500, an in-stream server_error, then success": {
			steps:    []openaiStep{{status: 500, file: "error_500.json"}, {file: "stream_error_first.sse"}, {file: "stream_text.sse"}},
			requests: 3,
			deltas:   helloDeltas,
		},
		"HTTP and in-stream retries draw from the same attempts": {
			steps: []openaiStep{
				{status: 500, file: "error_500.json"}, {file: "stream_error_first.sse"},
				{file: "stream_error_first.sse"}, {file: "stream_text.sse"},
			},
			requests: 3,
			wantErr: &APIError{Provider: "openai", Status: 500, InStream: true, Type: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		"server_error after text: interrupted, not retried": {
			steps:    []openaiStep{{file: "stream_error_after_text.sse"}, {file: "stream_text.sse"}},
			requests: 1,
			deltas:   []Delta{{Text: "The answer"}, {Text: " is"}},
			wantErr: &APIError{Provider: "openai", Status: 500, InStream: true, Type: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
			partial: "The answer is",
		},
		"vLLM's error object with code 400: not retried": {
			steps:    []openaiStep{{file: "stream_error_vllm.sse"}, {file: "stream_text.sse"}},
			requests: 1,
			wantErr: &APIError{Provider: "openai", Status: 400, InStream: true, Type: "BadRequestError",
				Message: "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (1120 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."},
		},
		"an error body in place of the stream, then success": {
			steps:    []openaiStep{{file: "error_500.json"}, {file: "stream_text.sse"}},
			requests: 2,
			deltas:   helloDeltas,
		},
		"vLLM's error object in place of the stream: not retried": {
			steps:    []openaiStep{{file: "chat_error_object.json"}, {file: "stream_text.sse"}},
			requests: 1,
			wantErr: &APIError{Provider: "openai", Status: 400, InStream: true, Type: "BadRequestError",
				Message: "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (1120 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				srv, log := openaiReplayAs(t, way, tc.steps...)
				var deltas []Delta
				got, err := openaiTestClient(srv.URL, "sk-test").Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
					deltas = append(deltas, d)
					return nil
				})
				if n := len(log.all()); n != tc.requests {
					t.Errorf("%d requests, want %d", n, tc.requests)
				}
				if !reflect.DeepEqual(deltas, tc.deltas) {
					t.Errorf("deltas %q, want %q", deltas, tc.deltas)
				}
				if tc.wantErr == nil {
					if err != nil {
						t.Fatal(err)
					}
					if got.Message.Content != "Hello, world!" || got.StopReason != "end_turn" {
						t.Errorf("got %+v", got)
					}
					return
				}
				var apiErr *APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("err = %v, want *APIError", err)
				}
				if *apiErr != *tc.wantErr {
					t.Errorf("APIError %+v\nwant     %+v", *apiErr, *tc.wantErr)
				}
				var ie *InterruptedError
				switch {
				case tc.partial == "" && errors.As(err, &ie):
					t.Errorf("err = %v, want no *InterruptedError", err)
				case tc.partial != "" && (!errors.As(err, &ie) || ie.Partial == nil || ie.Partial.Message.Content != tc.partial):
					t.Errorf("err = %#v, want an *InterruptedError holding %q", err, tc.partial)
				}
			})
		})
	}
}

// TestOpenAIErrorStatus: the status an error sent with a 200 answer
// stands for, and the type shown.
func TestOpenAIErrorStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		status int
		typ    string
	}{
		{`{"error":{"message":"m","code":429}}`, 429, ""},
		{`{"error":{"message":"m","code":502}}`, 502, ""},
		{`{"error":{"message":"m","code":200}}`, 0, ""},
		{`{"error":{"message":"m","type":"server_error","code":null}}`, 500, "server_error"},
		{`{"error":{"message":"m","type":"internal_error"}}`, 500, "internal_error"},
		{`{"error":{"message":"m","type":"api_error"}}`, 500, "api_error"},
		{`{"error":{"message":"m","type":"tokens","code":"rate_limit_exceeded"}}`, 429, "tokens"},
		{`{"error":{"message":"m","type":"rate_limit_error"}}`, 429, "rate_limit_error"},
		{`{"error":{"message":"m","code":"overloaded"}}`, 503, "overloaded"},
		{`{"error":{"message":"m","type":"overloaded_error"}}`, 503, "overloaded_error"},
		{`{"error":{"message":"m","type":"service_unavailable"}}`, 503, "service_unavailable"},
		{`{"error":{"message":"m","type":"invalid_request_error","code":"invalid_api_key"}}`, 0, "invalid_request_error"},
		{`{"error":"m"}`, 0, ""},
		{`{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`, 400, "BadRequestError"},
		{`{"object":"error","message":"m","type":"InternalServerError","param":null,"code":500}`, 500, "InternalServerError"},
	}
	o := NewOpenAI(OpenAIConfig{})
	for _, tc := range tests {
		var c openaiChunk
		if err := json.Unmarshal([]byte(tc.body), &c); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		e := c.apiError()
		if e == nil {
			t.Errorf("%s: no error seen", tc.body)
			continue
		}
		if got := openaiErrorStatus(e); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.body, got, tc.status)
		}
		if got := o.apiError(0, e); got.Type != tc.typ || got.Message != "m" {
			t.Errorf("%s: type %q message %q, want %q", tc.body, got.Type, got.Message, tc.typ)
		}
	}
}

// TestOpenAIErrorBodies: the error shapes of other servers, answered
// with an HTTP error or inside a 200.
func TestOpenAIErrorBodies(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		name   string // the provider's name
		step   openaiStep
		want   APIError
		errStr string
	}{
		"OpenRouter: a numeric code is the status, not the type": {
			name:   "openrouter",
			step:   openaiStep{status: 502, file: "error_502_openrouter.json"},
			want:   APIError{Provider: "openrouter", Status: 502, Message: "Provider returned error"},
			errStr: "openrouter: HTTP 502: Provider returned error",
		},
		"Azure: a string code without a type is the type": {
			name: "azure",
			step: openaiStep{status: 404, file: "error_404_azure.json"},
			want: APIError{Provider: "azure", Status: 404, Type: "DeploymentNotFound",
				Message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."},
		},
		"Mistral: the error's fields at the top, the message an object": {
			name: "mistral",
			step: openaiStep{status: 422, file: "error_422_mistral.json"},
			want: APIError{Provider: "mistral", Status: 422, Type: "invalid_request_message_error",
				Message: `{"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required", "input": {"model": "mistral-small-latest"}}]}`},
		},
		"vLLM: the error's fields at the top, HTTP 400": {
			name: "vllm",
			step: openaiStep{status: 400, file: "chat_error_object.json"},
			want: APIError{Provider: "vllm", Status: 400, Type: "BadRequestError",
				Message: "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (1120 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."},
		},
		"vLLM: the error's fields at the top, HTTP 200": {
			name: "vllm",
			step: openaiStep{file: "chat_error_object.json"},
			want: APIError{Provider: "vllm", Status: 400, Type: "BadRequestError",
				Message: "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (1120 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, log := openaiReplay(t, tc.step)
			c := NewOpenAI(OpenAIConfig{Name: tc.name, BaseURL: srv.URL, Retry: RetryPolicy{MaxAttempts: 1}})
			_, err := c.Chat(t.Context(), openaiSimpleRequest())
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if *apiErr != tc.want {
				t.Errorf("APIError %+v\nwant     %+v", *apiErr, tc.want)
			}
			if tc.errStr != "" && err.Error() != tc.errStr {
				t.Errorf("error %q, want %q", err, tc.errStr)
			}
			if n := len(log.all()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// TestOpenAIToolCallWithoutName: a call that never got a name is an
// error naming it, in Chat and in Stream.
func TestOpenAIToolCallWithoutName(t *testing.T) {
	t.Parallel()
	const want = `openai: the answer has a tool call without a name (index 1, id "call_x")`
	t.Run("Chat", func(t *testing.T) {
		t.Parallel()
		srv, _ := openaiReplay(t, openaiStep{file: "chat_tool_no_name.json"})
		got, err := openaiTestClient(srv.URL, "").Chat(t.Context(), openaiSimpleRequest())
		if err == nil || err.Error() != want {
			t.Errorf("got %+v, err %v; want the error %q", got, err, want)
		}
	})
	t.Run("Stream", func(t *testing.T) {
		t.Parallel()
		eachReplayWay(t, func(t *testing.T, way replayWay) {
			srv, log := openaiReplayAs(t, way, openaiStep{file: "stream_tool_no_name.sse"})
			got, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), nil)
			if err == nil || err.Error() != want {
				t.Errorf("got %+v, err %v; want the error %q", got, err, want)
			}
			if n := len(log.all()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	})
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
	eachReplayWay(t, func(t *testing.T, way replayWay) {
		srv, log := openaiReplayAs(t, way, openaiStep{file: "stream_text.sse"})
		stop := errors.New("stop")
		n := 0
		_, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), func(Delta) error {
			n++
			return stop
		})
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("err = %v after %d deltas", err, n)
		}
		var ie *InterruptedError
		if errors.As(err, &ie) {
			t.Errorf("err = %v, want onDelta's error as it is", err)
		}
		if n := len(log.all()); n != 1 {
			t.Errorf("%d requests", n)
		}
	})
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
		frags  []frag
		finish string
		want   []ToolCall
		newIDs []int // calls whose id the client makes
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
		"name and id repeated without arguments after the call is whole": {
			frags: []frag{{index: idx(0), id: "a", name: "f", args: `{"x":1}`}, {index: idx(0), id: "a", name: "f"}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}},
		},
		"empty and invalid arguments": {
			frags: []frag{{index: idx(0), id: "a", name: "f"}, {index: idx(1), id: "b", name: "g", args: `{"x":`}},
			want: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)},
				{ID: "b", Name: "g", Arguments: json.RawMessage(`"{\"x\":"`), Invalid: "the arguments are not valid JSON"}},
		},
		"whole calls at one index without ids": {
			frags: []frag{{index: idx(0), name: "f", args: `{"x":1}`}, {index: idx(0), name: "f", args: `{"x":2}`}, {index: idx(0), name: "g", args: `{}`}},
			want: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "f", Arguments: json.RawMessage(`{"x":2}`)},
				{Name: "g", Arguments: json.RawMessage(`{}`)}},
			newIDs: []int{0, 1, 2},
		},
		"whole calls at one index with one id": {
			frags:  []frag{{index: idx(0), id: "a", name: "f", args: `{"x":1}`}, {index: idx(0), id: "a", name: "f", args: `{"x":2}`}},
			want:   []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "f", Arguments: json.RawMessage(`{"x":2}`)}},
			newIDs: []int{1},
		},
		"whole calls without index nor id": {
			frags:  []frag{{name: "f", args: `{"x":1}`}, {name: "g", args: `{"y":`}, {args: `2}`}},
			want:   []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {Name: "g", Arguments: json.RawMessage(`{"y":2}`)}},
			newIDs: []int{0, 1},
		},
		"a fragment bringing nothing starts nothing": {
			frags: []frag{{index: idx(0), id: "a", name: "f", args: `{}`}, {index: idx(1)}},
			want:  []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}},
		},
		"the output limit marks the last call only": {
			frags:  []frag{{index: idx(0), id: "a", name: "f", args: `{"x":1}`}, {index: idx(1), id: "b", name: "g", args: `{"y":2}`}},
			finish: "length",
			want: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)},
				{ID: "b", Name: "g", Arguments: json.RawMessage(`{"y":2}`), Invalid: "the arguments were cut off by the output limit (max_tokens)"}},
		},
	}
	o := NewOpenAI(OpenAIConfig{})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			acc := newOpenAIStreamAcc()
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
			got, err := o.toolCalls(acc.wireCalls(), tc.finish)
			if err != nil {
				t.Fatal(err)
			}
			openaiCheckResponse(t, &Response{Message: Message{ToolCalls: got}}, Response{Message: Message{ToolCalls: tc.want}}, tc.newIDs)
		})
	}
}

// TestOpenAIWarningsBounded: past ten warnings, the others are counted.
func TestOpenAIWarningsBounded(t *testing.T) {
	t.Parallel()
	acc := newOpenAIStreamAcc()
	for i := range 13 {
		acc.warn(fmt.Sprint("w", i))
	}
	got := acc.partial().Warnings
	if len(got) != 11 || got[0] != "w0" || got[9] != "w9" || got[10] != "skipped 3 more stream events the same way" {
		t.Errorf("warnings %q", got)
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

// TestOpenAIStreamIgnoredByServer: a whole JSON answer to a stream
// request is delivered at once, its thinking before its text.
func TestOpenAIStreamIgnoredByServer(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file   string
		deltas []Delta
	}{
		"text": {
			file:   "chat_text.json",
			deltas: []Delta{{Text: "Hello! How can I help you today?"}},
		},
		"thinking and text": {
			file:   "chat_deepseek_reasoner.json",
			deltas: []Delta{{Thinking: "Compare 9.11 and 9.8: 0.11 < 0.80."}, {Text: "9.11 is smaller than 9.8."}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachReplayWay(t, func(t *testing.T, way replayWay) {
				srv, _ := openaiReplayAs(t, way, openaiStep{file: tc.file})
				var deltas []Delta
				got, err := openaiTestClient(srv.URL, "").Stream(t.Context(), openaiSimpleRequest(), func(d Delta) error {
					deltas = append(deltas, d)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				text := tc.deltas[len(tc.deltas)-1].Text
				if !reflect.DeepEqual(deltas, tc.deltas) || got.Message.Content != text || got.StopReason != "end_turn" {
					t.Errorf("got %+v, deltas %q", got, deltas)
				}
			})
		})
	}
}

// An error object answered with HTTP 200 is retried by Chat like its HTTP
// twin, from the same attempts; a non-retryable one is not.
func TestOpenAIChatErrorBodyRetried(t *testing.T) {
	t.Parallel()
	t.Run("server_error, then an answer", func(t *testing.T) {
		t.Parallel()
		srv, log := openaiReplay(t, openaiStep{file: "error_500.json"}, openaiStep{file: "chat_text.json"})
		c := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Retry: RetryPolicy{BaseDelay: time.Millisecond}})
		resp, err := c.Chat(t.Context(), openaiSimpleRequest())
		if err != nil || resp.Message.Content == "" {
			t.Fatalf("Chat = %+v, %v", resp, err)
		}
		if n := len(log.all()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("server_error until the attempts are spent", func(t *testing.T) {
		t.Parallel()
		srv, log := openaiReplay(t, openaiStep{file: "error_500.json"}, openaiStep{file: "error_500.json"}, openaiStep{file: "error_500.json"})
		c := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}})
		_, err := c.Chat(t.Context(), openaiSimpleRequest())
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 500 {
			t.Fatalf("Chat error = %v, want an APIError of status 500", err)
		}
		if n := len(log.all()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
}

// openaiSent sends req through Chat to a replay server and returns the
// body sent, decoded.
func openaiSent(t *testing.T, req *Request) map[string]any {
	t.Helper()
	srv, log := openaiReplay(t, openaiStep{file: "chat_text.json"})
	if _, err := openaiTestClient(srv.URL, "sk-test").Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(log.all()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// TestOpenAIToolChoice: each choice reaches the body as the API spells
// it; the zero choice, and auto or none without tools, send none.
func TestOpenAIToolChoice(t *testing.T) {
	t.Parallel()
	tools := []Tool{{Name: "read_file"}, {Name: "list_dir"}}
	tests := map[string]struct {
		choice ToolChoice
		tools  []Tool
		want   any // nil: no tool_choice
	}{
		"zero":           {ToolChoice{}, tools, nil},
		"auto":           {ToolChoice{Mode: ToolChoiceAuto}, tools, "auto"},
		"none":           {ToolChoice{Mode: ToolChoiceNone}, tools, "none"},
		"required":       {ToolChoice{Mode: ToolChoiceRequired}, tools, "required"},
		"named":          {UseTool("list_dir"), tools, map[string]any{"type": "function", "function": map[string]any{"name": "list_dir"}}},
		"auto, no tools": {ToolChoice{Mode: ToolChoiceAuto}, nil, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := openaiSimpleRequest()
			req.Tools, req.ToolChoice = tc.tools, tc.choice
			got, ok := openaiSent(t, req)["tool_choice"]
			if tc.want == nil && ok {
				t.Errorf("tool_choice = %v, want none", got)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tool_choice = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOpenAIImages: a user message with images goes as content parts, its
// text then each image as a data URL; a thinking budget, which has no
// equivalent here, is left out of the body.
func TestOpenAIImages(t *testing.T) {
	t.Parallel()
	req := openaiSimpleRequest()
	req.ThinkingBudget = 2048
	req.Messages = []Message{
		{Role: RoleUser, Content: "What is this?", Images: []Image{{Data: []byte("\xff\xd8\xff\xe0\x00\x10JFIF")}}},
		{Role: RoleAssistant, Content: "A JPEG."},
		{Role: RoleUser, Images: []Image{{MediaType: "image/webp", Data: []byte("RIFF\x1a\x00\x00\x00WEBPVP8L")}}},
	}
	body := openaiSent(t, req)
	want := `[
		{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQSkZJRg=="}}]},
		{"role":"assistant","content":"A JPEG."},
		{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRhoAAABXRUJQVlA4TA=="}}]}]`
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body["messages"], w) {
		t.Errorf("messages = %s\nwant %s", openaiJSON(body["messages"]), want)
	}
	for _, key := range []string{"thinking", "reasoning_effort"} {
		if v, ok := body[key]; ok {
			t.Errorf("%s = %v", key, v)
		}
	}
}

// TestOpenAIToolResultImages: a tool message is text alone, so the
// images of a turn's tool results go in one user message after them,
// each result's after a line naming its call.
func TestOpenAIToolResultImages(t *testing.T) {
	t.Parallel()
	req := openaiSimpleRequest()
	req.Messages = []Message{
		{Role: RoleUser, Content: "Look."},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "shot", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "date", Arguments: json.RawMessage(`{}`)}}},
		{Role: RoleTool, ToolCallID: "a", Content: "a picture:\n[image: 10 bytes, image/gif]", Images: []Image{{Data: []byte("GIF89a\x01\x00\x01\x00")}}},
		{Role: RoleTool, ToolCallID: "b", Content: "Monday"},
		{Role: RoleAssistant, Content: "A dot, on Monday."},
	}
	body := openaiSent(t, req)
	want := `[
		{"role":"user","content":"Look."},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"a","type":"function","function":{"name":"shot","arguments":"{}"}},
			{"id":"b","type":"function","function":{"name":"date","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"a picture:\n[image: 10 bytes, image/gif]"},
		{"role":"tool","tool_call_id":"b","content":"Monday"},
		{"role":"user","content":[{"type":"text","text":"The images of the result of tool call a:"},
			{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlhAQABAA=="}}]},
		{"role":"assistant","content":"A dot, on Monday."}]`
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body["messages"], w) {
		t.Errorf("messages = %s\nwant %s", openaiJSON(body["messages"]), want)
	}
}

// TestOpenAIRequestRefused: a tool choice that does not fit the tools, or
// images the APIs would refuse, are refused before sending, with an
// error that says why.
func TestOpenAIRequestRefused(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		set  func(*Request)
		want string
	}{
		"unknown tool":       {func(r *Request) { r.Tools, r.ToolChoice = []Tool{{Name: "list_dir"}}, UseTool("rm") }, `tool choice names tool "rm", which the request does not offer`},
		"required, no tools": {func(r *Request) { r.ToolChoice = ToolChoice{Mode: ToolChoiceRequired} }, `tool choice "required", but the request offers no tools`},
		"image on an assistant message": {func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, Content: "see", Images: []Image{{Data: []byte("GIF87a")}}})
		}, "message 1 (assistant) has images; only user and tool messages may"},
		"not an image": {func(r *Request) { r.Messages[0].Images = []Image{{Data: []byte("<svg/>")}} }, "the image is not a PNG, JPEG, GIF or WebP image"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, log := openaiReplay(t)
			req := openaiSimpleRequest()
			tc.set(req)
			_, err := openaiTestClient(srv.URL, "sk-test").Chat(t.Context(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "openai: ") {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
			if n := len(log.all()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
