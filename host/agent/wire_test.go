package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
)

// wireStep is one answer of a model server, in one wire format: a tool
// call (tool set) or a text.
type wireStep struct{ tool, args, text string }

// wireServer answers each request with the next step, as OpenAI's chat
// completions or Anthropic's Messages API would, streamed or not, and
// keeps every request body as it came.
type wireServer struct {
	anthropic bool
	steps     []wireStep

	mu     sync.Mutex
	bodies [][]byte
}

func (s *wireServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if n >= len(s.steps) {
		http.Error(w, `{"error":{"message":"no more answers"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	st := s.steps[n]
	id := fmt.Sprintf("call_%d", n)
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range s.events(st, id) {
			fmt.Fprint(w, ev)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, s.answer(st, id))
}

func quoteJSON(s string) string { b, _ := json.Marshal(s); return string(b) }

// answer is a step as one JSON answer.
func (s *wireServer) answer(st wireStep, id string) string {
	if s.anthropic {
		block := `{"type":"text","text":` + quoteJSON(st.text) + `}`
		stop := "end_turn"
		if st.tool != "" {
			block = `{"type":"tool_use","id":"` + id + `","name":"` + st.tool + `","input":` + st.args + `}`
			stop = "tool_use"
		}
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[` + block + `],"stop_reason":"` + stop +
			`","usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":40,"cache_creation_input_tokens":5}}`
	}
	msg := `{"role":"assistant","content":` + quoteJSON(st.text) + `}`
	finish := "stop"
	if st.tool != "" {
		msg = `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"` + st.tool + `","arguments":` + quoteJSON(st.args) + `}}]}`
		finish = "tool_calls"
	}
	return `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":` + msg + `,"finish_reason":"` + finish +
		`"}],"usage":{"prompt_tokens":50,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":40}}}`
}

// events is a step as a stream.
func (s *wireServer) events(st wireStep, id string) []string {
	if s.anthropic {
		ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
		out := []string{ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":40,"cache_creation_input_tokens":5}}}`)}
		stop := "end_turn"
		if st.tool != "" {
			stop = "tool_use"
			out = append(out,
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"`+id+`","name":"`+st.tool+`","input":{}}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+quoteJSON(st.args)+`}}`))
		} else {
			out = append(out,
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+quoteJSON(st.text)+`}}`))
		}
		return append(out,
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`"},"usage":{"output_tokens":3}}`),
			ev("message_stop", `{"type":"message_stop"}`))
	}
	data := func(s string) string { return "data: " + s + "\n\n" }
	var out []string
	finish := "stop"
	if st.tool != "" {
		finish = "tool_calls"
		out = append(out, data(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"`+id+`","type":"function","function":{"name":"`+st.tool+`","arguments":`+quoteJSON(st.args)+`}}]},"finish_reason":null}]}`))
	} else {
		out = append(out, data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":`+quoteJSON(st.text)+`},"finish_reason":null}]}`))
	}
	return append(out,
		data(`{"choices":[{"index":0,"delta":{},"finish_reason":"`+finish+`"}]}`),
		data(`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":40}}}`),
		data("[DONE]"))
}

func (s *wireServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies
}

func (s *wireServer) provider(t *testing.T) llm.Provider {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	if s.anthropic {
		return llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.URL, APIKey: "k"})
	}
	return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k"})
}

// TestResumeOnTheWire: with each provider's client, streamed and not, a
// conversation saved after its first question and resumed by a new agent
// sends, for the second question, the very request body an agent that
// never stopped sends; the usage, cache reads included, is summed over
// the session across the save.
func TestResumeOnTheWire(t *testing.T) {
	t.Parallel()
	steps := []wireStep{
		{tool: "echo", args: `{"text": "hi"}`},
		{text: "It echoed hi."},
		{text: "Still hi."},
	}
	for _, anthropic := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("anthropic=%v,stream=%v", anthropic, stream), func(t *testing.T) {
				t.Parallel()
				ask := func(a *agent.Agent, q string) {
					t.Helper()
					var err error
					if stream {
						_, err = a.StreamChat(t.Context(), q, nil)
					} else {
						_, err = a.Chat(t.Context(), q)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				newA := func(p llm.Provider) *agent.Agent {
					a := newAgent(t, p, agent.Options{Model: "claude-test", SystemPrompt: "be brief", MaxTokens: 1000})
					if err := a.AddTool(echoTool("echo")); err != nil {
						t.Fatal(err)
					}
					return a
				}
				whole := &wireServer{anthropic: anthropic, steps: steps}
				w := newA(whole.provider(t))
				ask(w, "q1")
				ask(w, "q2")

				first := &wireServer{anthropic: anthropic, steps: steps[:2]}
				a := newA(first.provider(t))
				ask(a, "q1")
				data, err := json.Marshal(a.State())
				if err != nil {
					t.Fatal(err)
				}
				var st agent.State
				if err := json.Unmarshal(data, &st); err != nil {
					t.Fatal(err)
				}
				second := &wireServer{anthropic: anthropic, steps: steps[2:]}
				b := newA(second.provider(t))
				if err := b.Restore(st); err != nil {
					t.Fatal(err)
				}
				ask(b, "q2")

				want, got := whole.requests()[2], second.requests()[0]
				if !bytes.Equal(want, got) {
					t.Errorf("the resumed request body:\n%s\nwant:\n%s", got, want)
				}
				if anthropic && strings.Count(string(got), `"cache_control"`) < 2 {
					t.Errorf("no cache breakpoints in %s", got)
				}
				if u := b.Usage(); u != w.Usage() || u.CacheReadTokens != 3*40 {
					t.Errorf("usage %+v, want %+v with 120 tokens read from the cache", u, w.Usage())
				}
			})
		}
	}
}
