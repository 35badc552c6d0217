package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textdiff"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// Approvals in an interactive chat: the guard's question (may this call
// run?) is shown on the terminal, and one key answers it:
//
//	y  allow this call
//	a  allow it and, for the rest of the session, the calls its session
//	   rules match (offered when there are some)
//	n  deny it
//	r  deny it with a reason, typed on a line, that the model reads
//	Ctrl-C, Ctrl-D
//	   deny it and stop the turn, as Ctrl-C during an answer does

// terminalApprover asks the person at the chat's terminal. The terminal
// is raw only while a key is read; it is restored however the question
// ends.
type terminalApprover struct {
	in, out *os.File
	// interrupt stops the turn under way (interrupts.deliver: the chat's
	// answer takes it as a Ctrl-C).
	interrupt func() bool

	mu sync.Mutex
	// stopping: Ctrl-C at a question stopped the turn; the calls after it
	// are denied without a question until the next turn.
	stopping bool
}

// newTerminalApprover returns the approver of a chat whose input and
// output are a terminal, and nil otherwise.
func newTerminalApprover(in io.Reader, out io.Writer) *terminalApprover {
	fi, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(fi.Fd())) {
		return nil
	}
	fo, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(fo.Fd())) {
		return nil
	}
	return &terminalApprover{in: fi, out: fo, interrupt: interrupts.deliver}
}

// beginTurn forgets the turn a Ctrl-C stopped: the chat calls it as each
// question to the model begins.
func (a *terminalApprover) beginTurn() {
	a.mu.Lock()
	a.stopping = false
	a.mu.Unlock()
}

// errStopped: the person pressed Ctrl-C or Ctrl-D at a question.
var errStopped = errors.New("stopped at the question")

// Approve shows the question and reads the answer.
func (a *terminalApprover) Approve(ctx context.Context, req *policy.Request) (policy.Answer, error) {
	a.mu.Lock()
	stopping := a.stopping
	a.mu.Unlock()
	if stopping {
		// The turn is being stopped: the calls after the one denied are
		// not asked about.
		return policy.Answer{Verdict: policy.Refuse}, nil
	}
	if err := ctx.Err(); err != nil {
		return policy.Answer{}, err
	}
	fd := int(a.in.Fd())
	state, err := term.MakeRaw(fd)
	if err != nil {
		return policy.Answer{}, fmt.Errorf("the terminal: %w", err)
	}
	defer term.Restore(fd, state)
	// A key typed before the question was shown does not answer it.
	discardInput(fd)
	a.write(question(req))
	ans, err := a.answer(ctx, fd, req)
	switch {
	case errors.Is(err, errStopped):
		a.write("^C stopped\n")
		a.mu.Lock()
		a.stopping = true
		a.mu.Unlock()
		// The turn stops as a Ctrl-C during an answer stops it: the
		// calls not yet launched are not, and no other model call
		// starts. This call is denied by the user, as answered, once
		// the turn's context has ended.
		if a.interrupt() {
			<-ctx.Done()
		}
		return policy.Answer{Verdict: policy.Refuse}, nil
	case err != nil:
		a.write("\n(no answer: " + err.Error() + ")\n")
		return policy.Answer{}, err
	}
	return ans, nil
}

// answer reads keys until one answers the question.
func (a *terminalApprover) answer(ctx context.Context, fd int, req *policy.Request) (policy.Answer, error) {
	for {
		key, err := readInput(ctx, fd)
		if err != nil {
			return policy.Answer{}, err
		}
		if stopKey(key) {
			return policy.Answer{}, errStopped
		}
		if len(key) != 1 {
			// An escape sequence (an arrow key) or pasted text: not an
			// answer.
			continue
		}
		switch key[0] {
		case 'y', 'Y':
			a.write("yes\n")
			return policy.Answer{Verdict: policy.AllowOnce}, nil
		case 'a', 'A':
			if len(req.SessionRules) == 0 {
				a.write("\n   \"a\" is not offered for this call: no rule would cover calls like it.\n" + keysPrompt(nil))
				continue
			}
			a.write("always: " + safeLine(strings.Join(req.SessionRules, ", ")) + "\n")
			return policy.Answer{Verdict: policy.AllowSession}, nil
		case 'n', 'N':
			a.write("no\n")
			return policy.Answer{Verdict: policy.Refuse}, nil
		case 'r', 'R':
			a.write("no, because: ")
			reason, err := a.readReason(ctx, fd)
			if err != nil {
				return policy.Answer{}, err
			}
			a.write("\n")
			return policy.Answer{Verdict: policy.Refuse, Reason: reason}, nil
		}
	}
}

// maxReason bounds a typed reason, in runes.
const maxReason = 500

// readReason reads a line: printable characters, Backspace, Ctrl-U, and
// Enter to end it.
func (a *terminalApprover) readReason(ctx context.Context, fd int) (string, error) {
	var line []rune
	var pending []byte // the start of a character split between reads
	for {
		in, err := readInput(ctx, fd)
		if err != nil {
			return "", err
		}
		if stopKey(in) {
			return "", errStopped
		}
		in = append(pending, in...)
		pending = nil
		for len(in) > 0 {
			if !utf8.FullRune(in) {
				pending = append(pending, in...)
				break
			}
			r, size := utf8.DecodeRune(in)
			in = in[size:]
			switch {
			case r == '\r' || r == '\n':
				return strings.TrimSpace(string(line)), nil
			case r == 0x7f || r == '\b':
				if len(line) > 0 {
					line = line[:len(line)-1]
					a.write("\b \b")
				}
			case r == 0x15: // Ctrl-U
				a.write(strings.Repeat("\b \b", len(line)))
				line = line[:0]
			case r == 0x1b:
				// An escape sequence: drop the rest of this read.
				in = nil
			case r == utf8.RuneError && size == 1, textsafe.NeedsQuoting(string(r)) && r != '"':
			default:
				if len(line) < maxReason {
					line = append(line, r)
					a.write(string(r))
				}
			}
		}
	}
}

// stopKey reports whether what was read holds Ctrl-C or Ctrl-D.
func stopKey(in []byte) bool {
	return strings.ContainsAny(string(in), "\x03\x04")
}

// readInput waits for input on fd, as long as ctx allows, and returns
// what one read gives.
func readInput(ctx context.Context, fd int) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err == unix.EINTR || err == nil && n == 0 {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := unix.Read(fd, buf)
		switch {
		case m > 0:
			return buf[:m], nil
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return nil, err
		}
		return nil, io.EOF
	}
}

// discardInput drops what was typed and not read yet.
func discardInput(fd int) {
	buf := make([]byte, 256)
	for range 64 {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		if m, err := unix.Read(fd, buf); m <= 0 || err != nil {
			return
		}
	}
}

// write writes s on the raw terminal, where a newline does not return
// the carriage.
func (a *terminalApprover) write(s string) {
	io.WriteString(a.out, strings.ReplaceAll(s, "\n", "\r\n"))
}

// maxShownLines bounds the preview lines shown of a question; a preview
// made by callPreview is bounded already, at fewer.
const maxShownLines = 240

// question is what is shown of req: the tool, where it comes from when it
// is not built in, what asks, and the preview, every line of it made
// safe to print; then the keys.
func question(req *policy.Request) string {
	var b strings.Builder
	call := req.Call
	b.WriteString("── approve " + textsafe.Name(call.Tool))
	if !call.Builtin && call.Source != "" {
		b.WriteString(" from " + textsafe.Name(call.Source))
	}
	b.WriteString("? (asked by " + safeLine(req.Why) + ")\n")
	for _, line := range strings.Split(bound(strings.TrimRight(req.Preview, "\n"), maxShownLines), "\n") {
		b.WriteString("   " + safeLine(line) + "\n")
	}
	b.WriteString(keysPrompt(req.SessionRules))
	return b.String()
}

// keysPrompt shows the keys: a only when it adds rules.
func keysPrompt(rules []string) string {
	always := ""
	if len(rules) > 0 {
		always = " / [a]lways: " + safeLine(strings.Join(rules, ", "))
	}
	return "   [y]es" + always + " / [n]o / [r]eason (Ctrl-C: no, and stop) > "
}

// maxLineBytes bounds a line shown of a preview.
const maxLineBytes = 400

// safeLine makes one line of text from a model or a tool safe to print
// (textsafe.Line; a tab stays). A carriage return that ends the line (a
// CRLF file's) is dropped. Long lines are cut.
func safeLine(s string) string {
	return textsafe.Line(strings.TrimSuffix(s, "\r"), maxLineBytes, "\t")
}

// maxPreviewLines bounds the lines of a preview.
const maxPreviewLines = 200

// bound keeps the first max lines of text and says how many more there
// were.
func bound(text string, max int) string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= max {
		return text
	}
	return strings.Join(lines[:max], "") + fmt.Sprintf("… %d more lines\n", len(lines)-max)
}

// callPreview makes the guard's previews (policy.Options.Preview): the
// diff a write_file or an edit_file would make, run_bash's command line,
// the arguments of other calls. The registry is bound once it is built
// (edit_file's preview is its own dry run).
type callPreview struct {
	reg atomic.Pointer[host.ToolRegistry]
}

// setRegistry binds the registry whose edit_file makes the previews.
func (p *callPreview) setRegistry(reg *host.ToolRegistry) { p.reg.Store(reg) }

// preview is the policy.Options.Preview of the CLI's guard.
func (p *callPreview) preview(ctx context.Context, req *policy.Request) string {
	call := req.Call
	switch {
	case call.Tool == "write_file" && call.Builtin && len(req.Paths) > 0:
		return writePreview(req)
	case call.Tool == "edit_file" && call.Builtin:
		if reg := p.reg.Load(); reg != nil {
			return editPreview(ctx, reg, call.Args)
		}
	case call.Tool == policy.BashTool && call.Builtin:
		return bashPreview(call.Args)
	}
	return policy.DefaultPreview(call)
}

// editPreview runs edit_file's dry run of the same edits: the diff they
// would make, or why they would fail.
func editPreview(ctx context.Context, reg *host.ToolRegistry, args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil || m == nil {
		return ""
	}
	m["dry_run"] = true
	raw, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return bound(reg.Execute(policy.ForPreview(ctx), "edit_file", raw), maxPreviewLines)
}

// bashPreview is run_bash's command line, with its directory and
// environment when it sets them.
func bashPreview(args json.RawMessage) string {
	var in struct {
		Command string            `json:"command"`
		Cwd     string            `json:"cwd"`
		Env     map[string]string `json:"env"`
	}
	if json.Unmarshal(args, &in) != nil {
		return ""
	}
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimRight(in.Command, "\n"), "\n") {
		if i == 0 {
			b.WriteString("$ " + line + "\n")
		} else {
			b.WriteString("> " + line + "\n")
		}
	}
	if in.Cwd != "" {
		b.WriteString("  in " + in.Cwd + "\n")
	}
	for _, name := range slices.Sorted(maps.Keys(in.Env)) {
		b.WriteString("  with " + name + "=" + in.Env[name] + "\n")
	}
	return bound(b.String(), maxPreviewLines)
}

// maxCompared bounds the current content a write_file preview reads.
const maxCompared = 1 << 20

// writePreview is the diff of the file write_file would replace (none
// for a new file) and the content it would write.
func writePreview(req *policy.Request) string {
	var in struct {
		Path     string `json:"path"`
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	}
	if json.Unmarshal(req.Call.Args, &in) != nil {
		return ""
	}
	content := in.Content
	if strings.EqualFold(in.Encoding, "base64") {
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(in.Content))
		if err != nil {
			return ""
		}
		content = string(data)
	}
	path := req.Paths[0]
	name := path
	if len(req.Call.Roots) > 0 {
		if rel, err := filepath.Rel(req.Call.Roots[0], path); err == nil && filepath.IsLocal(rel) {
			name = rel
		}
	}
	// A name holding a newline must not forge a line of the diff.
	name = textsafe.Name(name)
	current, exists, err := readCurrent(path)
	switch {
	case err != nil:
		return fmt.Sprintf("writes %d bytes to %s, whose current content cannot be compared: %v", len(content), name, err)
	case binary(content) || binary(current):
		if exists {
			return fmt.Sprintf("writes %d bytes of binary content to %s, replacing %d bytes", len(content), name, len(current))
		}
		return fmt.Sprintf("writes %d bytes of binary content to %s, a new file", len(content), name)
	case exists && current == content:
		return fmt.Sprintf("writes %s again, unchanged (%d bytes)", name, len(content))
	}
	head := "replaces " + name + "\n"
	if !exists {
		head = "creates " + name + "\n"
	}
	return head + bound(textdiff.Unified(name, current, content), maxPreviewLines)
}

// readCurrent reads the regular file at path, if there is one, without
// opening anything else (a FIFO, a device).
func readCurrent(path string) (content string, exists bool, err error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err == nil && !info.Mode().IsRegular() {
		return "", true, errors.New("it is not a regular file")
	}
	if err != nil {
		return "", true, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "", true, err
	}
	defer f.Close()
	// It may have been replaced since: look again at what was opened.
	info, err = f.Stat()
	switch {
	case err != nil:
		return "", true, err
	case !info.Mode().IsRegular():
		return "", true, errors.New("it is not a regular file")
	case info.Size() > maxCompared:
		return "", true, fmt.Errorf("it is %d bytes long", info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCompared+1))
	if err != nil {
		return "", true, err
	}
	return string(data), true, nil
}

// binary reports whether text is not to be shown as lines: not UTF-8, or
// holding NUL.
func binary(text string) bool {
	return !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0
}
