package mcpsource

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
)

// hostileServer connects, offering sampling and elicitation, to
// host/testdata/mcpserver, an MCP server of the Go SDK whose tools
// answer with images and ask, log and report progress during a call.
func hostileServer(t *testing.T) *Session {
	t.Helper()
	_, tr := startStdio(t, plugintest.Binary(t, "./host/testdata/mcpserver"))
	return connect(t, tr, Options{Sampling: true, Elicitation: true})
}

// answering is a Peer of key whose model answers say.
func answering(key any, say string) *Peer {
	return &Peer{Key: key, CreateMessage: func(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "test", Content: []mcp.Content{&mcp.TextContent{Text: say}}}, nil
	}}
}

func callFor(t *testing.T, s *Session, name, args string, peer *Peer) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := s.CallFor(ctx, name, json.RawMessage(args), peer)
	if err != nil {
		t.Fatalf("CallFor(%s): %v", name, err)
	}
	return res
}

// TestResultContent: a result of more than one text has its content as
// the server sent it, beside its text; one of a text alone has none.
func TestResultContent(t *testing.T) {
	s := hostileServer(t)
	res := callFor(t, s, "image", `{}`, nil)
	if res.Text != "a picture:\n[image: 68 bytes, image/png]" || len(res.Content) != 2 {
		t.Fatalf("image: %q with %d parts", res.Text, len(res.Content))
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || len(img.Data) != 68 || img.MIMEType != "image/png" {
		t.Errorf("second part %#v, want the image", res.Content[1])
	}
	if res := callFor(t, s, "echo", `{"text":"hi"}`, nil); res.Content != nil {
		t.Errorf("a plain text has parts: %#v", res.Content)
	}
}

// TestServerRequestsFindTheirClient: a sampling request during a call
// goes to the client in front of the calls in flight when they all have
// the same; with a call of a client that offers no sampling in flight,
// or calls of two clients, the server is told it is not supported.
func TestServerRequestsFindTheirClient(t *testing.T) {
	s := hostileServer(t)
	if got := callFor(t, s, "ask", `{"text":"?"}`, answering("a", "yes")).Text; got != "the model said: yes" {
		t.Errorf("one client in front: %q", got)
	}
	if got := callFor(t, s, "ask", `{"text":"?"}`, nil).Text; !strings.Contains(got, "sampling is not supported here: a call of a client that does not offer it is in flight") {
		t.Errorf("no client in front: %q", got)
	}
	if got := callFor(t, s, "ask", `{"text":"?"}`, &Peer{Key: "a"}).Text; !strings.Contains(got, "sampling is not supported here: the client in front of the call does not offer it") {
		t.Errorf("a client without sampling: %q", got)
	}

	// While a call of client a sleeps, b's call is ambiguous, and another
	// of a's is a's.
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = s.CallFor(ctx, "sleep", json.RawMessage(`{"millis":10000,"started":"`+started+`"}`), answering("a", "from a"))
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	poll.Eventually(t, 5*time.Second, "the sleep starts", func() error {
		_, err := os.Stat(started)
		return err
	})
	if got := callFor(t, s, "ask", `{"text":"?"}`, answering("b", "from b")).Text; !strings.Contains(got, "calls of several clients are in flight") {
		t.Errorf("two clients in front: %q", got)
	}
	if got := callFor(t, s, "ask", `{"text":"?"}`, answering("a", "from a again")).Text; got != "the model said: from a again" {
		t.Errorf("two calls of one client: %q", got)
	}
}

// TestProgressAndLogsFindTheirCall: the server's progress for a call goes
// to its client under a token of the session's, and its log messages too,
// the server asked for messages from the client's level up.
func TestProgressAndLogsFindTheirCall(t *testing.T) {
	s := hostileServer(t)
	var mu sync.Mutex
	var progress []float64
	var tokens []any
	var logs []string
	peer := &Peer{
		Progress: func(p *mcp.ProgressNotificationParams) {
			mu.Lock()
			progress = append(progress, p.Progress)
			tokens = append(tokens, p.ProgressToken)
			mu.Unlock()
		},
		Log: func(p *mcp.LoggingMessageParams) {
			mu.Lock()
			logs = append(logs, string(p.Level))
			mu.Unlock()
		},
		LogLevel: "debug",
	}
	if got := callFor(t, s, "chatter", `{}`, peer).Text; got != "chattered" {
		t.Fatalf("chatter: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(logs, " ") != "debug info warning" {
		t.Errorf("log messages at %q, want debug info warning", logs)
	}
	if len(progress) != 3 || progress[2] != 3 || len(tokens) != 3 || tokens[0] != tokens[2] || !strings.HasPrefix(tokens[0].(string), "agenthost-") {
		t.Errorf("progress %v with tokens %v", progress, tokens)
	}
}
