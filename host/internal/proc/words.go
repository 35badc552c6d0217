package proc

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// Words keeps what a process wrote to its stderr that says why it
// failed: the first lines that look like errors ("Error: ...", "npm
// error ...", "... Permission denied", "panic: ...", see errorMarks) and
// the last lines, without the noise runtimes print after the cause
// (stack frames, Node's "Node.js v20" trailer, npm's pointers to its
// log, "Run '... --help' for more information", a Go panic's goroutine
// dump). The last line alone is often that noise.
//
// What it keeps is bounded however much the process writes: maxFirst
// error lines, the last maxRecent lines, each cut at maxKept bytes. It
// also notes whether the process refused the handshake cookie, as a
// go-plugin plugin of another program does.
type Words struct {
	mu sync.Mutex
	// partial is the start of a line whose end Write has not seen; long:
	// the line is longer than maxKept, and its rest is skipped.
	partial []byte
	long    bool
	// seq counts the lines kept; those up to mark were written before
	// Mark.
	seq, mark int
	first     []keptLine          // the first error lines since the mark
	recent    [maxRecent]keptLine // the last lines, by seq % maxRecent
	inPanic   bool                // a Go panic's dump is being written
	cookie    bool
}

// keptLine is a line of stderr that Words keeps: trimmed, at most
// maxKept bytes.
type keptLine struct {
	seq  int
	text string
	err  bool
}

const (
	maxFirst  = 3
	maxRecent = 32
	maxKept   = 1024
	// A reason shows each line cut at maxShown bytes, maxWords bytes in
	// all.
	maxShown = 200
	maxWords = 480
	// wordsSep separates the lines of a reason.
	wordsSep = " | "
)

// cookieRefused starts what go-plugin's server prints, and then exits,
// when the handshake cookie is not the one it was built with.
const cookieRefused = "This binary is a plugin. These are not meant to be executed directly."

// errorMarks are what a line that states an error holds, in the words of
// the runtimes and tools that start servers and plugins.
var errorMarks = []string{
	"Error:", "error:", "Error [", "ERROR", "ERR!", "npm error",
	"Cannot", "cannot", "denied", "not found", "No such file", "not permitted",
	"EACCES", "ENOENT", "EPERM", "ECONNREFUSED",
	"panic:", "Traceback", "Exception", "fatal", "Fatal", "FATAL",
}

// errorLine reports whether a line of stderr states an error.
func errorLine(s string) bool {
	for _, m := range errorMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

var (
	nodeTrailer = regexp.MustCompile(`^Node\.js v[0-9]`)
	runForHelp  = regexp.MustCompile(`^Run '[^']*--help' for more information`)
)

// noise reports whether a line of stderr says nothing of a failure's
// cause: a line without a letter or a digit ("^", "}"), a stack frame
// (Node's and Java's "    at ...", Python's `  File "x", line 3, in f`),
// Node's trailer ("Node.js v20.20.2"), npm's pointers to its log and an
// empty "npm error", and "Run 'docker run --help' for more information".
// raw is the line as written, text the line trimmed.
func noise(raw, text string) bool {
	if !strings.ContainsFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return true
	}
	indented := raw != "" && (raw[0] == ' ' || raw[0] == '\t')
	if indented && (strings.HasPrefix(text, "at ") || strings.HasPrefix(text, `File "`) && strings.Contains(text, `", line `)) {
		return true
	}
	if nodeTrailer.MatchString(text) || runForHelp.MatchString(text) || strings.Contains(text, "You can rerun the command") {
		return true
	}
	for _, npm := range []string{"npm error", "npm ERR!"} {
		if rest, ok := strings.CutPrefix(text, npm); ok {
			rest = strings.TrimSpace(rest)
			return rest == "" || strings.HasPrefix(rest, "A complete log of this run")
		}
	}
	return false
}

// Write notes what a process wrote to its stderr, line by line: a line
// may come in pieces over several writes. A line of hclog's JSON format
// counts only at warn or error level, by its message.
func (w *Words) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		piece := p
		if i >= 0 {
			piece = p[:i]
		}
		if !w.long {
			if room := maxKept - len(w.partial); len(piece) > room {
				piece, w.long = piece[:room], true
			}
			w.partial = append(w.partial, piece...)
		}
		if i < 0 {
			break
		}
		w.noteLocked(parseLogLine(w.partial, nil))
		w.partial, w.long = w.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// flush notes the last line, written without a newline.
func (w *Words) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.noteLocked(parseLogLine(w.partial, nil))
		w.partial, w.long = nil, false
	}
}

// note notes a line of stderr, as parseLogLine read it.
func (w *Words) note(e logEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noteLocked(e)
}

func (w *Words) noteLocked(e logEntry) {
	raw, text, isErr := e.msg, e.text, false
	if e.json {
		if e.level != hclog.Warn && e.level != hclog.Error {
			return
		}
		text = strings.TrimSpace(e.msg)
		raw, isErr = text, e.level == hclog.Error
	}
	if text == "" {
		return
	}
	text = cut(text, maxKept)
	if strings.HasPrefix(text, cookieRefused) {
		w.cookie = true
	}
	if w.inPanic || noise(raw, text) {
		return
	}
	if strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ") {
		// What follows is the goroutines' stacks.
		w.inPanic, isErr = true, true
	}
	w.seq++
	l := keptLine{seq: w.seq, text: text, err: isErr || errorLine(text)}
	if l.err && len(w.first) < maxFirst {
		w.first = append(w.first, l)
	}
	w.recent[w.seq%maxRecent] = l
}

// cut cuts s to at most n bytes, on a rune's boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Mark says the process is up (it completed its handshake): what it wrote
// until then no longer explains how it ends.
func (w *Words) Mark() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mark, w.first, w.inPanic = w.seq, nil, false
}

// recentLocked are the last n lines kept since the mark, oldest first.
func (w *Words) recentLocked(n int) []keptLine {
	var out []keptLine
	for s := w.seq; s > w.mark && s > w.seq-maxRecent && len(out) < n; s-- {
		out = append(out, w.recent[s%maxRecent])
	}
	slices.Reverse(out)
	return out
}

// String is the process's last words, on one line: its first error lines
// and its last line (with no error line, its last lines), in the order
// written, joined by " | ", each shown as textsafe.Line shows it (no
// control character, escape or line break comes through) and cut, in
// all at most a few hundred bytes. It is "" when the process wrote
// nothing worth reading since the mark.
func (w *Words) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	first := w.first
	tail := 3
	if len(first) > 0 {
		tail = 1
	}
	recent := w.recentLocked(tail)
	// The first error line and the last line come first, then the rest.
	var order []keptLine
	if len(first) > 0 {
		order = append(order, first[0])
	}
	if n := len(recent); n > 0 {
		order = append(order, recent[n-1])
	}
	if len(first) > 1 {
		order = append(order, first[1:]...)
	}
	for i := len(recent) - 2; i >= 0; i-- {
		order = append(order, recent[i])
	}
	var picked []keptLine
	shown := map[int]string{}
	total := 0
	for _, l := range order {
		if _, ok := shown[l.seq]; ok {
			continue
		}
		s := textsafe.Line(l.text, maxShown, " ")
		if total > 0 && total+len(wordsSep)+len(s) > maxWords {
			continue
		}
		if total > 0 {
			total += len(wordsSep)
		}
		total += len(s)
		shown[l.seq] = s
		picked = append(picked, l)
	}
	slices.SortFunc(picked, func(a, b keptLine) int { return a.seq - b.seq })
	parts := make([]string, len(picked))
	for i, l := range picked {
		parts[i] = shown[l.seq]
	}
	return strings.Join(parts, wordsSep)
}

// Lines are the lines kept since the mark, as written (trimmed, cut at
// maxKept bytes), oldest first: the first error lines and the last
// lines. They are for reading, not for showing as they are.
func (w *Words) Lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := slices.Clone(w.first)
	for _, l := range w.recentLocked(maxRecent) {
		if !slices.ContainsFunc(lines, func(k keptLine) bool { return k.seq == l.seq }) {
			lines = append(lines, l)
		}
	}
	slices.SortFunc(lines, func(a, b keptLine) int { return a.seq - b.seq })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

func (w *Words) refusedCookie() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cookie
}
