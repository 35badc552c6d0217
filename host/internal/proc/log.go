package proc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/wire"
)

// QuietLogger is the logger go-plugin gets. Its Named loggers keep their
// levels (go-plugin's stdio client logs through one); go-plugin's own
// lifecycle messages ("plugin process exited", "plugin failed to exit
// gracefully") are demoted to debug, because the host reports what matters
// of them itself, once, in its own words.
type QuietLogger struct {
	hclog.Logger
}

func (l QuietLogger) Info(msg string, args ...any)  { l.Logger.Debug(msg, args...) }
func (l QuietLogger) Warn(msg string, args ...any)  { l.Logger.Debug(msg, args...) }
func (l QuietLogger) Error(msg string, args ...any) { l.Logger.Debug(msg, args...) }

func (l QuietLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Debug(msg, args...)
}

// maxLogLine bounds a line of a plugin's stderr, as go-plugin's reader of
// it does: a longer line is logged in pieces, at debug level.
const maxLogLine = 64 << 10

// LogStderr logs what a plugin writes to its stderr to logger, line
// by line, and notes its last words in tail (see Words), until stderr
// ends.
//
// It takes the place of go-plugin's reader of a plugin's stderr, and reads
// the same lines the same way (see parseLogLine), without two faults of
// that reader. It takes a line for hclog's JSON format only when its
// "@timestamp" has exactly six digits of fraction, as Go's hclog writes
// it: with the three that Node's and Python's loggers write
// (2026-11-23T10:00:00.123Z), the line was logged whole at debug level,
// its own level lost. And it takes "@message" and "@level" for strings
// without checking: a plugin that wrote a number there crashed the host.
func LogStderr(logger hclog.Logger, r io.Reader, tail *Words) {
	br := bufio.NewReaderSize(r, maxLogLine)
	var inPanic, continued bool
	for {
		line, isPrefix, err := br.ReadLine()
		if err != nil {
			return
		}
		if isPrefix || continued {
			// A piece of a line too long to be read whole.
			logger.Debug(string(line))
			continued = isPrefix
			continue
		}
		e := parseLogLine(line, &inPanic)
		tail.note(e)
		if e.text != "" || e.json {
			logger.Log(e.level, e.msg, e.args...)
		}
	}
}

// logEntry is a line of a plugin's stderr as the host logs it.
type logEntry struct {
	level hclog.Level
	msg   string
	args  []any
	// json: the line is a JSON object; text: the line, trimmed, when it
	// is not.
	json bool
	text string
}

// parseLogLine reads one line of a plugin's stderr as go-plugin does. A
// JSON object is an entry of hclog's JSON format: "@level" (trace, debug,
// info, warn or error; also warning, fatal and critical, which loggers of
// other languages name theirs), "@message", "@timestamp" (RFC 3339, any
// fraction of a second, or none), and fields, logged sorted by key, with
// "timestamp" last. An object without a level it knows is logged whole at
// debug level, as is a line that is not JSON, unless it starts with
// [TRACE], [DEBUG], [INFO], [WARN] or [ERROR], which give its level, or
// it belongs to a Go panic (from "panic: " or "fatal error: " on, when
// inPanic is not nil), logged at error level.
func parseLogLine(line []byte, inPanic *bool) logEntry {
	text := strings.TrimSpace(string(line))
	if strings.HasPrefix(text, "{") {
		var fields map[string]any
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		if d.Decode(&fields) == nil && !d.More() {
			return jsonLogEntry(string(line), fields)
		}
	}
	e := logEntry{level: hclog.Debug, msg: string(line), text: text}
	switch {
	case strings.HasPrefix(text, "[TRACE]"):
		e.level = hclog.Trace
	case strings.HasPrefix(text, "[DEBUG]"):
		e.level = hclog.Debug
	case strings.HasPrefix(text, "[INFO]"):
		e.level = hclog.Info
	case strings.HasPrefix(text, "[WARN]"):
		e.level = hclog.Warn
	case strings.HasPrefix(text, "[ERROR]"):
		e.level = hclog.Error
	case inPanic == nil:
	case strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: "):
		*inPanic = true
		e.level = hclog.Error
	case *inPanic:
		e.level = hclog.Error
	}
	return e
}

// jsonLogEntry is the entry of a JSON line whose fields are fields.
func jsonLogEntry(line string, fields map[string]any) logEntry {
	e := logEntry{json: true, level: hclog.NoLevel}
	if v, ok := fields["@level"].(string); ok {
		e.level = logLevel(v)
	}
	if e.level == hclog.NoLevel || e.level == hclog.Off {
		// Not hclog's: logged as it is.
		return logEntry{json: true, level: hclog.Debug, msg: line}
	}
	switch v := fields["@message"].(type) {
	case nil:
	case string:
		e.msg = v
	default:
		msg, _ := json.Marshal(v)
		e.msg = string(msg)
	}
	var stamp any
	if v, ok := fields["@timestamp"]; ok {
		stamp = v
		if s, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				stamp = t.Format(hclog.TimeFormat)
			}
		}
	}
	delete(fields, "@level")
	delete(fields, "@message")
	delete(fields, "@timestamp")
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		e.args = append(e.args, k, fields[k])
	}
	if stamp != nil {
		e.args = append(e.args, "timestamp", stamp)
	}
	return e
}

// logLevel reads a level of hclog's JSON format, and the names loggers of
// other languages give theirs.
func logLevel(s string) hclog.Level {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "warning":
		return hclog.Warn
	case "fatal", "critical":
		return hclog.Error
	}
	return hclog.LevelFromString(s)
}

// StartupExit says, of a process that exited before its handshake, how it
// ended and its last words (Words): "it exited during start-up (exit
// status 1): Error: Cannot find package 'zod' | ...". It reports false
// while the process runs.
func (r *Runner) StartupExit() (string, bool) {
	dead, how := r.Exited()
	if !dead {
		return "", false
	}
	msg := "it exited during start-up"
	if how != nil {
		msg += " (" + how.Error() + ")"
	}
	r.readOut()
	switch last := r.tail.String(); {
	case r.tail.refusedCookie():
		msg += fmt.Sprintf(": it refused the handshake cookie %s=%s (go-plugin's %q): it is a plugin of another program, or expects another cookie",
			wire.CookieKey, wire.CookieValue, cookieRefused)
	case last != "":
		msg += ": " + last
	}
	return msg, true
}

// readOut waits, a second at most, until the output of a process that
// exited has been read out: then its last words are complete.
func (r *Runner) readOut() {
	select {
	case <-r.finished:
	case <-time.After(time.Second):
	}
}

// Ready says the process completed its handshake: what it wrote to its
// stderr until then does not explain how it ends (see LastWords).
func (r *Runner) Ready() { r.tail.Mark() }

// LastWords are the last words (Words) of a process that exited, written
// since Ready: "" when it wrote nothing worth reading, or still runs.
func (r *Runner) LastWords() string {
	if dead, _ := r.Exited(); !dead {
		return ""
	}
	r.readOut()
	return r.tail.String()
}

// StderrLines are the lines Words kept of the process's stderr since
// Ready (all of them before), oldest first, as written: for reading
// what went wrong, not for showing as they are. Of a process that
// exited, they are complete.
func (r *Runner) StderrLines() []string {
	if dead, _ := r.Exited(); dead {
		r.readOut()
	}
	return r.tail.Lines()
}
