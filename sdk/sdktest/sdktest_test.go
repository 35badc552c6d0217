package sdktest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/sdktest"
	"github.com/agenthost/agenthost/sdk/sdktest/internal/kit"
)

// syncBuffer is a buffer that the host's log may write while a test reads
// it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The same plugin, served in the test's process and loaded as a binary
// by the host, gives the same answer to every call, each exactly the
// text a model reads.
func TestInProcessAndBinaryAnswerAlike(t *testing.T) {
	t.Parallel()
	bin := sdktest.Build(t, "./testdata/kit")
	root := t.TempDir()
	state := &sdk.State{SystemPrompt: "Be brief.", SessionContext: "We met.", SessionContextFilePath: "/tmp/session.json"}
	cases := []struct{ tool, args, want string }{
		{"greet", `{"name":"Ada"}`, "Hello, Ada."},
		{"greet", `{"name":"Ada","loud":true}`, "HELLO, Ada!"},
		// A typed tool takes null for an optional argument as its
		// absence.
		{"greet", `{"name":"Ada","loud":null}`, "Hello, Ada."},
		{"greet", `{"name":""}`, "Error executing greet: name is empty"},
		{"greet", `{}`, `Error executing greet: invalid arguments: required: missing properties: ["name"]`},
		{"greet", ``, `Error executing greet: invalid arguments: required: missing properties: ["name"]`},
		{"greet", `{"name":"Ada","volume":11}`, `Error executing greet: invalid arguments: unexpected additional properties ["volume"]`},
		{"greet", `{"name":7}`, `Error executing greet: invalid arguments: name: type: 7 has type "integer", want "string"`},
		{"greet", `[1]`, `Error executing greet: invalid arguments: expected a JSON object, got an array`},
		{"greet", `{"name":`, `Error executing greet: invalid arguments: not valid JSON: unexpected end of JSON input`},
		{"boom", `{}`, "Error executing boom: panic: kaboom"},
		{"garbled", `{}`, "Error executing garbled: bad \uFFFD byte"},
		{"wait", `{}`, "Error executing wait: timed out after 100ms"},
		{"state", `{}`, `"Be brief." "We met." "/tmp/session.json"`},
		{"roots", `{}`, root},
		// The host checks the arguments of a tool that does not check
		// them itself, to the letter of its schema.
		{"plain", `{"n":1}`, `plain ran with {"n":1}`},
		{"plain", `{"n":"one"}`, `Error executing plain: invalid arguments: n: type: one has type "string", want "integer"`},
		{"plain", `{"n":1,"s":null}`, `Error executing plain: invalid arguments: s: type: null has type "null", want "string"`},
		{"remove_all", `{}`, "Error: tool not available: remove_all is disabled"},
		{"nope", `{}`, "Error: tool not found: nope"},
	}
	hosts := map[string]func(sdktest.Options) *sdktest.Host{
		"in-process": func(opts sdktest.Options) *sdktest.Host { return sdktest.New(t, kit.Plugin, opts) },
		"binary":     func(opts sdktest.Options) *sdktest.Host { return sdktest.Binary(t, bin, opts) },
	}
	for name, start := range hosts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var log syncBuffer
			h := start(sdktest.Options{Roots: []string{root}, State: state, Log: &log})
			if err := h.Registry().SetTimeout("wait", 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				if got := h.Call(c.tool, c.args); got != c.want {
					t.Errorf("%s %s = %q, want %q", c.tool, c.args, got, c.want)
				}
			}
			// Past the 4 MiB that gRPC allows by default.
			if got := h.Call("big", `{}`); got != strings.Repeat("x", 5<<20) {
				t.Errorf("big: %d bytes, starting %q", len(got), got[:min(len(got), 80)])
			}
			// sdk.Logger's lines reach the host's log.
			if got := log.String(); !strings.Contains(got, "greeting") || !strings.Contains(got, "name=Ada") {
				t.Errorf("the host's log lacks the tool's line:\n%s", got)
			}
			var names []string
			for _, info := range h.Tools() {
				names = append(names, info.Name)
			}
			if want := []string{"greet", "boom", "garbled", "wait", "state", "roots", "big", "remove_all", "plain"}; !slices.Equal(names, want) {
				t.Errorf("Tools() = %v, want %v", names, want)
			}
		})
	}
}

// A host offers the agent's state only when it has one, and a tool reads
// it as it is at the moment it asks.
func TestState(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, kit.Plugin, sdktest.Options{})
	if got, want := h.Call("state", ""), "Error executing state: "+sdk.ErrNoHostState.Error(); got != want {
		t.Errorf("without a state: %q, want %q", got, want)
	}
	h.SetState(&sdk.State{SystemPrompt: "Now."})
	if got, want := h.Call("state", ""), `"Now." "" ""`; got != want {
		t.Errorf("with a state: %q, want %q", got, want)
	}
	h.SetState(nil)
	if got := h.Call("state", ""); !host.IsError(got) {
		t.Errorf("with the state taken away: %q", got)
	}
}

// A test's host has a workspace root of its own unless told otherwise.
func TestDefaultRoot(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, kit.Plugin, sdktest.Options{})
	roots := h.Roots()
	if len(roots) != 1 {
		t.Fatalf("Roots() = %q, want one", roots)
	}
	if info, err := os.Stat(roots[0]); err != nil || !info.IsDir() {
		t.Errorf("the root %s is not a directory: %v", roots[0], err)
	}
	if got := h.Call("roots", ""); got != roots[0] {
		t.Errorf("roots = %q, want %q", got, roots[0])
	}

	rel := sdktest.New(t, kit.Plugin, sdktest.Options{Roots: []string{"testdata", "."}})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rel.Call("roots", ""), filepath.Join(wd, "testdata")+"\n"+wd; got != want {
		t.Errorf("relative roots = %q, want %q", got, want)
	}
}

// An opt-in tool starts disabled, as in the host, and runs once enabled.
func TestOptIn(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, kit.Plugin, sdktest.Options{})
	for _, info := range h.Tools() {
		if info.Name == "remove_all" && (info.Enabled || !info.Annotations.OptIn) {
			t.Errorf("remove_all: %+v", info)
		}
	}
	if err := h.Registry().Enable("remove_all"); err != nil {
		t.Fatal(err)
	}
	if got := h.Call("remove_all", ""); got != "removed" {
		t.Errorf("remove_all once enabled = %q", got)
	}
}

// Cancelling the caller's context cancels the call in the plugin.
func TestCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	wait := sdk.NewTool(sdk.Info{Name: "wait", Description: "Wait."}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	h := sdktest.New(t, sdk.Plugin{Tools: []sdk.Tool{wait}}, sdktest.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	if got, want := h.CallContext(ctx, "wait", ""), "Error executing wait: canceled"; got != want {
		t.Errorf("cancelled call = %q, want %q", got, want)
	}
}

// A tool that ignores its context is abandoned at the deadline: the
// caller gets the timeout.
func TestDeadlineOfAToolThatIgnoresIt(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stuck := sdk.NewTool(sdk.Info{Name: "stuck", Description: "Ignore the deadline."}, func(context.Context, struct{}) (string, error) {
		<-release
		return "too late", nil
	})
	h := sdktest.New(t, sdk.Plugin{Tools: []sdk.Tool{stuck}}, sdktest.Options{Timeout: 50 * time.Millisecond})
	t.Cleanup(func() { close(release) }) // before the host stops
	if got, want := h.Call("stuck", ""), "Error executing stuck: timed out after 50ms"; got != want {
		t.Errorf("stuck = %q, want %q", got, want)
	}
}

// What the host would not load fails the test.
func TestRefused(t *testing.T) {
	t.Parallel()
	tool := func(name, description string) sdk.Tool {
		return sdk.NewTool(sdk.Info{Name: name, Description: description}, func(context.Context, struct{}) (string, error) { return "", nil })
	}
	cases := map[string]struct {
		p    sdk.Plugin
		want string
	}{
		"two tools of one name": {
			sdk.Plugin{Tools: []sdk.Tool{tool("a", ""), tool("a", "")}},
			`sdk.ServePlugin: two tools named "a"`,
		},
		"malformed permissions": {
			sdk.Plugin{Tools: []sdk.Tool{tool("a", "")}, Permissions: sdk.Permissions{Read: []string{"relative/path"}}},
			"sdk.ServePlugin: ",
		},
		"a description over the limit": {
			sdk.Plugin{Tools: []sdk.Tool{tool("a", ""), tool("b", strings.Repeat("d", host.MaxDescriptionSize+1))}},
			"the host refuses tool b: its description is 16385 bytes, more than the 16384 allowed",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, err := sdktest.Start(c.p, sdktest.Options{})
			if err == nil {
				h.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Start: %v, want %q in it", err, c.want)
			}
		})
	}
}
