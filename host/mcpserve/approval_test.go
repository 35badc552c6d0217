package mcpserve

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/servetest"
)

// askingProtocol is the latest protocol version in which the server may
// send requests to the client: from 2026-07-28 on it may not, and the
// Go SDK's client speaks that by default.
const askingProtocol = "2025-11-25"

// askBench is a server of a registry whose interceptors are a recorder
// and a policy.Guard in mode ask, over a workspace root of its own.
type askBench struct {
	root string
	reg  *host.ToolRegistry
	srv  *Server

	mu    sync.Mutex
	calls []recorded // what the recorder saw, in order
}

// recorded is a call as the recorder, outside the guard, saw it end.
type recorded struct {
	tool, caller string
	decision     host.Decision
}

func newAskBench(t *testing.T, opts *Options) *askBench {
	t.Helper()
	b := &askBench{root: t.TempDir()}
	guard := policy.NewGuard(nil, policy.Options{Mode: policy.ModeAsk})
	record := func(ctx context.Context, call *host.Call, next host.Handler) host.Result {
		res := next(ctx, call)
		r := recorded{tool: call.Tool, caller: call.Caller}
		if call.Decision != nil {
			r.decision = *call.Decision
		}
		b.mu.Lock()
		b.calls = append(b.calls, r)
		b.mu.Unlock()
		return res
	}
	reg, err := host.NewDefaultToolRegistry(t.Context(), pluginDir(t), &host.Options{
		Roots:        []string{b.root},
		Interceptors: []host.Interceptor{record, guard.Intercept},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	b.reg = reg
	b.srv = New(reg, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.srv.Shutdown(ctx)
	})
	return b
}

// count is how many calls the recorder saw.
func (b *askBench) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// last is the last call the recorder saw.
func (b *askBench) last(t *testing.T) recorded {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.calls) == 0 {
		t.Fatal("the recorder saw no call")
	}
	return b.calls[len(b.calls)-1]
}

// exists reports whether the file name exists in the root.
func (b *askBench) exists(name string) bool {
	_, err := os.Stat(filepath.Join(b.root, name))
	return err == nil
}

// asker is a client's elicitation handler: it answers every request
// with answer, after recording it.
type asker struct {
	answer func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)

	mu    sync.Mutex
	asked []*mcp.ElicitParams
}

func (a *asker) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params)
	a.mu.Unlock()
	return a.answer(ctx, req)
}

func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

func (a *asker) lastParams(t *testing.T) *mcp.ElicitParams {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asked) == 0 {
		t.Fatal("the client was not asked")
	}
	return a.asked[len(a.asked)-1]
}

func answering(action string, content map[string]any) *asker {
	return &asker{answer: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}}
}

// clientOptions are a client's: with a's handler, the elicitation
// capability; without one (a nil a), none.
func clientOptions(a *asker) *mcp.ClientOptions {
	if a == nil {
		return nil
	}
	return &mcp.ClientOptions{ElicitationHandler: a.handle}
}

// connect opens an in-memory session of the bench's server with a
// client named approval-test 1.2 that speaks version.
func (b *askBench) connect(t *testing.T, a *asker, version string) *mcp.ClientSession {
	t.Helper()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := b.srv.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approval-test", Version: "1.2"}, clientOptions(a)).
		Connect(t.Context(), clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// write calls write_file for the file name.
func write(t *testing.T, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	t.Helper()
	return servetest.Call(t, cs, "write_file", map[string]any{"path": name, "content": "hello\n"})
}

// wantDenied checks that a result is the error want and that the file
// was not written.
func (b *askBench) wantDenied(t *testing.T, res *mcp.CallToolResult, name, want string) {
	t.Helper()
	if got := servetest.Text(t, res); !res.IsError || got != want {
		t.Errorf("result %q (isError %v), want %q", got, res.IsError, want)
	}
	if b.exists(name) {
		t.Errorf("%s was written", name)
	}
}

// TestApprovalOverMCP: a call the guard asks about is asked of the MCP
// client, with an elicitation request whose answer decides it.
func TestApprovalOverMCP(t *testing.T) {
	b := newAskBench(t, nil)

	t.Run("approve", func(t *testing.T) {
		a := answering("accept", map[string]any{"decision": "allow"})
		cs := b.connect(t, a, askingProtocol)
		res := write(t, cs, "approved.txt")
		if res.IsError || !b.exists("approved.txt") {
			t.Fatalf("an approved call: %q, file written %v", servetest.Text(t, res), b.exists("approved.txt"))
		}
		p := a.lastParams(t)
		for _, want := range []string{"Tool: write_file (of the plugin fs)\n", "(mode ask)", `|   "path": "approved.txt"`, `|   "content": "hello\n"`} {
			if !strings.Contains(p.Message, want) {
				t.Errorf("the message lacks %q:\n%s", want, p.Message)
			}
		}
		if got := b.last(t).decision; !got.Allowed || got.By != "the user" {
			t.Errorf("decision %+v, want allowed by the user", got)
		}
	})

	t.Run("the form", func(t *testing.T) {
		a := answering("decline", nil)
		cs := b.connect(t, a, askingProtocol)
		write(t, cs, "form.txt")
		p := a.lastParams(t)
		schema, ok := p.RequestedSchema.(map[string]any)
		if !ok || p.Mode != "form" {
			t.Fatalf("mode %q, schema %T", p.Mode, p.RequestedSchema)
		}
		props, _ := schema["properties"].(map[string]any)
		decision, _ := props["decision"].(map[string]any)
		if enum, _ := decision["enum"].([]any); !slices.Equal(enum, []any{"allow", "allow_session", "deny"}) {
			t.Errorf("decision's values %v", decision["enum"])
		}
		if reason, _ := props["reason"].(map[string]any); reason["type"] != "string" {
			t.Errorf("reason %v", props["reason"])
		}
		if req, _ := schema["required"].([]any); !slices.Equal(req, []any{"decision"}) {
			t.Errorf("required %v", schema["required"])
		}
		if !strings.Contains(p.Message, "\"Allow for this session\" also lets later calls of this session that these rules match run without asking:\n| write_file\n") {
			t.Errorf("the message does not name the session's rule:\n%s", p.Message)
		}
	})

	for _, tc := range []struct {
		name, action string
		content      map[string]any
		want         string
	}{
		{"decline", "decline", nil, "Error executing write_file: denied by the user"},
		{"cancel", "cancel", nil, "Error executing write_file: denied by the user"},
		{"deny", "accept", map[string]any{"decision": "deny"}, "Error executing write_file: denied by the user"},
		{"deny with a reason", "accept", map[string]any{"decision": "deny", "reason": "not in this directory"}, "Error executing write_file: denied by the user: not in this directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := answering(tc.action, tc.content)
			cs := b.connect(t, a, askingProtocol)
			b.wantDenied(t, write(t, cs, tc.name+".txt"), tc.name+".txt", tc.want)
			if a.count() != 1 {
				t.Errorf("asked %d times, want once", a.count())
			}
		})
	}

	t.Run("read-only tools are not asked", func(t *testing.T) {
		a := answering("decline", nil)
		cs := b.connect(t, a, askingProtocol)
		if res := servetest.Call(t, cs, "list_dir", nil); res.IsError || a.count() != 0 {
			t.Fatalf("list_dir: %q, asked %d times", servetest.Text(t, res), a.count())
		}
	})

	noOne := `Error executing write_file: needs approval (mode ask) and there is no one here to give it; to let such calls run, add the allow rule "write_file(nobody.txt)" (--allow, or "permissions" in the configuration), or use --approval edits`
	t.Run("a client without elicitation", func(t *testing.T) {
		cs := b.connect(t, nil, askingProtocol)
		b.wantDenied(t, write(t, cs, "nobody.txt"), "nobody.txt", noOne)
	})

	t.Run("protocol 2026-07-28", func(t *testing.T) {
		// The server may not send a request to a client of 2026-07-28.
		a := answering("accept", map[string]any{"decision": "allow"})
		cs := b.connect(t, a, "2026-07-28")
		b.wantDenied(t, write(t, cs, "nobody.txt"), "nobody.txt", noOne)
		if a.count() != 0 {
			t.Errorf("asked %d times", a.count())
		}
	})
}

// TestApprovalSessions: an answer "allow for this session" holds for the
// calls of that session that its rules match, and for no other session.
func TestApprovalSessions(t *testing.T) {
	b := newAskBench(t, nil)
	a1 := answering("accept", map[string]any{"decision": "allow_session"})
	one := b.connect(t, a1, askingProtocol)
	if res := write(t, one, "one.txt"); res.IsError {
		t.Fatalf("allowed for the session: %q", servetest.Text(t, res))
	}
	if res := write(t, one, "two.txt"); res.IsError || a1.count() != 1 || !b.exists("two.txt") {
		t.Fatalf("the session's second call: %q, asked %d times", servetest.Text(t, res), a1.count())
	}
	if got := b.last(t).decision.By; !strings.HasPrefix(got, "the user, for the session") {
		t.Errorf("the second call was let run by %q", got)
	}

	a2 := answering("decline", nil)
	other := b.connect(t, a2, askingProtocol)
	b.wantDenied(t, write(t, other, "three.txt"), "three.txt", "Error executing write_file: denied by the user")
	if a2.count() != 1 {
		t.Errorf("the other session was asked %d times, want once", a2.count())
	}

	// A session that ends takes its answers with it.
	one.Close()
	for deadline := time.Now().Add(10 * time.Second); b.srv.asks.open() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions keep approvals, want the other one", b.srv.asks.open())
		}
	}
}

// TestApprovalNoAnswer: a client that does not answer is denied, and
// its elicitation request is cancelled.
func TestApprovalNoAnswer(t *testing.T) {
	// hang is a handler that answers only once its request is cancelled.
	hang := func(cancelled chan<- struct{}) *asker {
		return &asker{answer: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}}
	}

	t.Run("within ApprovalTimeout", func(t *testing.T) {
		b := newAskBench(t, &Options{ApprovalTimeout: 200 * time.Millisecond})
		cancelled := make(chan struct{})
		cs := b.connect(t, hang(cancelled), askingProtocol)
		b.wantDenied(t, write(t, cs, "late.txt"), "late.txt", "Error executing write_file: denied: the approval failed: the client gave no answer within 200ms")
		waitFor(t, cancelled, "the elicitation request's cancellation")
		if got := b.last(t).decision; got.Allowed || !strings.HasPrefix(got.By, "no answer") {
			t.Errorf("decision %+v", got)
		}
	})

	t.Run("before the call's deadline", func(t *testing.T) {
		// The client gives up its call: the call's context ends, the
		// guard denies it, and the question is cancelled.
		b := newAskBench(t, nil)
		cancelled := make(chan struct{})
		cs := b.connect(t, hang(cancelled), askingProtocol)
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "gone.txt", "content": "x"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the call: %v", err)
		}
		waitFor(t, cancelled, "the elicitation request's cancellation")
		for deadline := time.Now().Add(10 * time.Second); b.count() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the recorder saw no call")
			}
		}
		if got := b.last(t).decision; got.Allowed || !strings.HasPrefix(got.By, "no answer") || b.exists("gone.txt") {
			t.Errorf("decision %+v, file written %v", got, b.exists("gone.txt"))
		}
	})
}

// TestApprovalCaller: the interceptors read whom a call is for.
func TestApprovalCaller(t *testing.T) {
	b := newAskBench(t, nil)
	cs := b.connect(t, nil, askingProtocol)
	servetest.Call(t, cs, "list_dir", nil)
	if got, want := b.last(t).caller, `mcp client "approval-test" 1.2`; got != want {
		t.Errorf("caller %q, want %q", got, want)
	}
	modern := b.connect(t, nil, "2026-07-28")
	servetest.Call(t, modern, "list_dir", nil)
	if got, want := b.last(t).caller, `mcp client "approval-test" 1.2`; got != want {
		t.Errorf("caller of 2026-07-28 %q, want %q", got, want)
	}
}

// TestApprovalOverHTTP: a session over HTTP is asked as one in memory,
// and its caller names the session; a stateless server cannot ask.
func TestApprovalOverHTTP(t *testing.T) {
	serve := func(t *testing.T, opts *Options) (*askBench, string) {
		b := newAskBench(t, opts)
		ts := httptest.NewServer(b.srv.Handler())
		t.Cleanup(ts.Close)
		return b, ts.URL
	}
	connect := func(t *testing.T, u string, a *asker) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "0.9"}, clientOptions(a)).
			Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: u, MaxRetries: 0}, &mcp.ClientSessionOptions{ProtocolVersion: askingProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	t.Run("stateful", func(t *testing.T) {
		b, u := serve(t, nil)
		a := answering("accept", map[string]any{"decision": "allow"})
		cs := connect(t, u, a)
		if res := write(t, cs, "http.txt"); res.IsError || !b.exists("http.txt") || a.count() != 1 {
			t.Fatalf("%q, asked %d times", servetest.Text(t, res), a.count())
		}
		want := `mcp client "http-test" 0.9 (session ` + cs.ID()[:8] + "…)"
		if got := b.last(t).caller; got != want {
			t.Errorf("caller %q, want %q", got, want)
		}
	})

	t.Run("stateless", func(t *testing.T) {
		b, u := serve(t, &Options{Stateless: true})
		a := answering("accept", map[string]any{"decision": "allow"})
		cs := connect(t, u, a)
		res := write(t, cs, "nobody.txt")
		if got := servetest.Text(t, res); !res.IsError || !strings.Contains(got, `there is no one here to give it; to let such calls run, add the allow rule "write_file(nobody.txt)"`) || a.count() != 0 {
			t.Errorf("%q, asked %d times", got, a.count())
		}
		// A stateless request of a version before 2026-07-28 carries no
		// client information: its initialize went to another request.
		if b.exists("nobody.txt") || b.last(t).caller != "mcp client" {
			t.Errorf("written %v, caller %q", b.exists("nobody.txt"), b.last(t).caller)
		}
	})
}

// TestApprovalMessage: what the model wrote is shown plain, bounded, and
// cannot pass for the server's words.
func TestApprovalMessage(t *testing.T) {
	call := &host.Call{Tool: "run_bash", Source: host.PluginPrefix + "bash"}
	hostile := "echo hi\n\x1b[2J\u202eevil\tx\r\nAllow this tool call? It is safe.\n" + strings.Repeat("y", 1000) + "\n" + strings.Repeat("z\n", 100)
	msg := approvalMessage(&policy.Request{Call: call, Why: "mode ask", Preview: hostile, SessionRules: []string{"run_bash(echo:*)"}}, true)
	for _, want := range []string{
		"Tool: run_bash (of the plugin bash)\n",
		"| echo hi\n",
		`| \x1b[2J\u202eevil    x` + "\n",
		"| Allow this tool call? It is safe.\n",
		"| " + strings.Repeat("y", maxLineBytes) + "…\n",
		"more lines not shown]\n",
		"| run_bash(echo:*)\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if strings.ContainsAny(msg, "\x1b\r\u202e") || len(msg) > maxPreviewBytes+2*maxLineBytes+1000 {
		t.Errorf("the message is not plain or too long (%d bytes):\n%s", len(msg), msg)
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "Allow this tool call?") && !strings.HasPrefix(line, "Allow this tool call? agenthost asks") {
			t.Errorf("the model's line passes for the server's: %q", line)
		}
	}
}

// TestApprovalSchema: "allow for this session" is offered only when an
// answer so has rules to remember.
func TestApprovalSchema(t *testing.T) {
	for offer, want := range map[bool][]any{true: {"allow", "allow_session", "deny"}, false: {"allow", "deny"}} {
		decision := approvalSchema(offer)["properties"].(map[string]any)["decision"].(map[string]any)
		if got := decision["enum"].([]any); !slices.Equal(got, want) || len(decision["enumNames"].([]any)) != len(want) {
			t.Errorf("offering the session %v: %v %v", offer, got, decision["enumNames"])
		}
	}
	msg := approvalMessage(&policy.Request{Call: &host.Call{Tool: "run_bash"}, Why: "mode ask", Preview: "$ echo hi > f"}, false)
	if strings.Contains(msg, "Allow for this session") {
		t.Errorf("the message offers the session:\n%s", msg)
	}
}

func TestCallerName(t *testing.T) {
	for _, tc := range []struct {
		info *mcp.Implementation
		id   string
		want string
	}{
		{&mcp.Implementation{Name: "claude-code", Version: "2.1"}, "ab12cd34ef56", `mcp client "claude-code" 2.1 (session ab12cd34…)`},
		{&mcp.Implementation{Name: "x\ny", Version: "1 \x1b"}, "", `mcp client "x\ny" "1 \x1b"`},
		{nil, "short", `mcp client (session short)`},
		{&mcp.Implementation{Name: strings.Repeat("n", 100)}, "", `mcp client "` + strings.Repeat("n", 64) + `…" (100 bytes)`},
	} {
		if got := callerName(tc.info, tc.id); got != tc.want {
			t.Errorf("callerName(%+v, %q) = %q, want %q", tc.info, tc.id, got, tc.want)
		}
	}
}
