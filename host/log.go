package host

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/textsafe"
)

// safeLogger is the registry's logger. What it logs comes partly from
// plugins and file systems: file names, tool names, what a plugin writes
// to its log (logPluginStderr logs a plugin's lines to a Named logger,
// with the plugin's levels). hclog writes a message, a logger's name and the
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

// launchError turns go-plugin's start-up errors, which span several lines
// and name no cause, into one line that says what went wrong: of a
// plugin that exited, its last words, and the grant that would allow what
// the sandbox refused it.
func (p *toolSource) launchError(err error, inst *instance) error {
	startTimeout := p.startTimeout
	text := err.Error()
	first, _, _ := strings.Cut(text, "\n")
	switch {
	case strings.Contains(text, "timeout while waiting for plugin to start"):
		return fmt.Errorf("it did not complete the handshake within %s", startTimeout)
	case inst.runner == nil:
		return errors.New(first)
	}
	if inst.runner.PID() == 0 {
		return execError(err)
	}
	if bad := inst.runner.HandshakeError(); bad != nil {
		return bad
	}
	// It closed its stdout without a word: it most likely exited.
	select {
	case <-inst.runner.Done():
	case <-time.After(time.Second):
	}
	msg, dead := inst.runner.StartupExit()
	if !dead {
		return errors.New("it closed its output without completing the handshake")
	}
	return errors.New(msg + p.sandboxHint(inst, inst.runner.StderrLines()))
}

// execError words the failure to execute a plugin's file, which the
// kernel says in one word: a file that is neither a program for this
// system nor a script starting with "#!", a script whose interpreter does
// not exist.
func execError(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch errno {
	case syscall.ENOEXEC:
		return errors.New("it cannot be executed: it is neither a program for this system nor a script starting with #!")
	case syscall.ENOENT:
		return errors.New("it cannot be executed: the interpreter its #! line names, or the loader it needs, does not exist")
	}
	return fmt.Errorf("it cannot be executed: %s", errno.Error())
}
