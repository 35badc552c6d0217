package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/buildinfo"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
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
	if names := servetest.ToolNames(list.Tools); !slices.Contains(names, "echo") {
		t.Errorf("tools %v", names)
	}
	res := servetest.Call(t, cs, "echo", map[string]any{"text": "hi"})
	if got := servetest.Text(t, res); got != "hi" || res.IsError {
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
func modernSend(t *testing.T, u string, id int, method, name, params string) servetest.Reply {
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
	return servetest.Send(t, http.MethodPost, u, string(body), kv...)
}

// legacySend sends one request of a session of protocol 2025-06-18 (no
// session with an empty id).
func legacySend(t *testing.T, u, session, body string) servetest.Reply {
	t.Helper()
	kv := []string{"Mcp-Protocol-Version", "2025-06-18"}
	if session != "" {
		kv = append(kv, "Mcp-Session-Id", session)
	}
	return servetest.Send(t, http.MethodPost, u, body, kv...)
}

const (
	listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	echoBody = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	echoText = `"content":[{"type":"text","text":"hi"}]`
)

// wantOK checks that a request got 200 with want in its body.
func wantOK(t *testing.T, name string, r servetest.Reply, want string) {
	t.Helper()
	if r.Status != http.StatusOK || !strings.Contains(r.Body, want) {
		t.Errorf("%s: %d %s; want 200 with %s", name, r.Status, r.Body, want)
	}
}

// TestMCPHTTPVersions checks that the stateful server serves every
// protocol version the SDK supports: the newest without sessions, the
// older ones in sessions.
func TestMCPHTTPVersions(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, nil)
	checkSDKClient(t, u)

	r := modernSend(t, u, 1, "server/discover", "", "")
	for _, v := range mcp.SupportedProtocolVersions() {
		wantOK(t, "server/discover", r, `"`+v+`"`)
	}
	wantOK(t, "modern tools/list", modernSend(t, u, 2, "tools/list", "", ""), `"name":"echo"`)
	r = modernSend(t, u, 3, "tools/call", "echo", `"name":"echo","arguments":{"text":"hi"}`)
	wantOK(t, "modern tools/call", r, echoText)
	wantOK(t, "modern tools/call", r, `"resultType":"complete"`)
	if id := r.Header.Get(sessionIDHeader); id != "" {
		t.Errorf("a modern request got session %q", id)
	}

	// An older version still gets a session, and only in it is served.
	session := httpInitialize(t, u, "Mcp-Protocol-Version", "2025-06-18")
	wantOK(t, "legacy tools/list", legacySend(t, u, session, listBody), `"name":"echo"`)
	r = legacySend(t, u, session, echoBody)
	wantOK(t, "legacy tools/call", r, echoText)
	if strings.Contains(r.Body, "resultType") {
		t.Errorf("legacy tools/call has a resultType: %s", r.Body)
	}
	wantReply(t, "legacy without a session", legacySend(t, u, "", listBody), http.StatusBadRequest, "application/json",
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Bad Request: Mcp-Session-Id header is required"}}`+"\n")
}

// TestMCPHTTPStateless checks Options.Stateless: every version served, no
// sessions.
func TestMCPHTTPStateless(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, &Options{Stateless: true})
	checkSDKClient(t, u)

	r := servetest.Send(t, http.MethodPost, u, initializeBody)
	wantOK(t, "initialize", r, `"protocolVersion":"2025-06-18"`)
	if id := r.Header.Get(sessionIDHeader); id != "" {
		t.Errorf("initialize opened session %q", id)
	}
	wantOK(t, "legacy tools/list", legacySend(t, u, "", listBody), `"name":"echo"`)
	wantOK(t, "legacy tools/call", legacySend(t, u, "", echoBody), echoText)
	wantReply(t, "GET", servetest.Send(t, http.MethodGet, u, ""), http.StatusMethodNotAllowed, "application/json",
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Method Not Allowed"}}`+"\n")
}

// TestMCPHTTPStatelessReplicas sends one client's requests to two
// Stateless servers in turn, as a load balancer would: each answers
// what the other began.
func TestMCPHTTPStatelessReplicas(t *testing.T) {
	t.Parallel()
	replicas := []string{startHTTPServer(t, &Options{Stateless: true}), startHTTPServer(t, &Options{Stateless: true})}
	if replicas[0] == replicas[1] {
		t.Fatal("one replica")
	}

	// Protocol 2025-06-18: the handshake on one, its end on the other.
	wantOK(t, "initialize", servetest.Send(t, http.MethodPost, replicas[0], initializeBody), `"serverInfo":{"name":"agenthost"`)
	if r := legacySend(t, replicas[1], "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.Status != http.StatusAccepted {
		t.Errorf("initialized: %d %s", r.Status, r.Body)
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

// eventStream reads a text/event-stream response: the data of each event
// on events, which is closed at the stream's end, err then saying how it
// ended.
type eventStream struct {
	events chan string
	err    error
}

func readEvents(body io.Reader) *eventStream {
	s := &eventStream{events: make(chan string, 16)}
	go func() {
		defer close(s.events)
		lines := bufio.NewScanner(body)
		var data []string
		for lines.Scan() {
			line := lines.Text()
			switch {
			case line == "" && data != nil:
				s.events <- strings.Join(data, "\n")
				data = nil
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
		s.err = lines.Err()
	}()
	return s
}

// want checks that the stream's next event is exactly data.
func (s *eventStream) want(t *testing.T, what, data string) {
	t.Helper()
	select {
	case got, ok := <-s.events:
		if !ok {
			t.Fatalf("%s: the stream ended (%v); want %s", what, s.err, data)
		}
		if got != data {
			t.Errorf("%s: %s; want %s", what, got, data)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event; want %s", what, data)
	}
}

// wantEnd checks that the stream ends cleanly without another event.
func (s *eventStream) wantEnd(t *testing.T, what string) {
	t.Helper()
	if s.ended(t, what) && s.err != nil {
		t.Errorf("%s: the stream broke: %v", what, s.err)
	}
}

// ended reports whether the stream ended without another event.
func (s *eventStream) ended(t *testing.T, what string) bool {
	t.Helper()
	select {
	case got, ok := <-s.events:
		if ok {
			t.Errorf("%s: event %s; want the end", what, got)
		}
		return !ok
	case <-time.After(10 * time.Second):
		t.Errorf("%s: the stream did not end", what)
		return false
	}
}

// listen opens a subscriptions/listen stream of the newest protocol with
// id, for notifications (the JSON of its notifications member). The
// stream ends with the test, or with cancel.
func listen(t *testing.T, u string, id int, notifications string) (s *eventStream, cancel context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}},"notifications":%s}}`,
		id, newest, notifications)
	resp, err := servetest.Open(ctx, http.MethodPost, u, body, "Mcp-Protocol-Version", newest, "Mcp-Method", "subscriptions/listen")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("subscriptions/listen: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	return readEvents(resp.Body), cancel
}

// Notifications of a subscriptions/listen stream, with id its request's.
func listenAck(id int, notifications string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%d},"notifications":%s}}`, id, notifications)
}

func listChanged(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%d}}}`, id)
}

func listenResult(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agenthost","version":%q},"io.modelcontextprotocol/subscriptionId":%d}}}`, id, buildinfo.Version(), id)
}

// modernTools is the names of the tools a request of the newest protocol
// lists.
func modernTools(t *testing.T, u string) []string {
	t.Helper()
	r := modernSend(t, u, 2, "tools/list", "", "")
	var reply struct {
		Result struct {
			Tools []*mcp.Tool `json:"tools"`
		} `json:"result"`
	}
	_, data, _ := strings.Cut(r.Body, "data: ") // one event
	if r.Status != http.StatusOK || json.Unmarshal([]byte(data), &reply) != nil {
		t.Fatalf("tools/list: %d %s", r.Status, r.Body)
	}
	return servetest.ToolNames(reply.Result.Tools)
}

// TestMCPHTTPListChanged checks that a client of protocol 2026-07-28 or
// later, which has no session, learns of a change of the tool list from
// its subscriptions/listen stream (SEP-2575): the SDK sends
// notifications/tools/list_changed on every open listen stream that asked
// for it, whichever handler serves it.
func TestMCPHTTPListChanged(t *testing.T) {
	t.Parallel()
	const ask = `{"toolsListChanged":true,"promptsListChanged":true}`
	// Only what the server declares is granted: tools, not prompts.
	const granted = `{"toolsListChanged":true}`

	t.Run("stateful", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, nil)
		modern, _ := listen(t, s.url, 5, ask)
		modern.want(t, "acknowledged", listenAck(5, granted))

		// A session's client of 2025-06-18, on its GET stream, alongside.
		session := httpInitialize(t, s.url, "Mcp-Protocol-Version", "2025-06-18")
		resp, err := servetest.Open(t.Context(), http.MethodGet, s.url, "", "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		legacy := readEvents(resp.Body)

		if err := s.reg.Disable("echo"); err != nil {
			t.Fatal(err)
		}
		modern.want(t, "echo disabled", listChanged(5))
		legacy.want(t, "echo disabled, in the session", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
		if names := modernTools(t, s.url); slices.Contains(names, "echo") {
			t.Errorf("tools once echo is disabled: %v", names)
		}

		// Shutdown ends the listen with its result, and the session's
		// stream.
		s.stop()
		modern.want(t, "shutdown", listenResult(5))
		modern.wantEnd(t, "shutdown")
		legacy.wantEnd(t, "shutdown, in the session")
	})

	t.Run("stateless", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, &Options{Stateless: true, MaxSessions: 3})
		first, _ := listen(t, s.url, 5, ask)
		first.want(t, "acknowledged", listenAck(5, granted))
		second, stopSecond := listen(t, s.url, 6, granted)
		second.want(t, "acknowledged", listenAck(6, granted))

		if err := s.reg.Disable("echo"); err != nil {
			t.Fatal(err)
		}
		first.want(t, "echo disabled", listChanged(5))
		second.want(t, "echo disabled", listChanged(6))
		if names := modernTools(t, s.url); slices.Contains(names, "echo") {
			t.Errorf("tools once echo is disabled: %v", names)
		}

		// An open listen holds one of MaxSessions' places, until its
		// client closes it.
		third, _ := listen(t, s.url, 7, granted)
		third.want(t, "acknowledged", listenAck(7, granted))
		r := modernSend(t, s.url, 8, "tools/list", "", "")
		if r.Status != http.StatusServiceUnavailable {
			t.Errorf("tools/list with 3 listens open: %d %s", r.Status, r.Body)
		}
		stopSecond()
		second.ended(t, "closed by its client")
		poll.Eventually(t, 5*time.Second, "tools/list is served once a listen closed", func() error {
			return servedOrRefused(modernSend(t, s.url, 8, "tools/list", "", ""))
		})

		if err := s.reg.Enable("echo"); err != nil {
			t.Fatal(err)
		}
		first.want(t, "echo enabled", listChanged(5))
		third.want(t, "echo enabled", listChanged(7))
		if names := modernTools(t, s.url); !slices.Contains(names, "echo") {
			t.Errorf("tools once echo is enabled again: %v", names)
		}
		s.stop()
		first.want(t, "shutdown", listenResult(5))
		first.wantEnd(t, "shutdown")
	})

	// Without a subscription there is nothing to wait for: the listen ends
	// at once.
	t.Run("nothing asked", func(t *testing.T) {
		t.Parallel()
		u := startHTTPServer(t, nil)
		events, _ := listen(t, u, 5, `{"promptsListChanged":true}`)
		events.want(t, "acknowledged", listenAck(5, `{}`))
		events.want(t, "result", listenResult(5))
		events.wantEnd(t, "result")
	})

	// The SDK's client of the newest protocol opens the listen itself when
	// it has a handler for the notification.
	t.Run("SDK client", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, nil)
		changed := make(chan struct{}, 16)
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		})
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != newest {
			t.Fatalf("negotiated %q; want %q", v, newest)
		}
		// The client does not wait for its listen to be acknowledged:
		// change the list until it hears of a change.
		toggles := 0
		poll.Eventually(t, 10*time.Second, "the client hears notifications/tools/list_changed", func() error {
			toggle := s.reg.Disable
			if toggles%2 == 1 {
				toggle = s.reg.Enable
			}
			toggles++
			if err := toggle("echo"); err != nil {
				return poll.Stop(err)
			}
			select {
			case <-changed:
				return nil
			case <-time.After(200 * time.Millisecond):
				return fmt.Errorf("no notification after %d changes", toggles)
			}
		})
	})
}
