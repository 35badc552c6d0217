package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/wire"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// plainTool is a Tool written by hand, without NewTool. Its schema names
// schemaName when that is set, else name.
type plainTool struct {
	name       string
	schemaName string
	params     string
	ann        *Annotations
	exec       func(ctx context.Context, args json.RawMessage) (string, error)
}

func (p plainTool) Name() string { return p.name }

func (p plainTool) Schema() ChatTool {
	fn := p.schemaName
	if fn == "" {
		fn = p.name
	}
	params := p.params
	if params == "" {
		params = `{"type":"object"}`
	}
	return NewChatTool(fn, "the "+p.name+" tool", json.RawMessage(params))
}

func (p plainTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	if p.exec == nil {
		return p.name + " ran with " + string(args), nil
	}
	return p.exec(ctx, args)
}

// annotatedTool is a plainTool that implements Annotator.
type annotatedTool struct {
	plainTool
	annotations Annotations
}

func (a annotatedTool) Annotations() Annotations { return a.annotations }

var (
	_ Tool      = plainTool{}
	_ Annotator = annotatedTool{}
)

func TestServerDescribe(t *testing.T) {
	t.Parallel()
	typed := NewTool(Info{
		Name:        "typed",
		Description: "A typed tool.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
	}, func(context.Context, typedInput) (string, error) { return "", nil })
	annotated := annotatedTool{
		plainTool:   plainTool{name: "remove", params: `{"type":"object","properties":{"path":{"type":"string"}}}`},
		annotations: Annotations{Destructive: true, OpenWorld: true, OptIn: true},
	}
	plain := plainTool{name: "plain"}
	srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{typed, annotated, plain}})

	resp, err := srv.Describe(t.Context(), &toolv1.DescribeRequest{})
	if err != nil {
		t.Fatalf("Describe error: %v", err)
	}
	if resp.GetProtocolMinor() != wire.ProtocolMinor {
		t.Errorf("ProtocolMinor = %d, want %d", resp.GetProtocolMinor(), wire.ProtocolMinor)
	}
	if want := filepath.Base(os.Args[0]); resp.GetPluginName() != want {
		t.Errorf("PluginName = %q, want %q", resp.GetPluginName(), want)
	}
	if resp.GetPluginVersion() == "" {
		t.Error("PluginVersion is empty")
	}

	type spec struct {
		name, description, params string
		ann                       Annotations // OptIn is the spec's opt_in
		checks                    bool        // checks_arguments
	}
	// Only the typed tool checks its own arguments.
	want := []spec{
		{"typed", "A typed tool.", string(typed.Schema().Function.Parameters), Annotations{ReadOnly: true, Idempotent: true}, true},
		{"remove", "the remove tool", `{"type":"object","properties":{"path":{"type":"string"}}}`, Annotations{Destructive: true, OpenWorld: true, OptIn: true}, false},
		{"plain", "the plain tool", `{"type":"object"}`, Annotations{}, false},
	}
	var got []spec
	for _, s := range resp.GetTools() {
		a := s.GetAnnotations()
		if a == nil {
			t.Errorf("tool %q: Annotations is nil", s.GetName())
		}
		got = append(got, spec{s.GetName(), s.GetDescription(), string(s.GetParametersSchema()), Annotations{
			ReadOnly:    a.GetReadOnly(),
			Destructive: a.GetDestructive(),
			Idempotent:  a.GetIdempotent(),
			OpenWorld:   a.GetOpenWorld(),
			OptIn:       s.GetOptIn(),
		}, s.GetChecksArguments()})
	}
	if len(got) != len(want) {
		t.Fatalf("Describe returned %d tools %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tool %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestServerDescribeNoTools(t *testing.T) {
	t.Parallel()
	resp, err := newServer(hclog.NewNullLogger(), Plugin{}).Describe(t.Context(), &toolv1.DescribeRequest{})
	if err != nil || len(resp.GetTools()) != 0 {
		t.Errorf("Describe of no tools = %v, %v; want no tools, nil", resp.GetTools(), err)
	}
}

func TestServerExecute(t *testing.T) {
	t.Parallel()
	typed := NewTool(Info{Name: "typed"}, func(_ context.Context, in typedInput) (string, error) {
		return "read " + in.Path, nil
	})
	echo := plainTool{name: "echo"}
	fails := plainTool{name: "fails", exec: func(context.Context, json.RawMessage) (string, error) {
		return "ignored", errors.New("disk full")
	}}
	panics := plainTool{name: "panics", exec: func(context.Context, json.RawMessage) (string, error) {
		panic("index out of range")
	}}
	srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{typed, echo, fails, panics}})

	tests := map[string]struct {
		tool, args string
		wantResult string
		wantError  string
	}{
		"typed tool":            {"typed", `{"path":"a.txt"}`, "read a.txt", ""},
		"typed invalid args":    {"typed", `{}`, "", `invalid arguments: required: missing properties: ["path"]`},
		"no arguments are {}":   {"echo", ``, "echo ran with {}", ""},
		"null arguments are {}": {"echo", `null`, "echo ran with {}", ""},
		"arguments pass as is":  {"echo", `{"x":1}`, `echo ran with {"x":1}`, ""},
		"tool error":            {"fails", `{}`, "", "disk full"},
		"tool panic":            {"panics", `{}`, "", "panic: index out of range"},
		"unknown tool":          {"nope", `{}`, "", `this plugin serves no tool named "nope"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: tc.tool, Arguments: []byte(tc.args)})
			if err != nil {
				t.Fatalf("Execute returned a Go error %v; tool failures must travel in the response", err)
			}
			if resp.GetResult() != tc.wantResult || resp.GetError() != tc.wantError {
				t.Errorf("Execute(%s, %s) = {Result: %q, Error: %q}, want {Result: %q, Error: %q}",
					tc.tool, tc.args, resp.GetResult(), resp.GetError(), tc.wantResult, tc.wantError)
			}
		})
	}
}

func TestServerKeepsServingAfterPanic(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	flaky := plainTool{name: "flaky", exec: func(context.Context, json.RawMessage) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			var m map[string]int
			m["boom"] = 1 // a runtime panic, not a string
		}
		return "fine", nil
	}}
	srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{flaky}})
	req := &toolv1.ExecuteRequest{Tool: "flaky"}

	first, err := srv.Execute(t.Context(), req)
	if err != nil {
		t.Fatalf("first call: Go error %v", err)
	}
	if !strings.HasPrefix(first.GetError(), "panic: ") || !strings.Contains(first.GetError(), "nil map") {
		t.Errorf("first call Error = %q, want \"panic: ...nil map...\"", first.GetError())
	}
	second, err := srv.Execute(t.Context(), req)
	if err != nil || second.GetError() != "" || second.GetResult() != "fine" {
		t.Errorf("call after a panic = %+v, %v; want Result \"fine\"", second, err)
	}
}

func TestServerExecuteContext(t *testing.T) {
	t.Parallel()

	t.Run("no host service: no host state", func(t *testing.T) {
		t.Parallel()
		srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{stateTool()}})
		resp, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: "state"})
		if err != nil || resp.GetError() != ErrNoHostState.Error() {
			t.Errorf("Execute = %+v, %v; want Error %q", resp, err, ErrNoHostState)
		}
	})

	t.Run("a host that opened no Host stream: no host state", func(t *testing.T) {
		t.Parallel()
		srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{stateTool()}})
		resp, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: "state", HostServiceId: 7, CallId: 1})
		if err != nil || resp.GetError() != ErrNoHostState.Error() {
			t.Errorf("Execute = %+v, %v; want Error %q", resp, err, ErrNoHostState)
		}
	})

	t.Run("the tool logs through the server's logger", func(t *testing.T) {
		t.Parallel()
		var buf plugintest.Buffer
		logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: &buf, Level: hclog.Trace})
		loud := plainTool{name: "loud", exec: func(ctx context.Context, _ json.RawMessage) (string, error) {
			Logger(ctx).Info("hello from the tool", "answer", 42)
			return "", nil
		}}
		srv := newServer(logger, Plugin{Tools: []Tool{loud}})
		if _, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: "loud"}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{"plugin.loud", "hello from the tool", "answer=42"} {
			if !strings.Contains(out, want) {
				t.Errorf("log output %q does not contain %q", out, want)
			}
		}
	})
}

// stateTool answers with the host's session context, or fails with
// HostState's error.
func stateTool() Tool {
	return plainTool{name: "state", exec: func(ctx context.Context, _ json.RawMessage) (string, error) {
		st, err := HostState(ctx)
		if err != nil {
			return "", err
		}
		return st.SessionContext, nil
	}}
}

func TestNewServerPanics(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		plugin Plugin
		want   string
	}{
		"duplicate names": {
			Plugin{Tools: []Tool{plainTool{name: "dup"}, plainTool{name: "other"}, plainTool{name: "dup"}}},
			`two tools named "dup"`,
		},
		"schema names another function": {
			Plugin{Tools: []Tool{plainTool{name: "real", schemaName: "fake"}}},
			`tool "real" has a schema for function "fake"`,
		},
		"invalid name": {
			Plugin{Tools: []Tool{plainTool{name: "no spaces"}}},
			`invalid tool name "no spaces"`,
		},
		"relative read path": {
			Plugin{Tools: []Tool{plainTool{name: "ok"}}, Permissions: Permissions{Read: []string{".config/x"}}},
			`sdk.ServePlugin: permissions: read path ".config/x" is not absolute and does not start with "~/" or "$TMPDIR"`,
		},
		"relative write path": {
			Plugin{Permissions: Permissions{Write: []string{"TMPDIR/x"}}},
			`sdk.ServePlugin: permissions: write path "TMPDIR/x" is not absolute`,
		},
		"unknown root access": {
			Plugin{Permissions: Permissions{Roots: RootsReadWrite + 1}},
			`sdk.ServePlugin: permissions: unknown root access 4`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := panicMessage(func() { newServer(hclog.NewNullLogger(), tc.plugin) })
			if msg == "" {
				t.Fatal("newServer did not panic")
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("panic %q does not contain %q", msg, tc.want)
			}
		})
	}
}

// describeOverGRPC serves srv on a real gRPC connection, in memory, and
// returns what its Describe answers there.
func describeOverGRPC(t *testing.T, srv *server) *toolv1.DescribeResponse {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := wire.NewServer(nil)
	toolv1.RegisterToolPluginServer(gs, srv)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///plugin",
		append(wire.DialOptions(),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
		)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	resp, err := toolv1.NewToolPluginClient(conn).Describe(t.Context(), &toolv1.DescribeRequest{ProtocolMinor: wire.ProtocolMinor})
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	return resp
}

// The description a plugin serves carries its declaration, across gRPC.
func TestServerDescribePermissions(t *testing.T) {
	t.Parallel()
	tools := []Tool{plainTool{name: "one"}, plainTool{name: "two"}}
	tests := map[string]Permissions{
		"none declared": {},
		"roots only":    {Roots: RootsRead},
		"like bash":     {Roots: RootsReadWrite, Write: []string{"$TMPDIR"}, Exec: true},
		"like session":  {Roots: RootsNone, SessionFile: true},
		"everything": {
			Roots: RootsNone, Read: []string{"/etc/ssl/certs", "~/.config/x"}, Write: []string{"$TMPDIR/cache", "/var/tmp/x"},
			Network: true, Exec: true, SessionFile: true,
		},
	}
	for name, perms := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp := describeOverGRPC(t, newServer(hclog.NewNullLogger(), Plugin{Tools: tools, Permissions: perms}))
			// A plugin of this protocol always sends the field, even to
			// declare nothing.
			if resp.GetPermissions() == nil {
				t.Fatal("the description carries no permissions")
			}
			if got := resp.GetPermissions(); !proto.Equal(got, perms.Proto()) {
				t.Errorf("the description declares %v, want %v", got, perms.Proto())
			}
			if resp.GetProtocolMinor() != wire.ProtocolMinor || len(resp.GetTools()) != len(tools) {
				t.Errorf("the description is %v", resp)
			}
		})
	}

	// Serve, without a declaration, declares nothing.
	resp := describeOverGRPC(t, newServer(hclog.NewNullLogger(), Plugin{Tools: tools}))
	if got := resp.GetPermissions(); !proto.Equal(got, (Permissions{}).Proto()) {
		t.Errorf("a plugin that declares nothing declares %v", got)
	}
}

func TestServerResponsesCrossTheWire(t *testing.T) {
	t.Parallel()
	binary := plainTool{name: "binary", exec: func(context.Context, json.RawMessage) (string, error) {
		return "PNG\x89\xff\xfe", nil
	}}
	badErr := plainTool{name: "bad_error", exec: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("file not found: /tmp/\xff.txt")
	}}
	srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{binary, badErr}})
	for _, name := range []string{"binary", "bad_error"} {
		resp, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: name})
		if err != nil {
			t.Fatalf("%s: Go error %v", name, err)
		}
		if _, err := proto.Marshal(resp); err != nil {
			t.Errorf("%s: the response %+v cannot be sent: %v", name, resp, err)
		}
	}
}

// countedOutput counts how many times it is encoded.
type countedOutput struct {
	N       int `json:"n"`
	encoded *atomic.Int32
}

func (c countedOutput) MarshalJSON() ([]byte, error) {
	c.encoded.Add(1)
	return fmt.Appendf(nil, `{"n":%d}`, c.N), nil
}

// A structured tool's structured result is made and sent only for a call
// whose host wants it: the agent's own calls read the text alone.
func TestServerMakesStructuredResultsOnlyWhenWanted(t *testing.T) {
	t.Parallel()
	var encoded atomic.Int32
	tool := NewStructuredTool(Info{Name: "count"}, func(context.Context, struct{}) (string, countedOutput, error) {
		return "1", countedOutput{N: 1, encoded: &encoded}, nil
	})
	srv := newServer(hclog.NewNullLogger(), Plugin{Tools: []Tool{tool}})

	resp, err := srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: "count"})
	if err != nil || resp.GetResult() != "1" || resp.GetStructuredResult() != nil || encoded.Load() != 0 {
		t.Errorf("a call that does not want it: %v, %v; encoded %d times; want the text alone, encoded never", resp, err, encoded.Load())
	}
	resp, err = srv.Execute(t.Context(), &toolv1.ExecuteRequest{Tool: "count", WantStructured: true})
	if err != nil || resp.GetResult() != "1" || string(resp.GetStructuredResult()) != `{"n":1}` || encoded.Load() != 1 {
		t.Errorf("a call that wants it: %v, %v; encoded %d times; want the text and {\"n\":1}, encoded once", resp, err, encoded.Load())
	}
}
