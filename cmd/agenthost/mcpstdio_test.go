package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/plugintest"
)

// rawSession drives agenthost mcp over stdio line by line, as a client
// that writes whatever it likes.
type rawSession struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string
	stderr *plugintest.Buffer
}

// startRaw runs the built binary with agenthost mcp over stdio.
func startRaw(t *testing.T, exe, plugins string) *rawSession {
	t.Helper()
	cmd := exec.Command(exe, "mcp", "--plugins", plugins, "--root", t.TempDir())
	cmd.Env = agenthostEnv()
	s := &rawSession{t: t, lines: make(chan string, 16), stderr: &plugintest.Buffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agenthost mcp: %v\n%s", err, s.stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("agenthost mcp did not end with its stdin\n%s", s.stderr.String())
		}
	})
	return s
}

// send writes one line.
func (s *rawSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("writing %s: %v\n%s", line, err, s.stderr.String())
	}
}

// reply is a JSON-RPC response as it crossed the wire.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// recv reads the next response, skipping notifications.
func (s *rawSession) recv() reply {
	s.t.Helper()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("agenthost mcp closed its stdout\n%s", s.stderr.String())
			}
			var msg struct {
				reply
				Method string `json:"method"`
			}
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				s.t.Fatalf("a line that is not JSON: %v: %q", err, line)
			}
			if msg.Method != "" {
				continue
			}
			return msg.reply
		case <-time.After(10 * time.Second):
			s.t.Fatalf("no answer\n%s", s.stderr.String())
		}
	}
}

// roundTrip sends a line and returns the response to it.
func (s *rawSession) roundTrip(line string) reply {
	s.t.Helper()
	s.send(line)
	return s.recv()
}

// initialize opens the session with the given protocol version.
func (s *rawSession) initialize(version string) {
	s.t.Helper()
	r := s.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	if r.Error != nil || r.Result == nil {
		s.t.Fatalf("initialize %s: %+v", version, r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestMCPStdioProtocolVersions checks that a tools/call result, of an
// offered tool or of one the server does not offer, has what the SDK adds
// for the client's protocol version: resultType from 2026-07-28 on.
func TestMCPStdioProtocolVersions(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	calls := map[string]string{
		"offered":       `{"name":"echo","arguments":{"text":"hi"}%s}`,
		"offered fails": `{"name":"fail","arguments":{"text":"nope"}%s}`,
		"unknown":       `{"name":"nope"%s}`,
		"disabled":      `{"name":"danger","arguments":{}%s}`,
	}
	cases := map[string]struct {
		initialize string // the version of initialize; none for a request's _meta
		meta       string
		resultType bool
	}{
		"2026-07-28, initialized":   {initialize: "2026-07-28", resultType: true},
		"2026-07-28, in each _meta": {meta: "," + modernMeta, resultType: true},
		"2025-11-25":                {initialize: "2025-11-25"},
		"2025-06-18":                {initialize: "2025-06-18"},
		"2025-03-26":                {initialize: "2025-03-26"},
		"2024-11-05":                {initialize: "2024-11-05"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startRaw(t, exe, plugins)
			if tc.initialize != "" {
				s.initialize(tc.initialize)
			}
			keys := map[string][]string{}
			for what, params := range calls {
				r := s.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + fmt.Sprintf(params, tc.meta) + `}`)
				if r.Error != nil || r.Result == nil {
					t.Fatalf("%s: %+v", what, r)
				}
				got, _ := r.Result["resultType"].(string)
				if tc.resultType && got != "complete" || !tc.resultType && r.Result["resultType"] != nil {
					t.Errorf("%s: resultType %v, want it %v", what, r.Result["resultType"], tc.resultType)
				}
				if isErr, _ := r.Result["isError"].(bool); isErr != (what != "offered") {
					t.Errorf("%s: isError %v in %v", what, r.Result["isError"], r.Result)
				}
				keys[what] = slices.Sorted(maps.Keys(r.Result))
			}
			// An error result the server makes itself has the shape of
			// one a tool gives through the SDK.
			for _, what := range []string{"unknown", "disabled"} {
				if !slices.Equal(keys[what], keys["offered fails"]) {
					t.Errorf("%s: members %v, a tool's error result has %v", what, keys[what], keys["offered fails"])
				}
			}
		})
	}
}

// TestMCPStdioUndeclared checks that the methods of capabilities the
// server does not declare are not found, and that the session goes on.
func TestMCPStdioUndeclared(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	s := startRaw(t, exe, plugins)
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	r := s.recv()
	caps, _ := r.Result["capabilities"].(map[string]any)
	if got := slices.Sorted(maps.Keys(caps)); !slices.Equal(got, []string{"tools"}) {
		t.Errorf("capabilities %v, want tools only", caps)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	methods := map[string]string{
		"logging/setLevel":         `{"level":"debug"}`,
		"resources/list":           `{}`,
		"resources/templates/list": `{}`,
		"resources/read":           `{"uri":"file:///etc/passwd"}`,
		"resources/subscribe":      `{"uri":"file:///etc/passwd"}`,
		"resources/unsubscribe":    `{"uri":"file:///etc/passwd"}`,
		"prompts/list":             `{}`,
		"prompts/get":              `{"name":"x"}`,
		"completion/complete":      `{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}`,
	}
	for method, params := range methods {
		r := s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":` + params + `}`)
		if r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %+v, want error -32601", method, r)
		}
	}
	if r := s.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); r.Error != nil || r.Result["tools"] == nil {
		t.Errorf("tools/list after them: %+v", r)
	}
}

// TestMCPStdioMalformed checks that a line that is not a JSON-RPC message
// is answered with a JSON-RPC error whose id is null, and that the session
// goes on: the next request is answered.
func TestMCPStdioMalformed(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	s := startRaw(t, exe, plugins)
	s.initialize("2025-06-18")
	lines := map[string]struct {
		line string
		code int
	}{
		"not JSON":          {`this is not JSON`, -32700},
		"cut short":         {`{"jsonrpc":"2.0","id":1,`, -32700},
		"batch cut short":   {`[1,`, -32700},
		"a number":          {`42`, -32600},
		"not JSON-RPC":      {`{"hello":"world"}`, -32600},
		"another version":   {`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, -32600},
		"method not a text": {`{"jsonrpc":"2.0","id":1,"method":3}`, -32600},
		"empty batch":       {`[]`, -32600},
	}
	for name, tc := range lines {
		r := s.roundTrip(tc.line)
		if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != "null" {
			t.Errorf("%s: id %s, error %+v; want id null, code %d", name, r.ID, r.Error, tc.code)
		}
		if r := s.roundTrip(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`); r.Error != nil || string(r.ID) != "7" {
			t.Fatalf("%s: the next call: %+v", name, r)
		}
	}
}
