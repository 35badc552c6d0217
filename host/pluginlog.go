package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// quietLogger is the logger go-plugin gets. go-plugin reports a plugin's
// own log lines through Named loggers, which keep their levels; its own
// lifecycle messages ("plugin process exited", "plugin failed to exit
// gracefully") are demoted to debug, because the host reports what matters
// of them itself, once, in its own words.
type quietLogger struct {
	hclog.Logger
}

func (l quietLogger) Info(msg string, args ...any)  { l.Logger.Debug(msg, args...) }
func (l quietLogger) Warn(msg string, args ...any)  { l.Logger.Debug(msg, args...) }
func (l quietLogger) Error(msg string, args ...any) { l.Logger.Debug(msg, args...) }

func (l quietLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Debug(msg, args...)
}

// safeLogger is the registry's logger. What it logs comes partly from
// plugins and file systems: file names, tool names, what a plugin writes
// to its log (go-plugin forwards a plugin's lines to Named loggers, with
// the plugin's levels). hclog writes a message, a logger's name and the
// keys of fields as they are, and a value holding a newline over several
// lines, so a newline or an ANSI escape there could forge lines of the
// host's log or paint the terminal. safeLogger writes each of them that
// holds a control character, a bidi override or invalid UTF-8 quoted:
// a message, name or key as textsafe.Name does, a value as hclog.Quote.
type safeLogger struct {
	hclog.Logger
}

func (l safeLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, textsafe.Name(msg), safeArgs(args)...)
}
func (l safeLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l safeLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l safeLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l safeLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l safeLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l safeLogger) Named(name string) hclog.Logger {
	return safeLogger{l.Logger.Named(textsafe.Name(name))}
}

func (l safeLogger) ResetNamed(name string) hclog.Logger {
	return safeLogger{l.Logger.ResetNamed(textsafe.Name(name))}
}

func (l safeLogger) With(args ...any) hclog.Logger {
	return safeLogger{l.Logger.With(safeArgs(args)...)}
}

// safeArgs returns key-value pairs whose keys print on one line and whose
// text values that need it are quoted. args is not changed.
func safeArgs(args []any) []any {
	var out []any
	set := func(i int, v any) {
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	for i, a := range args {
		var text string
		switch v := a.(type) {
		case string:
			text = v
		case error:
			text = v.Error()
		default:
			continue
		}
		if !textsafe.NeedsQuoting(text) {
			continue
		}
		if i%2 == 0 && i+1 < len(args) {
			set(i, textsafe.Name(text)) // a key
		} else {
			set(i, hclog.Quote(text))
		}
	}
	if out == nil {
		return args
	}
	return out
}

// lastLine remembers the last non-empty line a plugin wrote to stderr, so
// that a plugin that dies at start-up can be reported with its last words.
// Lines of the sdk's JSON logger count only at warn or error level. When a
// line says it is an error ("Error: ...", "panic: ..."), that line is the
// one remembered: runtimes print a stack and a banner after it (Node's
// "    at ...", "Node.js v20"), which say nothing of the cause.
type lastLine struct {
	mu      sync.Mutex
	line    string
	errLine string
}

// errorLine reports whether a line of stderr states an error.
func errorLine(s string) bool {
	return strings.Contains(s, "Error:") || strings.Contains(s, "error:") ||
		strings.HasPrefix(s, "panic:") || strings.Contains(s, "Exception:")
}

func (l *lastLine) Write(p []byte) (int, error) {
	for raw := range strings.SplitSeq(string(p), "\n") {
		s := strings.TrimSpace(raw)
		var entry struct {
			Level   string `json:"@level"`
			Message string `json:"@message"`
		}
		if json.Unmarshal([]byte(s), &entry) == nil {
			s = ""
			if entry.Level == "error" || entry.Level == "warn" {
				s = entry.Message
			}
		}
		if s != "" {
			l.mu.Lock()
			l.line = s
			if errorLine(s) {
				l.errLine = s
			}
			l.mu.Unlock()
		}
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errLine != "" {
		return l.errLine
	}
	return l.line
}

// launchError turns go-plugin's start-up errors, which span several lines
// and name no cause, into one line that says what went wrong.
func launchError(err error, inst *instance, startTimeout time.Duration) error {
	text := err.Error()
	first, _, _ := strings.Cut(text, "\n")
	switch {
	case strings.Contains(text, "timeout while waiting for plugin to start"):
		return fmt.Errorf("it did not complete the handshake within %s", startTimeout)
	case strings.HasPrefix(text, "incompatible API version with plugin. "):
		return fmt.Errorf("it speaks another protocol version: %s", strings.TrimPrefix(first, "incompatible API version with plugin. "))
	case strings.HasPrefix(text, "Unrecognized remote plugin message: ") && first != "Unrecognized remote plugin message: ":
		return fmt.Errorf("it is not an agenthost plugin: its first line of output was %q", strings.TrimPrefix(first, "Unrecognized remote plugin message: "))
	case inst.runner == nil:
		return errors.New(first)
	}
	// It closed its stdout without a word: it most likely exited.
	select {
	case <-inst.runner.done:
	case <-time.After(time.Second):
	}
	msg, dead := inst.runner.startupExit()
	if !dead {
		return errors.New("it closed its output without completing the handshake")
	}
	return errors.New(msg)
}

// startupExit says, of a process that exited before its handshake, how it
// ended and its last words: "it exited during start-up (exit status 1):
// LAST LINE". It reports false while the process runs.
func (r *groupRunner) startupExit() (string, bool) {
	dead, how := r.exited()
	if !dead {
		return "", false
	}
	msg := "it exited during start-up"
	if how != nil {
		msg += " (" + how.Error() + ")"
	}
	// Its last words are complete once its output has been read out.
	select {
	case <-r.finished:
	case <-time.After(time.Second):
	}
	if last := r.tail.String(); last != "" {
		msg += ": " + last
	}
	return msg, true
}
