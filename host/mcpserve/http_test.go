package mcpserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/servetest"
	"github.com/agenthost/agenthost/sdk"
)

// testServer is Serve running in-process on a loopback port (see
// newTestServer).
type testServer struct {
	url  string
	reg  *host.ToolRegistry
	wait *waitTool
	stop context.CancelFunc // cancels Serve's context
	done chan struct{}      // closed as Serve returns
	err  error              // what it returned, once done is closed
}

// newTestServer runs Serve with a registry of its own that holds two
// in-process tools, echo and wait; the server stops when the test ends.
func newTestServer(t *testing.T, opts *Options) *testServer {
	t.Helper()
	reg := host.NewToolRegistry(nil)
	echo := sdk.NewTool(sdk.Info{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		})
	if err := reg.Register(echo); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{url: "http://" + ln.Addr().String() + "/mcp", reg: reg, wait: newWaitTool(t, reg), done: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	server := New(reg, opts)
	go func() {
		s.err = server.Serve(ctx, ln)
		close(s.done)
	}()
	t.Cleanup(func() {
		s.wait.open()
		stop()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return s
}

// startHTTPServer runs a testServer and returns its /mcp URL.
func startHTTPServer(t *testing.T, opts *Options) string {
	t.Helper()
	return newTestServer(t, opts).url
}

// waitTool is the test server's tool "wait": each call waits until the
// tool opens, or until its context ends.
type waitTool struct {
	started  chan struct{} // a value as each call starts
	canceled chan struct{} // a value as each call ends by its context
	gate     chan struct{} // closed as the tool opens
	once     sync.Once
}

func newWaitTool(t *testing.T, reg *host.ToolRegistry) *waitTool {
	w := &waitTool{started: make(chan struct{}, 64), canceled: make(chan struct{}, 64), gate: make(chan struct{})}
	// Read-only: a shutdown cancels it at once.
	tool := sdk.NewTool(sdk.Info{Name: "wait", Description: "Wait until the test lets calls go.", Annotations: sdk.Annotations{ReadOnly: true}},
		func(ctx context.Context, _ struct{}) (string, error) {
			w.started <- struct{}{}
			select {
			case <-w.gate:
				return "done", nil
			case <-ctx.Done():
				w.canceled <- struct{}{}
				return "", ctx.Err()
			}
		})
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	return w
}

// open lets every call of the tool, running or to come, return.
func (w *waitTool) open() { w.once.Do(func() { close(w.gate) }) }

// waitStarted waits for n calls to start.
func (w *waitTool) waitStarted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-w.started:
		case <-time.After(10 * time.Second):
			t.Fatal("a call of wait did not start")
		}
	}
}

// httpInitialize opens a session and returns its id.
func httpInitialize(t *testing.T, u string, kv ...string) string {
	t.Helper()
	r := servetest.Send(t, http.MethodPost, u, initializeBody, kv...)
	id := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", r.Status, id, r.Body)
	}
	// The client's half of the handshake.
	if r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id); r.Status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	return id
}

// servedOrRefused is nil for a reply 200 OK, what it was for a 503 (the
// server is at its limit, for now), and poll.Stop of that for any other.
func servedOrRefused(r servetest.Reply) error {
	err := fmt.Errorf("%d %s", r.Status, r.Body)
	switch r.Status {
	case http.StatusOK:
		return nil
	case http.StatusServiceUnavailable:
		return err
	}
	return poll.Stop(err)
}

// wantReply checks a servetest.Reply's status, Content-Type and body exactly.
func wantReply(t *testing.T, name string, got servetest.Reply, status int, contentType, body string) {
	t.Helper()
	if got.Status != status || got.Header.Get("Content-Type") != contentType || got.Body != body {
		t.Errorf("%s: %d %q %q; want %d %q %q", name, got.Status, got.Header.Get("Content-Type"), got.Body, status, contentType, body)
	}
}

const forbiddenOrigin = "forbidden: origin not allowed\n"

func TestMCPHTTPOrigin(t *testing.T) {
	t.Parallel()
	own := startHTTPServer(t, nil)
	listed := startHTTPServer(t, &Options{AllowOrigins: []string{"https://app.example", "http://[::1]:9"}})
	any := startHTTPServer(t, &Options{AllowOrigins: []string{"*"}})
	port := func(u string) string { p, _ := url.Parse(u); return p.Port() }
	p := port(own)

	for name, tc := range map[string]struct {
		url, origin string
		ok          bool
	}{
		"no origin":            {own, "", true},
		"own":                  {own, "http://127.0.0.1:" + p, true},
		"localhost":            {own, "http://localhost:" + p, true},
		"ipv6 loopback":        {own, "http://[::1]:" + p, true},
		"upper case":           {own, "HTTP://LocalHost:" + p, true},
		"other port":           {own, "http://127.0.0.1:1", false},
		"https":                {own, "https://127.0.0.1:" + p, false},
		"rebinding":            {own, "http://attacker.example:" + p, false},
		"null":                 {own, "null", false},
		"garbage":              {own, "not an origin", false},
		"listed":               {listed, "https://app.example", true},
		"listed default port":  {listed, "https://app.example:443", true},
		"listed ipv6":          {listed, "http://[::1]:9", true},
		"listed own still":     {listed, "http://localhost:" + port(listed), true},
		"not listed":           {listed, "http://app.example", false},
		"not listed subdomain": {listed, "https://x.app.example", false},
		"star":                 {any, "http://attacker.example", true},
		"star null":            {any, "null", true},
	} {
		var kv []string
		if tc.origin != "" {
			kv = []string{"Origin", tc.origin}
		}
		r := servetest.Send(t, http.MethodPost, tc.url, initializeBody, kv...)
		if tc.ok {
			if r.Status != http.StatusOK || r.Header.Get("Mcp-Session-Id") == "" {
				t.Errorf("%s: %d %s; want 200 and a session", name, r.Status, r.Body)
			}
			continue
		}
		wantReply(t, name, r, http.StatusForbidden, "text/plain; charset=utf-8", forbiddenOrigin)
	}

	// A refused origin is refused whatever the method.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		r := servetest.Send(t, m, own, "", "Origin", "http://attacker.example", "Mcp-Session-Id", "x")
		wantReply(t, m, r, http.StatusForbidden, "text/plain; charset=utf-8", forbiddenOrigin)
	}
	// The SDK's Host check (DNS rebinding by Host) stays on: a loopback
	// listener refuses a Host that is not a loopback name.
	r := servetest.Send(t, http.MethodPost, own, initializeBody, "Host", "attacker.example:"+p)
	wantReply(t, "Host", r, http.StatusForbidden, "application/json",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Forbidden: invalid Host header \"attacker.example:`+p+`\""}}`+"\n")
}

func TestMCPHTTPErrors(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, nil)
	session := httpInitialize(t, u)
	const jsonType = "application/json"

	for name, tc := range map[string]struct {
		method, body string
		kv           []string
		status       int
		want         string
	}{
		"malformed JSON": {"POST", `{"jsonrpc":"2.0","id":1,`, []string{"Mcp-Session-Id", session}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		"malformed JSON without a session": {"POST", `not json`, nil, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		"not JSON-RPC": {"POST", `{"hello":1}`, []string{"Mcp-Session-Id", session}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message"}}`},
		"empty batch": {"POST", `[]`, []string{"Mcp-Session-Id", session}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an empty batch"}}`},
		"unknown method": {"POST", `{"jsonrpc":"2.0","id":7,"method":"no/such"}`, []string{"Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18"}, 400,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: \"no/such\" unsupported"}}`},
		"no session": {"POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil, 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Bad Request: Mcp-Session-Id header is required"}}`},
		"no session, notification": {"POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Mcp-Session-Id header is required"}}`},
		"unknown session": {"POST", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, []string{"Mcp-Session-Id", "nope"}, 404,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Session not found"}}`},
		"DELETE unknown session": {"DELETE", "", []string{"Mcp-Session-Id", "nope"}, 404,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`},
		"GET without a session": {"GET", "", nil, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: GET requires an Mcp-Session-Id header"}}`},
	} {
		r := servetest.Send(t, tc.method, u, tc.body, tc.kv...)
		wantReply(t, name, r, tc.status, jsonType, tc.want+"\n")
	}

	// The session still works after all that.
	r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `{"jsonrpc":"2.0","id":9,"result":{}}`) {
		t.Errorf("ping: %d %s", r.Status, r.Body)
	}
}

// TestMCPHTTPNotifications checks that a well-formed notification is
// accepted (202, no body) whatever its method, in a session and without
// one, and that the SDK still gets the notifications it knows.
func TestMCPHTTPNotifications(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	u := s.url
	stateless := startHTTPServer(t, &Options{Stateless: true})
	session := httpInitialize(t, u)
	const (
		unknown   = `{"jsonrpc":"2.0","method":"notifications/whatever"}`
		withMeta  = `{"jsonrpc":"2.0","method":"notifications/whatever","params":{"_meta":{"x":1}}}`
		requestNo = `{"jsonrpc":"2.0","method":"tools/list"}` // a request's method, without an id: a notification
		cancelled = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`
		v0618     = "2025-06-18"
	)
	in := []string{"Mcp-Session-Id", session}
	in0618 := []string{"Mcp-Session-Id", session, "Mcp-Protocol-Version", v0618}
	modern := []string{"Mcp-Protocol-Version", newest}
	for name, tc := range map[string]struct {
		url, body string
		kv        []string
	}{
		"unknown":                    {u, unknown, in},
		"unknown, 2025-06-18":        {u, unknown, in0618},
		"unknown with params":        {u, withMeta, in0618},
		"request method":             {u, requestNo, in0618},
		"known":                      {u, cancelled, in0618},
		"batch of unknown":           {u, "[" + unknown + "," + requestNo + "]", in},
		"batch of unknown and known": {u, "[" + unknown + "," + cancelled + "]", in},
		"unknown, modern":            {u, unknown, modern},
		"unknown, stateless":         {stateless, unknown, nil},
		"unknown, stateless 06-18":   {stateless, unknown, []string{"Mcp-Protocol-Version", v0618}},
		"request method, stateless":  {stateless, requestNo, nil},
		"unknown, stateless modern":  {stateless, unknown, modern},
		"batch, stateless":           {stateless, "[" + unknown + "," + cancelled + "]", nil},
	} {
		wantReply(t, name, servetest.Send(t, http.MethodPost, tc.url, tc.body, tc.kv...), http.StatusAccepted, "", "")
	}

	// Refused: a malformed notification, and what the request itself
	// gets refused for, whatever the notifications.
	for name, tc := range map[string]struct {
		url, body string
		kv        []string
		status    int
		want      string
	}{
		"no version": {u, `{"method":"notifications/whatever"}`, in, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message"}}`},
		"null id": {u, `{"jsonrpc":"2.0","id":null,"method":"notifications/whatever"}`, in, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an id must be a string or an integer"}}`},
		"empty method": {u, `{"jsonrpc":"2.0","method":""}`, in, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message"}}`},
		"method and result": {u, `{"jsonrpc":"2.0","method":"notifications/whatever","result":{}}`, in, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message"}}`},
		"scalar params": {stateless, `{"jsonrpc":"2.0","method":"notifications/whatever","params":5}`, nil, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: params must be an object"}}`},
		"malformed in a batch": {u, "[" + unknown + `,{"jsonrpc":"2.0","method":"x","params":[1]}]`, in, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: params must be an object"}}`},
		"known without its params": {u, `{"jsonrpc":"2.0","method":"notifications/progress"}`, in0618, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: missing required \"params\""}}`},
		"unknown session": {u, unknown, []string{"Mcp-Session-Id", "nope"}, 404,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`},
		"no session": {u, unknown, nil, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Mcp-Session-Id header is required"}}`},
		"batch in 2025-06-18": {u, "[" + unknown + "]", in0618, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batching is not supported in 2025-06-18 and later (request version: 2025-06-18)"}}`},
		"unsupported version": {stateless, unknown, []string{"Mcp-Protocol-Version", "1999-01-01"}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Unsupported protocol version (supported versions: ` + strings.Join(mcp.SupportedProtocolVersions(), ",") + `)"}}`},
	} {
		wantReply(t, name, servetest.Send(t, http.MethodPost, tc.url, tc.body, tc.kv...), tc.status, "application/json", tc.want+"\n")
	}

	// A batch with a call: the call is answered, the unknown notification
	// ignored.
	r := servetest.Send(t, http.MethodPost, u, "["+unknown+`,{"jsonrpc":"2.0","id":4,"method":"ping"}]`, in...)
	wantReply(t, "batch with a call", r, http.StatusOK, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n")
	// A batch reaches the SDK whole.
	r = servetest.Send(t, http.MethodPost, u, `[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`, in...)
	wantOK(t, "batch of calls", r, `{"jsonrpc":"2.0","id":5,"result":{}}`)
	wantOK(t, "batch of calls", r, `{"jsonrpc":"2.0","id":6,"result":{}}`)

	// The SDK gets the notifications it knows from a batch with unknown
	// ones: notifications/cancelled cancels a call.
	go servetest.Do(t.Context(), http.MethodPost, u, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, in...)
	s.wait.waitStarted(t, 1)
	r = servetest.Send(t, http.MethodPost, u, "["+unknown+`,{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}]`, in...)
	wantReply(t, "cancel in a batch", r, http.StatusAccepted, "", "")
	select {
	case <-s.wait.canceled:
	case <-time.After(10 * time.Second):
		t.Error("notifications/cancelled in a batch did not cancel the call")
	}

	// The session goes on.
	r = servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, in0618...)
	wantOK(t, "ping", r, `{"jsonrpc":"2.0","id":9,"result":{}}`)
}

func TestMCPHTTPSessionLimit(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, &Options{MaxSessions: 3})
	var ids []string
	for range 3 {
		ids = append(ids, httpInitialize(t, u))
	}
	full := `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"server is at its limit of 3 sessions and requests in flight; retry later"}}` + "\n"
	r := servetest.Send(t, http.MethodPost, u, initializeBody)
	wantReply(t, "over the limit", r, http.StatusServiceUnavailable, "application/json", full)
	if got := r.Header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After %q", got)
	}
	// Open sessions go on.
	if r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", ids[0], "Mcp-Protocol-Version", "2025-06-18"); r.Status != http.StatusOK {
		t.Errorf("tools/list in an open session: %d %s", r.Status, r.Body)
	}

	if r := servetest.Send(t, http.MethodDelete, u, "", "Mcp-Session-Id", ids[1]); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	// The slot frees as the session ends, just after the DELETE.
	poll.Eventually(t, 5*time.Second, "initialize succeeds after a DELETE", func() error {
		return servedOrRefused(servetest.Send(t, http.MethodPost, u, initializeBody))
	})
	wantReply(t, "full again", servetest.Send(t, http.MethodPost, u, initializeBody), http.StatusServiceUnavailable, "application/json", full)
}

// TestMCPHTTPRequestLimit checks that requests in flight without a
// session count with the open sessions against Options.MaxSessions, and free
// their place as they end.
func TestMCPHTTPRequestLimit(t *testing.T) {
	t.Parallel()
	const waitBody = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`
	modernWaitBody := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + newest +
		`","io.modelcontextprotocol/clientCapabilities":{}},"name":"wait","arguments":{}}}`
	modernWait := []string{"Mcp-Protocol-Version", newest, "Mcp-Method", "tools/call", "Mcp-Name", "wait"}
	refused := func(t *testing.T, name string, r servetest.Reply, id string) {
		t.Helper()
		wantReply(t, name, r, http.StatusServiceUnavailable, "application/json", `{"jsonrpc":"2.0","id":`+id+
			`,"error":{"code":-32000,"message":"server is at its limit of 2 sessions and requests in flight; retry later"}}`+"\n")
		if got := r.Header.Get("Retry-After"); got != "30" {
			t.Errorf("%s: Retry-After %q", name, got)
		}
	}
	// inFlight sends a request in a goroutine; its reply comes on the
	// channel.
	inFlight := func(t *testing.T, u, body string, kv ...string) <-chan servetest.Reply {
		ch := make(chan servetest.Reply, 1)
		go func() {
			r, err := servetest.Do(t.Context(), http.MethodPost, u, body, kv...)
			if err != nil {
				r.Body = err.Error()
			}
			ch <- r
		}()
		return ch
	}
	// freed waits for a request to be served again, once the calls have
	// returned.
	freed := func(t *testing.T, name string, send func() servetest.Reply) {
		t.Helper()
		poll.Eventually(t, 5*time.Second, name+" is served once the calls returned", func() error { return servedOrRefused(send()) })
	}
	wantDone := func(t *testing.T, name string, ch <-chan servetest.Reply) {
		t.Helper()
		select {
		case r := <-ch:
			wantOK(t, name, r, `"text":"done"`)
		case <-time.After(10 * time.Second):
			t.Errorf("%s: no reply", name)
		}
	}

	t.Run("stateless", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, &Options{Stateless: true, MaxSessions: 2})
		legacy := inFlight(t, s.url, waitBody, "Mcp-Protocol-Version", "2025-06-18")
		modern := inFlight(t, s.url, modernWaitBody, modernWait...)
		s.wait.waitStarted(t, 2)

		refused(t, "legacy tools/list", legacySend(t, s.url, "", listBody), "2")
		refused(t, "modern tools/list", modernSend(t, s.url, 7, "tools/list", "", ""), "7")
		refused(t, "initialize", servetest.Send(t, http.MethodPost, s.url, initializeBody), "1")
		refused(t, "notification", servetest.Send(t, http.MethodPost, s.url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`), "null")

		s.wait.open()
		wantDone(t, "legacy call", legacy)
		wantDone(t, "modern call", modern)
		freed(t, "tools/list", func() servetest.Reply { return legacySend(t, s.url, "", listBody) })
		// Both places are free.
		first, second := inFlight(t, s.url, waitBody), inFlight(t, s.url, waitBody)
		wantDone(t, "first call", first)
		wantDone(t, "second call", second)
	})

	t.Run("stateful", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, &Options{MaxSessions: 2})
		session := httpInitialize(t, s.url)
		modern := inFlight(t, s.url, modernWaitBody, modernWait...)
		s.wait.waitStarted(t, 1)

		// One session and one request: no new session, no other request
		// without a session.
		refused(t, "initialize", servetest.Send(t, http.MethodPost, s.url, initializeBody), "1")
		refused(t, "modern tools/list", modernSend(t, s.url, 7, "tools/list", "", ""), "7")
		// A request in the open session is not one more.
		wantOK(t, "tools/list in the session", legacySend(t, s.url, session, listBody), `"name":"echo"`)

		s.wait.open()
		wantDone(t, "modern call", modern)
		freed(t, "initialize", func() servetest.Reply { return servetest.Send(t, http.MethodPost, s.url, initializeBody) })
		refused(t, "modern tools/list with two sessions", modernSend(t, s.url, 8, "tools/list", "", ""), "8")
	})
}

func TestMCPHTTPSessionIdle(t *testing.T) {
	t.Parallel()
	u := startHTTPServer(t, &Options{MaxSessions: 1, SessionIdle: 300 * time.Millisecond})
	id := httpInitialize(t, u)
	if r := servetest.Send(t, http.MethodPost, u, initializeBody); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("second session: %d %s", r.Status, r.Body)
	}
	// The idle session closes, and frees its place for a new one; a
	// request in it would keep it open.
	poll.Eventually(t, 5*time.Second, "a new session opens once the idle one closed", func() error {
		return servedOrRefused(servetest.Send(t, http.MethodPost, u, initializeBody))
	})
	r := servetest.Send(t, http.MethodPost, u, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "Mcp-Session-Id", id)
	wantReply(t, "idle session", r, http.StatusNotFound, "application/json",
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Session not found"}}`+"\n")
}

// sdkGoroutines are the stacks of the goroutines running the SDK's code.
func sdkGoroutines() []string { return goroutines("modelcontextprotocol/go-sdk") }

// goroutines are the stacks of the goroutines whose stack holds s.
func goroutines(s string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var stacks []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, s) {
			stacks = append(stacks, g)
		}
	}
	return stacks
}

// TestMCPHTTPShutdown checks that canceling Serve's context closes
// every session: an open event stream ends cleanly, a call in flight is
// canceled, the server returns well within its shutdown timeout, and the
// sessions' goroutines exit. Not parallel: it counts goroutines.
func TestMCPHTTPShutdown(t *testing.T) {
	before := len(sdkGoroutines())
	s := newTestServer(t, nil)
	session := httpInitialize(t, s.url)
	in := []string{"Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18"}

	// The session's event stream, open.
	stream, err := servetest.Open(t.Context(), http.MethodGet, s.url, "", in...)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %q", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	events := bufio.NewReader(stream.Body)
	if line, err := events.ReadString('\n'); line != ": ok\n" || err != nil {
		t.Fatalf("GET: first line %q, %v", line, err)
	}
	rest := make(chan error, 1)
	go func() {
		data, err := io.ReadAll(events)
		if err == nil && strings.TrimSpace(string(data)) != "" {
			err = fmt.Errorf("unexpected events %q", data)
		}
		rest <- err
	}()

	// A call in flight, in the session.
	call := make(chan error, 1)
	go func() {
		_, err := servetest.Do(t.Context(), http.MethodPost, s.url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, in...)
		call <- err
	}()
	s.wait.waitStarted(t, 1)

	begin := time.Now()
	s.stop()
	select {
	case <-s.done:
		if s.err != nil {
			t.Errorf("Serve: %v", s.err)
		}
		if d := time.Since(begin); d > shutdownTimeout/2 {
			t.Errorf("Serve took %v to return", d)
		}
	case <-time.After(2 * shutdownTimeout):
		t.Fatal("Serve did not return")
	}
	select {
	case err := <-rest:
		if err != nil {
			t.Errorf("the event stream did not end cleanly: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the event stream did not end")
	}
	select {
	case <-s.wait.canceled:
	case <-time.After(5 * time.Second):
		t.Error("the call in flight was not canceled")
	}
	select {
	case <-call:
	case <-time.After(5 * time.Second):
		t.Error("the POST of the call in flight did not end")
	}

	poll.Eventually(t, 5*time.Second, "the SDK's goroutines of the session exit", func() error {
		if after := sdkGoroutines(); len(after) > before {
			return fmt.Errorf("%d goroutines in the SDK before the server, %d after its shutdown:\n%s", before, len(after), strings.Join(after, "\n\n"))
		}
		return nil
	})
}

func TestNormalOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://localhost:8080":   "http://localhost:8080",
		"HTTP://LocalHost:80":     "http://localhost",
		"https://a.example:443/":  "https://a.example",
		"http://[::1]:9":          "http://[::1]:9",
		"vscode-webview://abc123": "vscode-webview://abc123",
		"null":                    "",
		"http://a.example/path":   "",
		"http://u@a.example":      "",
		"a.example:80":            "",
		"http://a.example?q":      "",
	} {
		got, ok := NormalOrigin(in)
		if got != want || ok != (want != "") {
			t.Errorf("NormalOrigin(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
