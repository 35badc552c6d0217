package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/servetest"
)

const waitCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{}}}`

// sendAsync sends a request of the streamable HTTP transport under ctx,
// and returns the channel of its end.
func sendAsync(ctx context.Context, u, body string, kv ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := servetest.Do(ctx, http.MethodPost, u, body, kv...)
		done <- err
	}()
	return done
}

// noCancel fails the test if a call of wait ends by its context within
// a moment.
func noCancel(t *testing.T, w *waitTool, what string) {
	t.Helper()
	select {
	case <-w.canceled:
		t.Errorf("%s was canceled", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestStatelessCallEndsWithItsRequest: with Stateless, the call of a
// client before 2026-07-28 is canceled when the client closes its
// request. A notifications/cancelled, which comes in a request of its
// own that names no session, cancels nothing: not even a call of another
// client that has the id it names.
func TestStatelessCallEndsWithItsRequest(t *testing.T) {
	s := newTestServer(t, &Options{Stateless: true})
	old := []string{"Mcp-Protocol-Version", "2025-11-25"}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	closed := sendAsync(ctx, s.url, waitCall, old...)
	other := sendAsync(t.Context(), s.url, waitCall, old...)
	s.wait.waitStarted(t, 2)

	cancelled := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`
	if r := servetest.Send(t, http.MethodPost, s.url, cancelled, old...); r.Status != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %d %s", r.Status, r.Body)
	}
	noCancel(t, s.wait, "a call, by a notifications/cancelled in a request of its own,")

	cancel() // the client closes the connection
	waitFor(t, s.wait.canceled, "the call whose client closed its request to be canceled")
	<-closed
	noCancel(t, s.wait, "the call of another request")
	s.wait.open()
	if err := <-other; err != nil {
		t.Errorf("the call of another request: %v", err)
	}
}

// TestRequestHeaderIsTheServers: a client cannot tie its call to another
// request's end by sending the header the server numbers stateless
// requests with.
func TestRequestHeaderIsTheServers(t *testing.T) {
	s := newTestServer(t, nil)
	// A request of 2026-07-28, which the stateless handler serves: the
	// server's first, numbered 1.
	meta := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + newest + `","io.modelcontextprotocol/clientCapabilities":{}},"name":"wait","arguments":{}}`
	modern, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": json.RawMessage(meta)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	closed := sendAsync(ctx, s.url, string(modern), "Mcp-Protocol-Version", newest, "Mcp-Method", "tools/call", "Mcp-Name", "wait")
	s.wait.waitStarted(t, 1)

	// A session's call that claims to be that request.
	session := httpInitialize(t, s.url)
	forged := sendAsync(t.Context(), s.url, waitCall, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18", requestHeader, "1")
	s.wait.waitStarted(t, 1)

	cancel()
	waitFor(t, s.wait.canceled, "the call whose client closed its request to be canceled")
	<-closed
	noCancel(t, s.wait, "the session's call that named another request")
	s.wait.open()
	if err := <-forged; err != nil {
		t.Errorf("the session's call: %v", err)
	}
}
