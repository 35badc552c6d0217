package mcpsource

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/poll"
)

// A hostile server cannot be one of the reference servers: rawServer is
// written by hand, line by line over pipes, so that it can send what no
// SDK would.

// reply is rawServer's answer to one request.
type reply struct {
	result  string // the raw JSON of the result
	code    int    // with message: a JSON-RPC error instead
	message string
	raw     string // a raw line instead of an answer
	none    bool   // no answer at all
}

// rawServer answers requests with what its answer function says;
// initialize, ping and logging/setLevel have answers of their own unless
// answer gives one.
type rawServer struct {
	answer func(method string, params json.RawMessage) (reply, bool)

	writeMu sync.Mutex
	out     *io.PipeWriter

	mu       sync.Mutex
	received []string // the methods of what the client sent, in order
	levels   []string // the levels logging/setLevel asked for
}

// startRaw starts a rawServer and returns the transport to it.
func startRaw(t *testing.T, answer func(method string, params json.RawMessage) (reply, bool)) (*rawServer, mcp.Transport) {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	srv := &rawServer{answer: answer, out: serverOut}
	go srv.serve(serverIn)
	t.Cleanup(func() {
		serverOut.Close()
		serverIn.Close()
	})
	return srv, Stdio(clientIn, clientOut)
}

func (srv *rawServer) serve(in io.Reader) {
	lines := bufio.NewScanner(in)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(lines.Bytes(), &msg) != nil {
			return
		}
		srv.mu.Lock()
		srv.received = append(srv.received, msg.Method)
		srv.mu.Unlock()
		if msg.ID == nil {
			continue // a notification
		}
		go srv.reply(msg.ID, msg.Method, msg.Params)
	}
}

func (srv *rawServer) reply(id json.RawMessage, method string, params json.RawMessage) {
	r, ok := reply{}, false
	if srv.answer != nil {
		r, ok = srv.answer(method, params)
	}
	if !ok {
		r = reply{}
		switch method {
		case "initialize":
			r.result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"hostile","version":"6.6.6"}}`
		case "logging/setLevel":
			var p struct{ Level string }
			_ = json.Unmarshal(params, &p)
			srv.mu.Lock()
			srv.levels = append(srv.levels, p.Level)
			srv.mu.Unlock()
			r.result = `{}`
		case "ping":
			r.result = `{}`
		default:
			r.code, r.message = -32601, "method not found"
		}
	}
	switch {
	case r.none:
		return
	case r.raw != "":
		srv.send(r.raw)
	case r.message != "":
		srv.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, r.code, r.message))
	default:
		srv.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, r.result))
	}
}

// send writes one line to the client.
func (srv *rawServer) send(line string) {
	srv.writeMu.Lock()
	defer srv.writeMu.Unlock()
	_, _ = io.WriteString(srv.out, line+"\n")
}

// saw reports whether the client sent method.
func (srv *rawServer) saw(method string) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, m := range srv.received {
		if m == method {
			return true
		}
	}
	return false
}

// toolsList answers tools/list with pages: the tools of each page by
// the cursor that asks for it ("" for the first) and the cursor after it.
func toolsList(pages map[string][2]string) func(string, json.RawMessage) (reply, bool) {
	return func(method string, params json.RawMessage) (reply, bool) {
		if method != "tools/list" {
			return reply{}, false
		}
		var p struct{ Cursor string }
		_ = json.Unmarshal(params, &p)
		page, ok := pages[p.Cursor]
		if !ok {
			return reply{code: -32602, message: "no such cursor"}, true
		}
		next := ""
		if page[1] != "" {
			next = fmt.Sprintf(`,"nextCursor":%q`, page[1])
		}
		return reply{result: fmt.Sprintf(`{"tools":%s%s}`, page[0], next)}, true
	}
}

func TestHostileToolLists(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		pages map[string][2]string
		want  string // the tools' names and schemas, or the error
	}{
		"odd tools pass through": {
			pages: map[string][2]string{
				"":   {`[{"description":"no name"},{"name":"string","inputSchema":"string"},{"name":"array","inputSchema":[1,2]},{"name":"null","inputSchema":null}]`, "p2"},
				"p2": {`[{"name":"last","inputSchema":{"type":"object","properties":{"x":{"type":"integer","maximum":9}}}}]`, ""},
			},
			want: `[] {"type":"object"}; [string] "string"; [array] [1,2]; [null] {"type":"object"}; [last] {"properties":{"x":{"maximum":9,"type":"integer"}},"type":"object"}`,
		},
		"a cursor that comes back": {
			pages: map[string][2]string{"": {`[{"name":"a"}]`, "x"}, "x": {`[{"name":"b"}]`, "y"}, "y": {`[]`, "x"}},
			want:  "listing the tools failed: the server sent page 3's cursor before, so its list would never end",
		},
		"the same cursor": {
			pages: map[string][2]string{"": {`[]`, "x"}, "x": {`[]`, "x"}},
			want:  "listing the tools failed: the server sent page 2's cursor before, so its list would never end",
		},
		"too many tools": {
			pages: map[string][2]string{"": {`[` + strings.Repeat(`{"name":"t"},`, maxTools) + `{"name":"t"}]`, ""}},
			want:  "listing the tools failed: the server lists more than 10000 tools",
		},
		"an error answer": {
			pages: map[string][2]string{},
			want:  "listing the tools failed: the server answered: no such cursor (code -32602)",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, tr := startRaw(t, toolsList(tt.pages))
			s := connect(t, tr, Options{})
			tools, err := s.Tools(t.Context())
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				var parts []string
				for _, tool := range tools {
					parts = append(parts, fmt.Sprintf("[%s] %s", tool.Name, tool.InputSchema))
				}
				got = strings.Join(parts, "; ")
			}
			if got != tt.want {
				t.Errorf("Tools:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A list too large to load is not read past the page that shows it:
// pages of 1 MiB descriptions stop at 4 MiB, and 10 tools at 8.
func TestToolListIsJudgedAsItComes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("d", 1<<20)
	srv, tr := startRaw(t, func(method string, params json.RawMessage) (reply, bool) {
		if method != "tools/list" {
			return reply{}, false
		}
		var p struct{ Cursor string }
		_ = json.Unmarshal(params, &p)
		return reply{result: fmt.Sprintf(`{"tools":[{"name":"t%s","description":%q}],"nextCursor":"%s+"}`, p.Cursor, big, p.Cursor)}, true
	})
	s := connect(t, tr, Options{MaxListBytes: 4 << 20})
	_, err := s.Tools(t.Context())
	if err == nil || err.Error() != "listing the tools failed: the server's tools take more than 4194304 bytes (names, descriptions and schemas), by page 4" {
		t.Errorf("err = %v", err)
	}
	srv.mu.Lock()
	asked := strings.Count(strings.Join(srv.received, " "), "tools/list")
	srv.mu.Unlock()
	if asked != 4 {
		t.Errorf("the client asked for %d pages, want 4", asked)
	}

	_, tr = startRaw(t, toolsList(map[string][2]string{"": {`[` + strings.Repeat(`{"name":"t"},`, 8) + `{"name":"t"}]`, "x"}, "x": {`[]`, ""}}))
	s = connect(t, tr, Options{MaxTools: 8})
	if _, err := s.Tools(t.Context()); err == nil || err.Error() != "listing the tools failed: the server lists more than 8 tools" {
		t.Errorf("err = %v", err)
	}
}

func TestEndlessToolList(t *testing.T) {
	t.Parallel()
	_, tr := startRaw(t, func(method string, params json.RawMessage) (reply, bool) {
		if method != "tools/list" {
			return reply{}, false
		}
		var p struct{ Cursor string }
		_ = json.Unmarshal(params, &p)
		return reply{result: fmt.Sprintf(`{"tools":[],"nextCursor":"%s+"}`, p.Cursor)}, true
	})
	s := connect(t, tr, Options{})
	_, err := s.Tools(t.Context())
	if err == nil || err.Error() != "listing the tools failed: the server's list goes on past 1000 pages" {
		t.Errorf("err = %v", err)
	}
}

func TestHostileResults(t *testing.T) {
	t.Parallel()
	results := map[string]reply{
		"huge":         {result: fmt.Sprintf(`{"content":[{"type":"text","text":"%s"}]}`, strings.Repeat("x", 2<<20))},
		"huge-json":    {result: fmt.Sprintf(`{"content":[],"structuredContent":{"x":"%s"}}`, strings.Repeat("x", 2<<20))},
		"video":        {result: `{"content":[{"type":"video","data":"AAAA"}]}`},
		"bad-base64":   {result: `{"content":[{"type":"image","data":"!!!","mimeType":"image/png"}]}`},
		"not-a-result": {result: `"a string"`},
		"failing":      {result: `{"content":[{"type":"text","text":"it broke"}],"isError":true}`},
		"structured":   {result: `{"content":[],"structuredContent":{"b":1,"a":[true]}}`},
		"empty":        {result: `{"content":[]}`},
		"refused":      {code: -32602, message: "invalid params: x is required"},
		"long-refusal": {code: -32000, message: strings.Repeat("é", 5000)},
		"fine":         {result: `{"content":[{"type":"text","text":"fine"}]}`},
	}
	_, tr := startRaw(t, func(method string, params json.RawMessage) (reply, bool) {
		if method != "tools/call" {
			return reply{}, false
		}
		var p struct{ Name string }
		_ = json.Unmarshal(params, &p)
		r, ok := results[p.Name]
		if !ok {
			return reply{code: -32602, message: "unknown tool " + p.Name}, true
		}
		return r, true
	})
	s := connect(t, tr, Options{MaxResult: 1 << 20})

	tests := map[string]struct {
		text    string
		isError bool
		err     string
	}{
		"huge":         {err: "the result is 2097152 bytes of text, more than the limit of 1048576 bytes"},
		"huge-json":    {err: "the result is 2097160 bytes of text, more than the limit of 1048576 bytes"},
		"video":        {err: `the server's answer could not be used: unrecognized content type "video"`},
		"bad-base64":   {err: "the server's answer could not be used: its base64 data is invalid at byte 0"},
		"not-a-result": {err: "the server's answer could not be used: it has a value of the wrong kind"},
		"failing":      {text: "it broke", isError: true},
		"structured":   {text: `{"a":[true],"b":1}`},
		"empty":        {text: ""},
		"refused":      {err: "the server answered: invalid params: x is required (code -32602)"},
		"long-refusal": {err: "the server answered: " + strings.Repeat("é", 2048) + "… (5904 more bytes) (code -32000)"},
		"unknown":      {err: "the server answered: unknown tool unknown (code -32602)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			text, isError, err := s.Call(t.Context(), name, nil)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Errorf("err = %v\nwant %s", err, tt.err)
				}
				return
			}
			if err != nil || text != tt.text || isError != tt.isError {
				t.Errorf("Call = %q, %v, %v; want %q, %v", text, isError, err, tt.text, tt.isError)
			}
		})
	}
	var answer *jsonrpc.Error
	if _, _, err := s.Call(t.Context(), "refused", nil); !errors.As(err, &answer) || answer.Code != -32602 {
		t.Errorf("a refusal is not a JSON-RPC error: %v", err)
	}
	// None of it ended the session.
	if text, _, err := s.Call(t.Context(), "fine", nil); text != "fine" || err != nil {
		t.Errorf("after the hostile results: %q, %v", text, err)
	}
}

func TestArgumentsMustBeAnObject(t *testing.T) {
	t.Parallel()
	srv, tr := startRaw(t, nil)
	s := connect(t, tr, Options{})
	for _, args := range []string{`[1]`, `"x"`, `null`, `{`, `{} {}`} {
		if _, _, err := s.Call(t.Context(), "x", json.RawMessage(args)); err == nil || err.Error() != "the arguments are not a JSON object" {
			t.Errorf("Call with %s: %v", args, err)
		}
	}
	if srv.saw("tools/call") {
		t.Error("a call with bad arguments was sent")
	}
}

func TestGarbageEndsTheSession(t *testing.T) {
	t.Parallel()
	_, tr := startRaw(t, func(method string, _ json.RawMessage) (reply, bool) {
		if method == "tools/call" {
			return reply{raw: "this is not JSON"}, true
		}
		return reply{}, false
	})
	s := connect(t, tr, Options{})
	_, _, err := s.Call(t.Context(), "x", nil)
	var broken *BrokenError
	if !errors.Is(err, mcp.ErrConnectionClosed) || !errors.As(err, &broken) || !strings.HasPrefix(err.Error(), "the server broke the session: the server sent a line that is not a JSON-RPC message: ") {
		t.Errorf("err = %v, want the session broken by the line", err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done is not closed")
	}
}

func TestHandshakeDeadline(t *testing.T) {
	t.Parallel()
	_, tr := startRaw(t, func(string, json.RawMessage) (reply, bool) {
		return reply{none: true}, true
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Connect(ctx, tr, Options{})
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "the handshake with the server failed: the server did not answer before the deadline" {
		t.Errorf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Connect took %v past a 200ms deadline", elapsed)
	}
}

func TestCloseEndsCallsUnderWay(t *testing.T) {
	t.Parallel()
	srv, tr := startRaw(t, func(method string, _ json.RawMessage) (reply, bool) {
		return reply{none: true}, method == "tools/call"
	})
	s := connect(t, tr, Options{})
	errs := make(chan error, 1)
	go func() {
		_, _, err := s.Call(t.Context(), "forever", nil)
		errs <- err
	}()
	poll.Eventually(t, 10*time.Second, "the server sees the call", func() error {
		select {
		case err := <-errs:
			return poll.Stop(fmt.Errorf("the call ended before the server saw it: %v", err))
		default:
		}
		if !srv.saw("tools/call") {
			return errors.New("no tools/call yet")
		}
		return nil
	})
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a call the server never answers")
	}
	err := <-errs
	if !errors.Is(err, mcp.ErrConnectionClosed) || err.Error() != "the session was closed" {
		t.Errorf("err = %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is not closed after Close")
	}
}

// An SSE server that names a message endpoint on another origin does not
// make the host post there: the handshake fails, naming it, and the other
// origin hears nothing.
func TestSSEEndpointOnAnotherOrigin(t *testing.T) {
	t.Parallel()
	var posted atomic.Int32
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
	}))
	defer victim.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?session=1\n\n", victim.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer hostile.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := Connect(ctx, SSE(hostile.URL+"/sse", nil), Options{})
	if err == nil {
		s.Close()
		t.Fatal("the handshake went through")
	}
	var cross *CrossOriginError
	if !errors.As(err, &cross) || !strings.Contains(err.Error(), "the server named "+victim.URL+"/message?session=1, on another origin than its SSE endpoint "+hostile.URL+"/sse: refused") {
		t.Errorf("err = %v, want the other origin named", err)
	}
	if n := posted.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}
