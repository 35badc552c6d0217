package main

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// termSession runs chat on a pseudo-terminal; see returns what it printed
// from a position, once it holds want.
type termSession struct {
	t      *testing.T
	typeIn func(string)
	see    func(want string, from int) int
	exited <-chan struct{}
	wait   func() error
}

func startTermSession(t *testing.T, exe string, args []string, env []string) *termSession {
	t.Helper()
	controller, tty := openPTY(t)
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	exited, wait := startChat(t, cmd)
	tty.Close()
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := controller.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return &termSession{
		t: t,
		typeIn: func(keys string) {
			t.Helper()
			if _, err := controller.WriteString(keys); err != nil {
				t.Fatal(err)
			}
		},
		see: func(want string, from int) int {
			t.Helper()
			return waitOutput(t, func() string {
				mu.Lock()
				defer mu.Unlock()
				return screen.String()
			}, want, from, "")
		},
		exited: exited,
		wait:   wait,
	}
}

// end types Ctrl-D at the prompt and waits for the session to end well.
func (c *termSession) end() {
	c.t.Helper()
	c.typeIn("\x04")
	select {
	case <-c.exited:
		if err := c.wait(); err != nil {
			c.t.Errorf("chat ended with %v", err)
		}
	case <-time.After(15 * time.Second):
		c.t.Fatal("Ctrl-D at the prompt did not end the session")
	}
}

// TestChatTerminalSessions: on a terminal, /context and /compact work,
// and chat --resume goes on with the conversation in a new process.
func TestChatTerminalSessions(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	smart := func(body map[string]any) []string {
		msgs, _ := body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		switch {
		case body["tools"] == nil:
			return textReply("A summary of it all.")
		case strings.Contains(last["content"].(string), "again"):
			return textReply("Second answer.")
		}
		return textReply("First answer.")
	}
	rp, url := newReplay(t, smart, smart, smart, smart, smart)
	env := agenthostEnv("OPENAI_API_KEY=sk-test", "TERM=xterm", "XDG_DATA_HOME="+t.TempDir())
	args := []string{"--plugins", plugins, "chat", "--base-url", url}

	c := startTermSession(t, exe, args, env)
	at := c.see("> ", 0)
	c.typeIn("hello\r")
	at = c.see("First answer.", at)
	at = c.see("> ", at)
	c.typeIn("/context\r")
	at = c.see("context: ", at)
	at = c.see(" tokens (", at)
	at = c.see("> ", at)
	c.typeIn("/compact\r")
	at = c.see("compacted: ", at)
	c.see("> ", at)
	c.end()

	c = startTermSession(t, exe, append(args, "--resume"), env)
	at = c.see("going on with conversation", 0)
	at = c.see("> ", at)
	c.typeIn("again\r")
	at = c.see("Second answer.", at)
	c.see("> ", at)
	c.end()

	reqs := rp.requests()
	last := reqs[len(reqs)-1]
	var users []string
	for _, m := range last["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "user" {
			users = append(users, mm["content"].(string))
		}
	}
	if len(users) < 2 || users[len(users)-1] != "again" {
		t.Errorf("the resumed request's user turns: %q", users)
	}
}
