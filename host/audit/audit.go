// Package audit keeps the audit record of a host's tool calls: one JSON
// line per call, appended to a file once the call ends, saying whom the
// call was for, which tool it ran with what arguments, what decided that
// it ran or not, and how it ended.
//
// Install the record's Intercept as the registry's first interceptor, the
// outermost, so that it sees the decision of the interceptors inside it (a
// policy's) and the calls they deny:
//
//	rec, err := audit.Open("/var/log/agenthost/audit.jsonl", nil)
//	if err != nil {
//		return err
//	}
//	defer rec.Close()
//	reg := host.NewToolRegistry(&host.Options{
//		Interceptors: []host.Interceptor{rec.Intercept, guard.Intercept},
//	})
//
// A line is a [Record]:
//
//	{"time":"2025-06-01T09:30:00.123456789Z","caller":"chat-1","tool":"run_bash","args":{"command":"git status"},"decision":"allow","by":"rule \"run_bash(git status*)\"","duration_ms":12.5,"error":false,"result_bytes":120}
//
// The arguments are recorded bounded and redacted (see [Record.Args]): no
// line is longer than a few tens of KiB whatever a call carries, and a
// value under a key that names a secret (token, password, api_key,
// authorization...) is recorded as "[redacted]".
//
// The file is the user's alone: it is created with mode 0600, and an
// existing file that others may read or write, or that another user owns,
// is refused rather than narrowed, since what it holds has been exposed
// already, and whoever could write it may hold it open still. A symbolic
// link at the path is refused too. Lines are only ever appended, each with
// one write, so that concurrent calls never mix their lines and a process
// that dies leaves whole lines behind. When a line would take the file
// past Options.MaxSize, the file is rotated: FILE becomes FILE.1, FILE.1
// becomes FILE.2, and so on up to FILE.Keep, the oldest dropped.
//
// Recording never fails a call: a line that cannot be written (a full
// disk) is lost, and said once through Options.Logger until lines are
// written again.
//
// One Log writes one file: two Logs, in one process or two, must not share
// a file.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// Defaults of Options.
const (
	// DefaultMaxSize is the size past which a file is rotated, unless
	// Options.MaxSize says otherwise.
	DefaultMaxSize = 10 << 20
	// DefaultKeep is how many rotated files are kept, unless Options.Keep
	// says otherwise.
	DefaultKeep = 3
)

// Bounds of what a line keeps of a call (see Record).
const (
	// MaxString bounds a string in the arguments, and a key; what is
	// longer is cut, with a marker that says how many bytes were cut.
	MaxString = 1 << 10
	// MaxArgs bounds the arguments as a whole: arguments whose recorded
	// JSON text is longer are recorded as that text, cut, in a string.
	MaxArgs = 8 << 10
	// MaxText bounds the caller, the source, and the decision's By and
	// Reason.
	MaxText = 1 << 10
)

// Redacted replaces a secret in the arguments.
const Redacted = "[redacted]"

// Decisions, as a Record says them.
const (
	// Allow: an interceptor allowed the call.
	Allow = "allow"
	// Deny: an interceptor denied it; the tool did not run.
	Deny = "deny"
	// None: nothing decided (host.Call.Decision was nil); the call ran on
	// its caller's word alone.
	None = "none"
)

// Options configure a [Log]. The zero value works.
type Options struct {
	// MaxSize is the size in bytes that a line may not take the file
	// past: the file is rotated first. Zero means DefaultMaxSize; a
	// negative size never rotates the file.
	MaxSize int64
	// Keep is how many rotated files are kept: FILE.1 (the newest) to
	// FILE.Keep. Zero means DefaultKeep.
	Keep int
	// Logger receives what goes wrong once the file is open: lines that
	// cannot be written, a rotation that fails. Nil means hclog's default
	// logger.
	Logger hclog.Logger
}

// Record is one line of the file: one tool call.
type Record struct {
	// Time is when the call started, in UTC (RFC 3339, nanoseconds).
	Time time.Time `json:"time"`
	// Caller is whom the call was for (host.Call.Caller); omitted when
	// the caller did not say.
	Caller string `json:"caller,omitempty"`
	// Tool is the tool's registered name.
	Tool string `json:"tool"`
	// Source is where the tool comes from (host.Call.Source): a plugin,
	// "mcp:NAME"; omitted for a tool registered in-process.
	Source string `json:"source,omitempty"`
	// Args are the call's arguments, a JSON object whose secrets are
	// "[redacted]" (values of keys such as token, password, api_key,
	// authorization, cookie, at any depth; KEY=VALUE, "Bearer ..." and
	// URL passwords inside strings) and whose strings longer than
	// MaxString are cut, with a marker: "... [N bytes cut]". Arguments
	// whose text is still longer than MaxArgs are recorded as a JSON
	// string: that text, cut likewise.
	Args json.RawMessage `json:"args"`
	// Decision is Allow, Deny or None.
	Decision string `json:"decision"`
	// By says what decided (host.Decision.By); omitted when nothing did.
	By string `json:"by,omitempty"`
	// Reason is the reason given for a denial, if any.
	Reason string `json:"reason,omitempty"`
	// DurationMS is how long the call took, in milliseconds, the
	// interceptors inside the record included.
	DurationMS float64 `json:"duration_ms"`
	// Error: the call failed or was denied (host.Result.IsError).
	Error bool `json:"error"`
	// ResultBytes is the size of the result: its text and its structured
	// part.
	ResultBytes int `json:"result_bytes"`
}

// Log is an open audit record: a file that every call passing through
// its Intercept adds a line to. It is safe for concurrent use.
type Log struct {
	path    string
	maxSize int64 // < 0: never rotate
	keep    int
	logger  hclog.Logger

	mu   sync.Mutex
	f    *os.File // nil once closed
	size int64
	// base is the size the file had when its rotation last failed: it is
	// tried again once MaxSize more bytes are written.
	base int64
	// torn: the file does not end with a newline (a crash cut its last
	// line); the next line starts with one.
	torn bool
	// failing: the last write failed, and it was said; lost counts the
	// lines lost since.
	failing bool
	lost    int
	// closedSaid: a call after Close was said to go unrecorded.
	closedSaid bool
}

// Open opens the audit record at path, creating the file with mode 0600
// if there is none, and appending to it if there is. Its directory must
// exist. It refuses a symbolic link at path, and a file that is not the
// user's alone (see the package's documentation). opts may be nil.
func Open(path string, opts *Options) (*Log, error) {
	if opts == nil {
		opts = &Options{}
	}
	l := &Log{path: path, maxSize: opts.MaxSize, keep: opts.Keep, logger: opts.Logger}
	if l.maxSize == 0 {
		l.maxSize = DefaultMaxSize
	}
	switch {
	case l.keep == 0:
		l.keep = DefaultKeep
	case l.keep < 0:
		return nil, l.errorf("Options.Keep is %d: want 1 or more rotated files, or 0 for %d", l.keep, DefaultKeep)
	}
	if l.logger == nil {
		l.logger = hclog.Default()
	}
	f, size, err := l.open(false)
	if err != nil {
		return nil, err
	}
	l.f, l.size = f, size
	if size > 0 {
		l.torn = !endsWithNewline(f, path, size)
		if l.torn {
			l.logger.Warn("audit record: the file's last line was cut short (by a crash?); it is kept as it is, and the next line starts on a line of its own",
				"file", path)
		}
	}
	return l, nil
}

// errorf is an error about the file: "audit record FILE: ...".
func (l *Log) errorf(format string, args ...any) error {
	return fmt.Errorf("audit record %s: "+format, append([]any{l.path}, args...)...)
}

// open opens the file for appending, refusing a symbolic link and a file
// that is not the user's alone; create: the file must not exist (a
// rotation made room for it). It returns the file's size.
func (l *Log) open(create bool) (*os.File, int64, error) {
	f, err := openFile(l.path, create)
	if err != nil {
		if fi, lerr := os.Lstat(l.path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, 0, l.errorf("is a symbolic link; the record is not written through links (give the path of the file itself)")
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, l.errorf("%v (create its directory first)", unwrapPath(err))
		}
		if create && errors.Is(err, fs.ErrExist) {
			return nil, 0, l.errorf("a file appeared at the path while the record was being rotated; it is left as it is")
		}
		return nil, 0, l.errorf("%v", unwrapPath(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, l.errorf("%v", unwrapPath(err))
	}
	if err := private(fi); err != nil {
		f.Close()
		return nil, 0, l.errorf("%v", err)
	}
	if create || fi.Size() == 0 {
		// Whatever the umask, the file is the user's to read and write.
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, 0, l.errorf("%v", unwrapPath(err))
		}
	}
	return f, fi.Size(), nil
}

// private checks that fi is a regular file that only the user may read
// or write (where file modes say so).
func private(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("is not a regular file (%s); give the path of a file", fi.Mode().Type())
	}
	return ownedByUserAlone(fi)
}

// unwrapPath is err without the *fs.PathError around it, whose path the
// message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// endsWithNewline reports whether the file at path, of size > 0 and open
// as f, ends with a newline. When it cannot tell, it says yes.
func endsWithNewline(f *os.File, path string, size int64) bool {
	r, err := openRead(path)
	if err != nil {
		return true
	}
	defer r.Close()
	if a, err1 := f.Stat(); err1 == nil {
		if b, err2 := r.Stat(); err2 != nil || !os.SameFile(a, b) {
			return true
		}
	}
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return true
	}
	return last[0] == '\n'
}

// Intercept records call once it ends: install it as the registry's
// first interceptor (see the package's documentation). It never changes
// the call or its result.
func (l *Log) Intercept(ctx context.Context, call *host.Call, next host.Handler) host.Result {
	start := time.Now()
	var res host.Result
	ended := false
	defer func() {
		if !ended { // next panicked: the call is recorded as failed
			res = host.Result{IsError: true}
		}
		l.write(newRecord(call, res, start, time.Since(start)))
	}()
	res = next(ctx, call)
	ended = true
	return res
}

// newRecord is the record of call, which started at start, took d and
// ended with res.
func newRecord(call *host.Call, res host.Result, start time.Time, d time.Duration) *Record {
	r := &Record{
		Time:        start.UTC(),
		Caller:      toolcall.Bound(call.Caller, MaxText),
		Tool:        toolcall.Bound(call.Tool, MaxText),
		Source:      toolcall.Bound(call.Source, MaxText),
		Args:        boundArgs(call.Args),
		Decision:    None,
		DurationMS:  float64(d) / float64(time.Millisecond),
		Error:       res.IsError,
		ResultBytes: len(res.Text) + len(res.Structured),
	}
	if dec := call.Decision; dec != nil {
		r.Decision = Deny
		if dec.Allowed {
			r.Decision = Allow
		}
		r.By = toolcall.Bound(dec.By, MaxText)
		r.Reason = toolcall.Bound(dec.Reason, MaxText)
	}
	return r
}

// write appends r to the file as one line, rotating the file first when
// the line would take it past Options.MaxSize. It never fails: a line
// that cannot be written is lost, and said through the logger (once, until
// lines are written again).
func (l *Log) write(r *Record) {
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	enc := json.NewEncoder(buf) // ends the line with its newline
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Only malformed Args can fail; record that they were.
		c := *r
		c.Args = json.RawMessage(`"[arguments that are not JSON]"`)
		buf.Reset()
		if err := enc.Encode(&c); err != nil {
			l.logger.Error("audit record: a line cannot be made", "file", l.path, "tool", r.Tool, "error", err)
			return
		}
	}
	l.writeLine(buf.Bytes())
}

// writeLine writes line, which ends with a newline, with one write.
func (l *Log) writeLine(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if !l.closedSaid {
			l.closedSaid = true
			l.logger.Error("audit record: calls made after Close are not recorded", "file", l.path)
		}
		return
	}
	if l.torn {
		line = append([]byte{'\n'}, line...)
	}
	if l.maxSize >= 0 && l.size > l.base && l.size-l.base+int64(len(line)) > l.maxSize {
		l.rotate()
	}
	n, err := l.f.Write(line)
	if err == nil {
		l.size += int64(n)
		l.torn = false
		if l.failing {
			l.logger.Info("audit record: lines are written again", "file", l.path, "lost", l.lost)
			l.failing, l.lost = false, 0
		}
		return
	}
	if n > 0 {
		// A part of the line made it: take it back, so that the file
		// holds whole lines only. Failing that, the next line starts on
		// a line of its own.
		if terr := l.f.Truncate(l.size); terr != nil {
			l.size += int64(n)
			l.torn = line[n-1] != '\n'
		}
	}
	l.lost++
	if !l.failing {
		l.failing = true
		l.logger.Error("audit record: a line cannot be written; calls go on, unrecorded, until lines can be written again",
			"file", l.path, "error", err)
	}
}

// rotate renames the file FILE.1 (FILE.1 to FILE.2, and so on, the
// oldest dropped) and opens a new one. If that fails, it says so, and
// lines go on to the file in hand until MaxSize more bytes are written,
// when rotation is tried again.
func (l *Log) rotate() {
	name := func(i int) string { return l.path + "." + strconv.Itoa(i) }
	for i := l.keep - 1; i >= 1; i-- {
		if err := os.Rename(name(i), name(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.rotateFailed(err)
			return
		}
	}
	// A file missing from the path (moved away by a rotation that
	// failed half way, or by someone) leaves the path free.
	if err := os.Rename(l.path, name(1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.rotateFailed(err)
		return
	}
	f, size, err := l.open(true)
	if err != nil {
		// Lines go on to the file in hand, FILE.1 now.
		l.rotateFailed(err)
		return
	}
	l.f.Close()
	l.f, l.size, l.base, l.torn = f, size, 0, false
}

func (l *Log) rotateFailed(err error) {
	l.base = l.size
	l.logger.Error("audit record: the file cannot be rotated; lines go on to the file in hand, and rotation is tried again later", "file", l.path, "error", err)
}

// Close closes the file, once its lines are on disk. Calls made after
// Close run unrecorded.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	serr := f.Sync()
	if err := f.Close(); err != nil {
		return l.errorf("%v", unwrapPath(err))
	}
	if serr != nil {
		return l.errorf("%v", unwrapPath(serr))
	}
	return nil
}
