package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newest is the newest protocol version the SDK supports, which its
// client negotiates.
var newest = mcp.SupportedProtocolVersions()[0]

// checkSDKClient connects the SDK's client to u, which negotiates the
// newest version, lists the tools and calls echo.
func checkSDKClient(t *testing.T, u string) {
	t.Helper()
	cs, err := connectHTTP(t, u, "")
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != newest {
		t.Errorf("negotiated %q; want %q", v, newest)
	}
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(list.Tools); !slices.Contains(names, "echo") {
		t.Errorf("tools %v", names)
	}
	res := call(t, cs, "echo", map[string]any{"text": "hi"})
	if got := text(t, res); got != "hi" || res.IsError {
		t.Errorf("echo: %q (isError %v)", got, res.IsError)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"resultType":"complete"`) {
		t.Errorf("echo result without resultType: %s", data)
	}
}

// modernSend sends one request of protocol 2026-07-28 or later: params
// with the version in _meta, and the headers the version requires.
func modernSend(t *testing.T, u string, id int, method, name, params string) httpReply {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + newest + `","io.modelcontextprotocol/clientCapabilities":{}}`
	if params != "" {
		meta += "," + params
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage("{" + meta + "}")})
	kv := []string{"Mcp-Protocol-Version", newest, "Mcp-Method", method}
	if name != "" {
		kv = append(kv, "Mcp-Name", name)
	}
	return httpSend(t, http.MethodPost, u, string(body), kv...)
}

// legacySend sends one request of a session of protocol 2025-06-18 (no
// session with an empty id).
func legacySend(t *testing.T, u, session, body string) httpReply {
	t.Helper()
	kv := []string{"Mcp-Protocol-Version", "2025-06-18"}
	if session != "" {
		kv = append(kv, "Mcp-Session-Id", session)
	}
	return httpSend(t, http.MethodPost, u, body, kv...)
}

const (
	listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	echoBody = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	echoText = `"content":[{"type":"text","text":"hi"}]`
)

// wantOK checks that a request got 200 with want in its body.
func wantOK(t *testing.T, name string, r httpReply, want string) {
	t.Helper()
	if r.status != http.StatusOK || !strings.Contains(r.body, want) {
		t.Errorf("%s: %d %s; want 200 with %s", name, r.status, r.body, want)
	}
}

// TestMCPHTTPVersions checks that the stateful server serves every
// protocol version the SDK supports: the newest without sessions, the
// older ones in sessions.
func TestMCPHTTPVersions(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, &mcpFlags{})
	checkSDKClient(t, u)

	r := modernSend(t, u, 1, "server/discover", "", "")
	for _, v := range mcp.SupportedProtocolVersions() {
		wantOK(t, "server/discover", r, `"`+v+`"`)
	}
	wantOK(t, "modern tools/list", modernSend(t, u, 2, "tools/list", "", ""), `"name":"echo"`)
	r = modernSend(t, u, 3, "tools/call", "echo", `"name":"echo","arguments":{"text":"hi"}`)
	wantOK(t, "modern tools/call", r, echoText)
	wantOK(t, "modern tools/call", r, `"resultType":"complete"`)
	if id := r.header.Get(sessionIDHeader); id != "" {
		t.Errorf("a modern request got session %q", id)
	}

	// An older version still gets a session, and only in it is served.
	session := httpInitialize(t, u, "Mcp-Protocol-Version", "2025-06-18")
	wantOK(t, "legacy tools/list", legacySend(t, u, session, listBody), `"name":"echo"`)
	r = legacySend(t, u, session, echoBody)
	wantOK(t, "legacy tools/call", r, echoText)
	if strings.Contains(r.body, "resultType") {
		t.Errorf("legacy tools/call has a resultType: %s", r.body)
	}
	wantReply(t, "legacy without a session", legacySend(t, u, "", listBody), http.StatusBadRequest, "application/json",
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Bad Request: Mcp-Session-Id header is required"}}`+"\n")
}

// TestMCPHTTPStateless checks --stateless: every version served, no
// sessions.
func TestMCPHTTPStateless(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, &mcpFlags{stateless: true})
	checkSDKClient(t, u)

	r := httpSend(t, http.MethodPost, u, initializeBody)
	wantOK(t, "initialize", r, `"protocolVersion":"2025-06-18"`)
	if id := r.header.Get(sessionIDHeader); id != "" {
		t.Errorf("initialize opened session %q", id)
	}
	wantOK(t, "legacy tools/list", legacySend(t, u, "", listBody), `"name":"echo"`)
	wantOK(t, "legacy tools/call", legacySend(t, u, "", echoBody), echoText)
	wantReply(t, "GET", httpSend(t, http.MethodGet, u, ""), http.StatusMethodNotAllowed, "application/json",
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Method Not Allowed"}}`+"\n")
}

// TestMCPHTTPStatelessReplicas sends one client's requests to two
// --stateless servers in turn, as a load balancer would: each answers
// what the other began.
func TestMCPHTTPStatelessReplicas(t *testing.T) {
	t.Parallel()
	replicas := []string{startHTTPServer(t, &mcpFlags{stateless: true}), startHTTPServer(t, &mcpFlags{stateless: true})}
	if replicas[0] == replicas[1] {
		t.Fatal("one replica")
	}

	// Protocol 2025-06-18: the handshake on one, its end on the other.
	wantOK(t, "initialize", httpSend(t, http.MethodPost, replicas[0], initializeBody), `"serverInfo":{"name":"agenthost"`)
	if r := legacySend(t, replicas[1], "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Errorf("initialized: %d %s", r.status, r.body)
	}
	for i := range 4 {
		u := replicas[i%2]
		wantOK(t, "legacy tools/list", legacySend(t, u, "", listBody), `"name":"echo"`)
		wantOK(t, "legacy tools/call", legacySend(t, u, "", echoBody), echoText)
	}

	// The newest protocol: discovery on one, calls on both.
	wantOK(t, "server/discover", modernSend(t, replicas[1], 1, "server/discover", "", ""), `"`+newest+`"`)
	for i := range 4 {
		u := replicas[i%2]
		wantOK(t, "modern tools/list", modernSend(t, u, 2, "tools/list", "", ""), `"name":"echo"`)
		wantOK(t, "modern tools/call", modernSend(t, u, 3, "tools/call", "echo", `"name":"echo","arguments":{"text":"hi"}`), `"resultType":"complete"`)
	}
}
