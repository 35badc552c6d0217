package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/servetest"
)

// builtAgenthost returns the agenthost binary and a plugins directory.
func builtAgenthost(t *testing.T) (exe, plugins string) {
	t.Helper()
	plugins = pluginDir(t) // builds every binary the tests need at once
	exe = plugintest.Install(t, t.TempDir(), "agenthost", "./cmd/agenthost")
	return exe, plugins
}

// agenthostEnv is the environment of a built agenthost: no plugins
// directory or token from the test's own environment.
func agenthostEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AGENTHOST_PLUGINS=") || strings.HasPrefix(kv, mcpTokenVar+"=")
	})
	return append(env, extra...)
}

// TestMCPStdio drives the built binary over stdio, and checks that a
// plugin writing to its stdout does not corrupt the protocol.
func TestMCPStdio(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := mcpOverStdio(t, exe, plugins, root)

	if name := cs.InitializeResult().ServerInfo.Name; name != "agenthost" {
		t.Errorf("server name %q", name)
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := servetest.ToolNames(res.Tools); !slices.Contains(names, "read_file") || !slices.Contains(names, "stdout") || slices.Contains(names, "danger") {
		t.Errorf("tools %v", names)
	}
	if got := servetest.Text(t, servetest.Call(t, cs, "read_file", map[string]any{"path": "notes.txt"})); got != "alpha\nbeta\n" {
		t.Errorf("read_file: %q", got)
	}
	for i := range 2 {
		r := servetest.Call(t, cs, "stdout", map[string]any{"text": `{"jsonrpc":"2.0","LEAKED":true}`})
		if got := servetest.Text(t, r); got != "written" || r.IsError {
			t.Errorf("stdout call %d: %q (isError %v)", i, got, r.IsError)
		}
	}
	if got := servetest.Text(t, servetest.Call(t, cs, "echo", map[string]any{"text": "still here"})); got != "still here" {
		t.Errorf("echo after stdout: %q", got)
	}
	if r := servetest.Call(t, cs, "danger", nil); !r.IsError || servetest.Text(t, r) != "Error: tool not available: danger is disabled" {
		t.Errorf("danger: %+v", r)
	}
}

// startHTTP runs the built binary with agenthost mcp --http and returns
// the URL it prints.
func startHTTP(t *testing.T, exe, plugins string, args ...string) (string, *exec.Cmd, *plugintest.Buffer) {
	t.Helper()
	cmd := exec.Command(exe, append([]string{"mcp", "--plugins", plugins, "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = agenthostEnv()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := &plugintest.Buffer{}
	urls := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if u, ok := strings.CutPrefix(line, "listening on "); ok {
				urls <- u
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	select {
	case u := <-urls:
		return u, cmd, stderr
	case <-done:
		t.Fatalf("agenthost mcp --http exited:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no listening line on stderr:\n%s", stderr.String())
	}
	return "", nil, nil
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := &http.Client{}
	if token != "" {
		client.Transport = bearer{token}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: 0}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`

func post(t *testing.T, url, auth string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestMCPHTTP(t *testing.T) {
	exe, plugins := builtAgenthost(t)

	t.Run("token", func(t *testing.T) {
		url, cmd, stderr := startHTTP(t, exe, plugins, "--token", "s3cret")
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			t.Fatalf("url %q", url)
		}
		for auth, want := range map[string]int{
			"":              http.StatusUnauthorized,
			"Bearer wrong":  http.StatusUnauthorized,
			"Basic s3cret":  http.StatusUnauthorized,
			"Bearer s3cret": http.StatusOK,
		} {
			if got := post(t, url, auth); got != want {
				t.Errorf("Authorization %q: status %d, want %d", auth, got, want)
			}
		}
		if _, err := connectHTTP(t, url, ""); err == nil {
			t.Error("connected without the token")
		}
		cs, err := connectHTTP(t, url, "s3cret")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		if got := servetest.Text(t, servetest.Call(t, cs, "echo", map[string]any{"text": "over http"})); got != "over http" {
			t.Errorf("echo: %q", got)
		}
		if r := servetest.Call(t, cs, "nope", nil); !r.IsError || servetest.Text(t, r) != "Error: tool not found: nope" {
			t.Errorf("unknown tool: %+v", r)
		}
		cs.Close()

		// SIGINT shuts the server down cleanly, with an open session.
		if _, err := connectHTTP(t, url, "s3cret"); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("after SIGINT: %v\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Errorf("agenthost mcp --http did not exit after SIGINT\n%s", stderr.String())
		}
	})

	t.Run("no token", func(t *testing.T) {
		url, _, stderr := startHTTP(t, exe, plugins)
		for _, u := range []string{url, strings.TrimSuffix(url, "mcp")} {
			cs, err := connectHTTP(t, u, "")
			if err != nil {
				t.Fatalf("%s: %v\n%s", u, err, stderr.String())
			}
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(servetest.ToolNames(res.Tools), "read_file") {
				t.Errorf("%s: tools %v", u, servetest.ToolNames(res.Tools))
			}
		}
	})

	t.Run("token from the environment", func(t *testing.T) {
		cmd := exec.Command(exe, "mcp", "--plugins", plugins, "--http", "127.0.0.1:0")
		cmd.Env = agenthostEnv(mcpTokenVar + "=envtoken")
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		line, err := bufio.NewReader(pipe).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
		if got := post(t, url, ""); got != http.StatusUnauthorized {
			t.Errorf("without the token: %d", got)
		}
		if got := post(t, url, "Bearer envtoken"); got != http.StatusOK {
			t.Errorf("with the token: %d", got)
		}
	})

	t.Run("non-loopback needs a token", func(t *testing.T) {
		cmd := exec.Command(exe, "mcp", "--plugins", plugins, "--http", "0.0.0.0:0")
		cmd.Env = agenthostEnv()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("exit %v, want status 2\n%s", err, out)
		}
		if !strings.Contains(string(out), "not a loopback address") || !strings.Contains(string(out), "--token") {
			t.Errorf("message: %s", out)
		}
	})
}

func TestMCPFlags(t *testing.T) {
	t.Setenv(mcpTokenVar, "")
	for name, tc := range map[string]struct {
		args      []string
		stderrHas string
	}{
		"non-loopback":       {[]string{"mcp", "--http", "0.0.0.0:8080"}, "mcp: --http 0.0.0.0:8080 is not a loopback address: set a bearer token with --token or AGENTHOST_MCP_TOKEN"},
		"host name":          {[]string{"mcp", "--http", "example.com:8080"}, "is not a loopback address"},
		"token without http": {[]string{"mcp", "--token", "x"}, "mcp: --token needs --http"},
		"bad address":        {[]string{"mcp", "--http", "1:2:3"}, "mcp: --http 1:2:3:"},
		"arguments":          {[]string{"--plugins", t.TempDir(), "mcp", "extra"}, "mcp takes no arguments"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderrHas) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.stderrHas)
			}
		})
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]struct {
		addr     string
		loopback bool
	}{
		":8080":          {"127.0.0.1:8080", true},
		"8080":           {"127.0.0.1:8080", true},
		"127.0.0.1:0":    {"127.0.0.1:0", true},
		"localhost:80":   {"localhost:80", true},
		"[::1]:80":       {"[::1]:80", true},
		"0.0.0.0:80":     {"0.0.0.0:80", false},
		"[::]:80":        {"[::]:80", false},
		"10.1.2.3:80":    {"10.1.2.3:80", false},
		"example.com:80": {"example.com:80", false},
	} {
		addr, loopback, err := listenAddr(in)
		if err != nil || addr != want.addr || loopback != want.loopback {
			t.Errorf("listenAddr(%q) = %q, %v, %v; want %q, %v", in, addr, loopback, err, want.addr, want.loopback)
		}
	}
}
