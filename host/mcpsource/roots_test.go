package mcpsource

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/poll"
)

// rootsServer is a server of the Go SDK that says, through its tool
// roots, the roots its client lists, and counts the client's
// notifications/roots/list_changed on changed.
func rootsServer(t *testing.T, changed chan<- struct{}) *mcp.Server {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "roots", Version: "1"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { changed <- struct{}{} },
	})
	server.AddTool(&mcp.Tool{Name: "roots", InputSchema: emptySchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		caps := req.Session.InitializeParams().Capabilities
		if caps == nil || caps.RootsV2 == nil {
			return textResult("no roots capability"), nil
		}
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		text := "listChanged=" + strconv.FormatBool(caps.RootsV2.ListChanged)
		for _, r := range res.Roots {
			text += "\n" + r.URI + " " + r.Name
		}
		return textResult(text), nil
	})
	return server
}

// The client offers the roots it is given as file:// URIs, declares
// roots with listChanged, and tells the server when they change: the
// server then lists the new ones. A client given no roots declares none.
func TestRootsAreOfferedAndTheirChangesTold(t *testing.T) {
	t.Parallel()
	changed := make(chan struct{}, 10)
	s := connect(t, inMemory(t, rootsServer(t, changed)), Options{Roots: []string{"/work/my project", "/data"}})
	text, _ := call(t, s, "roots", "")
	if want := "listChanged=true\nfile:///data data\nfile:///work/my%20project my project"; text != want {
		t.Errorf("the server sees %q, want %q", text, want)
	}
	if err := s.SetRoots([]string{"/data", "/srv/new"}); err != nil {
		t.Fatal(err)
	}
	// Told once the old root is withdrawn, and again once the new one is
	// offered: the server lists them again each time.
	for i := range 2 {
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("the server was told of %d changes of its roots, want 2", i)
		}
	}
	want := "listChanged=true\nfile:///data data\nfile:///srv/new new"
	poll.Eventually(t, 5*time.Second, "the server lists the new roots", func() error {
		if text, _ = call(t, s, "roots", ""); text != want {
			return fmt.Errorf("it lists %q, want %q", text, want)
		}
		return nil
	})
	if got := s.Roots(); !slices.Equal(got, []string{"/data", "/srv/new"}) {
		t.Errorf("Roots() = %q", got)
	}
	// The same roots again change nothing, and tell nothing.
	if err := s.SetRoots([]string{"/srv/new", "/data"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Error("roots that did not change were told as changed")
	case <-time.After(200 * time.Millisecond):
	}

	plain := connect(t, inMemory(t, rootsServer(t, make(chan struct{}, 10))), Options{})
	if text, _ := call(t, plain, "roots", ""); text != "no roots capability" {
		t.Errorf("without Options.Roots the server sees %q", text)
	}
	if err := plain.SetRoots([]string{"/data"}); err == nil {
		t.Error("SetRoots on a session without roots succeeded")
	}
}

// A server takes its roots as its session begins, and a call made at
// once waits for them: the server asks, is answered, and has them by the
// time the call reaches it, though it takes a moment over them.
func TestFirstCallWaitsForTheRoots(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var have []string
	server := mcp.NewServer(&mcp.Implementation{Name: "slow-roots", Version: "1"}, &mcp.ServerOptions{
		// As a Node server does: asked in the background, while the
		// server reads what comes next.
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			go func() {
				res, err := req.Session.ListRoots(context.Background(), nil)
				if err != nil {
					return
				}
				time.Sleep(10 * time.Millisecond) // resolving the paths
				mu.Lock()
				defer mu.Unlock()
				for _, r := range res.Roots {
					have = append(have, r.URI)
				}
			}()
		},
	})
	server.AddTool(&mcp.Tool{Name: "have", InputSchema: emptySchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return textResult(fmt.Sprint(have)), nil
	})
	s := connect(t, inMemory(t, server), Options{Roots: []string{"/work"}})
	if text, _ := call(t, s, "have", ""); text != "[file:///work]" {
		t.Errorf("the first call found the server with roots %s, want [file:///work]", text)
	}

	// A server that never asks holds a call up for rootsAsk at most.
	start := time.Now()
	quiet := connect(t, inMemory(t, rootsServer(t, make(chan struct{}, 1))), Options{Roots: []string{"/work"}})
	if _, err := quiet.CallResult(t.Context(), "nothing", nil); err == nil {
		t.Error("an unknown tool answered")
	}
	if elapsed := time.Since(start); elapsed > rootsAsk+2*time.Second {
		t.Errorf("the first call waited %v", elapsed)
	}
}
