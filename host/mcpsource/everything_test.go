package mcpsource

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/mcpstdio"
	"github.com/agenthost/agenthost/internal/mcptest"
)

// These tests run the real reference servers from tests/mcp-servers
// (internal/mcptest finds them), started here with os/exec pipes.

// startStdio starts command with args and returns its process and the
// transport to it over its stdin and stdout. The process is killed at
// the test's end.
func startStdio(t *testing.T, command string, args ...string) (*exec.Cmd, mcp.Transport) {
	t.Helper()
	cmd := exec.Command(command, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, Stdio(stdout, stdin)
}

// connect connects over tr, within 20 s, and closes the session at the
// test's end.
func connect(t *testing.T, tr mcp.Transport, opts Options) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s, err := Connect(ctx, tr, opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// call calls name with args within 10 s and fails the test on an error.
func call(t *testing.T, s *Session, name, args string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	text, isError, err := s.Call(ctx, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", name, args, err)
	}
	return text, isError
}

func everything(t *testing.T) (*exec.Cmd, *Session) {
	t.Helper()
	command, args := mcptest.Everything(t)
	cmd, tr := startStdio(t, command, args...)
	return cmd, connect(t, tr, Options{Name: "agenthost", Version: "test"})
}

func TestEverythingOverStdio(t *testing.T) {
	t.Parallel()
	_, s := everything(t)

	name, _, protocol := s.Server()
	if name != "mcp-servers/everything" || protocol != protocolVersion {
		t.Errorf("Server() = %q, protocol %q; want mcp-servers/everything, %s", name, protocol, protocolVersion)
	}

	t.Run("tools", func(t *testing.T) {
		tools, err := s.Tools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		echo := findTool(t, tools, "echo")
		want := Tool{Name: "echo", Title: "Echo Tool", Description: "Echoes back the input string", ReadOnly: true, Idempotent: true}
		got := echo
		got.InputSchema = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("echo = %+v, want %+v", got, want)
		}
		var schema struct {
			Type       string
			Properties map[string]any
			Required   []string
		}
		if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
			t.Fatalf("echo's schema %s: %v", echo.InputSchema, err)
		}
		if schema.Type != "object" || schema.Properties["message"] == nil || !slices.Equal(schema.Required, []string{"message"}) {
			t.Errorf("echo's schema = %s", echo.InputSchema)
		}
		gzip := findTool(t, tools, "gzip-file-as-resource")
		if gzip.ReadOnly || gzip.Destructive || !gzip.OpenWorld {
			t.Errorf("gzip-file-as-resource = %+v, want neither read-only nor destructive, open world", gzip)
		}
	})

	t.Run("text", func(t *testing.T) {
		text, isError := call(t, s, "echo", `{"message":"hello, world"}`)
		if text != "Echo: hello, world" || isError {
			t.Errorf("echo = %q, isError %v", text, isError)
		}
	})

	t.Run("image", func(t *testing.T) {
		text, isError := call(t, s, "get-tiny-image", "")
		want := fmt.Sprintf("Here's the image you requested:\n[image: %d bytes, image/png]\nThe image above is the MCP logo.", tinyImageSize(t))
		if text != want || isError {
			t.Errorf("get-tiny-image = %q, isError %v; want %q", text, isError, want)
		}
	})

	t.Run("resources", func(t *testing.T) {
		text, _ := call(t, s, "get-resource-reference", `{"resourceType":"Blob","resourceId":2}`)
		if !regexp.MustCompile(`\n\[resource: demo://resource/dynamic/blob/2, [1-9]\d* bytes, text/plain\]\n`).MatchString(text) {
			t.Errorf("a blob resource: %q", text)
		}
		text, _ = call(t, s, "get-resource-reference", `{"resourceType":"Text","resourceId":2}`)
		if !strings.Contains(text, "\nResource 2: This is a plaintext resource") {
			t.Errorf("a text resource: %q", text)
		}
		text, _ = call(t, s, "get-resource-links", `{"count":2}`)
		if !strings.Contains(text, "\n[resource link: demo://resource/dynamic/blob/1 (Blob Resource 1), text/plain]\n[resource link: demo://resource/dynamic/text/2 (Text Resource 2), text/plain]") {
			t.Errorf("resource links: %q", text)
		}
	})

	t.Run("error result", func(t *testing.T) {
		// The TypeScript SDK answers invalid arguments, and an unknown
		// tool, with an error result rather than a JSON-RPC error.
		text, isError := call(t, s, "echo", `{}`)
		if !isError || !strings.Contains(text, "Input validation error") {
			t.Errorf("echo without its message = %q, isError %v; want an error result", text, isError)
		}
		text, isError = call(t, s, "no-such-tool", `{}`)
		if !isError || !strings.Contains(text, "no-such-tool not found") {
			t.Errorf("an unknown tool = %q, isError %v; want an error result", text, isError)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := s.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration":5,"steps":5}`))
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Errorf("the call returned %v after its deadline", elapsed-300*time.Millisecond)
		}
		if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "the server did not answer before the deadline" {
			t.Errorf("err = %v, want the deadline", err)
		}
		// The session goes on.
		if text, _ := call(t, s, "echo", `{"message":"still here"}`); text != "Echo: still here" {
			t.Errorf("echo after the deadline = %q", text)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping after the deadline: %v", err)
		}
	})
}

// findTool returns the tool named name.
func findTool(t *testing.T, tools []Tool, name string) Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return Tool{}
}

// tinyImageSize is the size of the image get-tiny-image returns, decoded
// from the server's own source.
func tinyImageSize(t *testing.T) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(mcptest.Dir(t), "node_modules/@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("get-tiny-image.js has no MCP_TINY_IMAGE")
	}
	image, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return len(image)
}

// callWriter is a server's stdin that tells, on sent, once a tools/call
// request has been written to it.
type callWriter struct {
	io.WriteCloser
	sent chan<- struct{}
}

func (w callWriter) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	if err == nil && bytes.Contains(p, []byte(`"method":"tools/call"`)) {
		select {
		case w.sent <- struct{}{}:
		default:
		}
	}
	return n, err
}

func TestServerKilledMidCall(t *testing.T) {
	t.Parallel()
	command, args := mcptest.Everything(t)
	cmd, tr := startStdio(t, command, args...)
	stdio := tr.(*mcpstdio.Transport)
	sent := make(chan struct{}, 1)
	stdio.W = callWriter{stdio.W, sent}
	s := connect(t, tr, Options{Name: "agenthost", Version: "test"})

	errs := make(chan error, 1)
	go func() {
		_, _, err := s.Call(t.Context(), "trigger-long-running-operation", json.RawMessage(`{"duration":30,"steps":30}`))
		errs <- err
	}()
	select {
	case <-sent:
	case err := <-errs:
		t.Fatalf("the call ended before it was sent: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not sent")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, mcp.ErrConnectionClosed) || err.Error() != "the connection to the server is closed" {
			t.Errorf("err = %v, want the connection closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return after the server was killed")
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done is not closed after the server was killed")
	}
	_, _, err := s.Call(t.Context(), "echo", json.RawMessage(`{"message":"x"}`))
	if !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("a call after the end: %v, want the connection closed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after the end: %v", err)
	}
}

func TestEverythingOverHTTP(t *testing.T) {
	t.Parallel()
	url := mcptest.EverythingHTTP(t)
	s := connect(t, HTTP(url, map[string]string{"X-Test": "1"}), Options{Name: "agenthost", Version: "test"})
	if name, _, _ := s.Server(); name != "mcp-servers/everything" {
		t.Errorf("server %q", name)
	}
	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	findTool(t, tools, "echo")
	if text, isError := call(t, s, "echo", `{"message":"over http"}`); text != "Echo: over http" || isError {
		t.Errorf("echo = %q, isError %v", text, isError)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := s.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration":5,"steps":5}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if text, _ := call(t, s, "echo", `{"message":"still here"}`); text != "Echo: still here" {
		t.Errorf("echo after the deadline = %q", text)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is not closed after Close")
	}
}

func TestFilesystemOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	command, args := mcptest.Filesystem(t, dir)
	_, tr := startStdio(t, command, args...)
	s := connect(t, tr, Options{})

	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if write := findTool(t, tools, "write_file"); write.ReadOnly || !write.Destructive {
		t.Errorf("write_file = %+v, want destructive", write)
	}
	args2, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "note.txt")})
	if text, isError := call(t, s, "read_text_file", string(args2)); text != "one\ntwo\n" || isError {
		t.Errorf("read_text_file = %q, isError %v", text, isError)
	}
	outside, _ := json.Marshal(map[string]string{"path": "/etc/hostname"})
	if text, isError := call(t, s, "read_text_file", string(outside)); !isError {
		t.Errorf("read_text_file outside the allowed directory = %q, not an error result", text)
	}
}
