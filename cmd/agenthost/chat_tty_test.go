package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controller side the test
// types into and reads from, and the terminal side a child gets as its
// standard streams.
func openPTY(t *testing.T) (controller, tty *os.File) {
	t.Helper()
	controller, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	fd := int(controller.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("numbering the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal side: %v", err)
	}
	t.Cleanup(func() {
		tty.Close()
		controller.Close()
	})
	return controller, tty
}

// TestChatTerminal runs chat on a real terminal: a line is edited with
// the arrow keys before it is sent, Up brings the last line back from the
// history, Ctrl-C stops an answer, and Ctrl-D at the prompt ends the
// session.
func TestChatTerminal(t *testing.T) {
	exe, plugins := builtAgenthost(t)
	rp, url := newReplay(t,
		func(map[string]any) []string { return textReply("First answer.") },
		func(map[string]any) []string { return textReply("Second answer.") },
		func(map[string]any) []string {
			return []string{`{"choices":[{"index":0,"delta":{"content":"Let me think"},"finish_reason":null}]}`, hang}
		},
	)
	c := startTermSession(t, exe, []string{"--plugins", plugins, "chat", "--base-url", url}, agenthostEnv("OPENAI_API_KEY=sk-test", "TERM=xterm"))
	seen, typeKeys := c.see, c.typeIn

	at := seen("> ", 0)
	// "helo world", then Left seven times to after "hel", insert "l".
	typeKeys("helo world" + strings.Repeat("\x1b[D", 7) + "l\r")
	at = seen("First answer.", at)
	at = seen("> ", at)
	// Up brings "hello world" back; Enter sends it again.
	typeKeys("\x1b[A\r")
	at = seen("Second answer.", at)
	at = seen("> ", at)
	// Ctrl-C during an answer stops it (the terminal is not raw then, so
	// the key is a SIGINT), and the session goes on.
	typeKeys("third\r")
	at = seen("Let me think", at)
	typeKeys("\x03")
	at = seen("(interrupted)", at)
	seen("> ", at)
	c.end() // Ctrl-D

	reqs := rp.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var users []string
	for _, m := range reqs[1]["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "user" {
			users = append(users, fmt.Sprint(mm["content"]))
		}
	}
	if want := []string{"hello world", "hello world"}; strings.Join(users, "|") != strings.Join(want, "|") {
		b, _ := json.Marshal(reqs[1]["messages"])
		t.Errorf("the second request's user turns are %q, want %q\n%s", users, want, b)
	}
}
