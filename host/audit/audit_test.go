package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/sdk"
)

// echoIn are the arguments of the test tools.
type echoIn struct {
	N         int              `json:"n,omitempty"`
	Text      string           `json:"text,omitempty"`
	Token     string           `json:"token,omitempty"`
	MaxTokens int              `json:"max_tokens,omitempty"`
	Author    string           `json:"author,omitempty"`
	Config    map[string]any   `json:"config,omitempty"`
	Items     []map[string]any `json:"items,omitempty"`
}

type statsOut struct {
	Count int `json:"count"`
}

// decide is the policy of the tests, inside the record: it allows every
// call, but denies danger's, and leaves free's undecided.
func decide(ctx context.Context, call *host.Call, next host.Handler) host.Result {
	switch call.Tool {
	case "danger":
		call.Decision = &host.Decision{By: `rule "danger"`, Reason: "not on a Friday"}
		return host.Denied(call.Tool, `denied by rule "danger"`)
	case "free":
		return next(ctx, call)
	}
	call.Decision = &host.Decision{Allowed: true, By: "mode auto"}
	return next(ctx, call)
}

// newRegistry is a registry of in-process tools whose calls pass through
// rec (outermost) and decide.
func newRegistry(t testing.TB, rec *audit.Log) *host.ToolRegistry {
	t.Helper()
	reg := host.NewToolRegistry(&host.Options{
		Logger:       hclog.NewNullLogger(),
		Interceptors: []host.Interceptor{rec.Intercept, decide},
	})
	echo := func(_ context.Context, in echoIn) (string, error) { return "echo " + strconv.Itoa(in.N), nil }
	tools := []sdk.Tool{
		sdk.NewTool(sdk.Info{Name: "echo", Description: "Echo."}, echo),
		sdk.NewTool(sdk.Info{Name: "danger", Description: "Denied."}, echo),
		sdk.NewTool(sdk.Info{Name: "free", Description: "Undecided."}, echo),
		sdk.NewTool(sdk.Info{Name: "fail", Description: "Fails."},
			func(context.Context, echoIn) (string, error) { return "", errors.New("it broke") }),
		sdk.NewStructuredTool(sdk.Info{Name: "stats", Description: "Structured."},
			func(_ context.Context, in echoIn) (string, statsOut, error) { return "one", statsOut{Count: 1}, nil }),
	}
	for _, tool := range tools {
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// syncBuffer is a buffer for a logger, safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// open opens a record at path, closed when the test ends, and returns it
// with its logger's output.
func open(t testing.TB, path string, opts *audit.Options) (*audit.Log, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts == nil {
		opts = &audit.Options{}
	}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	rec, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Close(); err != nil {
			t.Error(err)
		}
	})
	return rec, logs
}

// line is a line of a file, decoded, and as written.
type line struct {
	audit.Record
	raw string
}

// readLines reads the lines of the file at path, failing the test on a
// line that is not a whole record.
func readLines(t testing.TB, path string) []line {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline: %q", path, tail(data))
	}
	var lines []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var l line
		if err := dec.Decode(&l.Record); err != nil {
			t.Fatalf("%s: line %d is not a record (%v): %q", path, len(lines)+1, err, sc.Text())
		}
		l.raw = sc.Text()
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func tail(b []byte) []byte { return b[max(0, len(b)-80):] }

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func skipWithoutModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes and symbolic links are Unix's")
	}
}

// Every call that reaches the interceptors gets one line, with what
// decided it, and a call that reaches none (an unknown tool, invalid
// arguments) gets none.
func TestOneLinePerCall(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, _ := open(t, path, nil)
	reg := newRegistry(t, rec)
	ctx := context.Background()

	before := time.Now()
	results := []string{
		reg.Execute(host.WithCaller(ctx, "chat-1"), "echo", json.RawMessage(`{"n":1,"text":"hi <b> & \"you\""}`)),
		reg.Execute(ctx, "danger", json.RawMessage(`{"n":2}`)),
		reg.Execute(ctx, "free", json.RawMessage(`{}`)),
		reg.Execute(ctx, "fail", json.RawMessage(`{"n":4}`)),
		reg.ExecuteResult(ctx, "stats", json.RawMessage(`{"n":5}`)).Text,
	}
	reg.Execute(ctx, "nope", json.RawMessage(`{}`))          // not found
	reg.Execute(ctx, "echo", json.RawMessage(`{"n":"six"}`)) // invalid
	after := time.Now()

	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("%d lines for 5 calls that reached the interceptors:\n%v", len(lines), lines)
	}
	want := []audit.Record{
		{Caller: "chat-1", Tool: "echo", Args: json.RawMessage(`{"n":1,"text":"hi <b> & \"you\""}`), Decision: "allow", By: "mode auto"},
		{Tool: "danger", Args: json.RawMessage(`{"n":2}`), Decision: "deny", By: `rule "danger"`, Reason: "not on a Friday", Error: true},
		{Tool: "free", Args: json.RawMessage(`{}`), Decision: "none"},
		{Tool: "fail", Args: json.RawMessage(`{"n":4}`), Decision: "allow", By: "mode auto", Error: true},
		{Tool: "stats", Args: json.RawMessage(`{"n":5}`), Decision: "allow", By: "mode auto", ResultBytes: len("one") + len(`{"count":1}`)},
	}
	for i, l := range lines {
		w := want[i]
		if w.ResultBytes == 0 {
			w.ResultBytes = len(results[i])
		}
		got := l.Record
		if got.Time.Before(before.Truncate(0)) || got.Time.After(after) || got.Time.Location() != time.UTC {
			t.Errorf("line %d: time %v, want UTC between %v and %v", i+1, got.Time, before, after)
		}
		if got.DurationMS < 0 || got.DurationMS > float64(after.Sub(before).Milliseconds()+1) {
			t.Errorf("line %d: duration_ms %v", i+1, got.DurationMS)
		}
		got.Time, got.DurationMS = time.Time{}, 0
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", w); g != w {
			t.Errorf("line %d:\n got %s\nwant %s\nline: %s", i+1, g, w, l.raw)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l.raw), &fields); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"time", "tool", "args", "decision", "duration_ms", "error", "result_bytes"} {
			if _, ok := fields[key]; !ok {
				t.Errorf("line %d has no %q: %s", i+1, key, l.raw)
			}
		}
		if _, ok := fields["caller"]; ok != (w.Caller != "") {
			t.Errorf("line %d: caller given %v, present %v: %s", i+1, w.Caller != "", ok, l.raw)
		}
		if _, ok := fields["source"]; ok {
			t.Errorf("line %d: source of an in-process tool: %s", i+1, l.raw)
		}
		var ts string
		json.Unmarshal(fields["time"], &ts)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") {
			t.Errorf("line %d: time %q is not RFC 3339 in UTC", i+1, ts)
		}
	}
}

// Calls made through Intercept directly: the source is kept, and a call
// whose handler panics is recorded as failed before the panic goes on.
func TestInterceptRecordsSourceAndPanics(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, _ := open(t, path, nil)
	call := &host.Call{Tool: "query", Source: "mcp:db", Args: json.RawMessage(`{"sql":"SELECT 1"}`)}
	rec.Intercept(context.Background(), call, func(context.Context, *host.Call) host.Result {
		return host.Result{Text: "1"}
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		rec.Intercept(context.Background(), call, func(context.Context, *host.Call) host.Result { panic("boom") })
	}()
	lines := readLines(t, path)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if l := lines[0]; l.Source != "mcp:db" || l.Error || l.ResultBytes != 1 || l.Decision != "none" {
		t.Errorf("first line: %s", l.raw)
	}
	if l := lines[1]; !l.Error || l.ResultBytes != 0 {
		t.Errorf("panicking call: %s", l.raw)
	}
}

// Many calls at once each get a whole line, and none is lost.
func TestConcurrentCallsWriteWholeLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, _ := open(t, path, nil)
	reg := newRegistry(t, rec)
	const goroutines, calls = 32, 40
	long := strings.Repeat("x", 900) // lines longer than PIPE_BUF
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx := host.WithCaller(context.Background(), "g"+strconv.Itoa(g))
			for i := range calls {
				tool := []string{"echo", "danger", "free"}[i%3]
				args, _ := json.Marshal(echoIn{N: i, Text: long})
				reg.Execute(ctx, tool, args)
			}
		})
	}
	wg.Wait()
	lines := readLines(t, path)
	if len(lines) != goroutines*calls {
		t.Fatalf("%d lines for %d calls", len(lines), goroutines*calls)
	}
	per := map[string]int{}
	for _, l := range lines {
		per[l.Caller]++
	}
	for g := range goroutines {
		if n := per["g"+strconv.Itoa(g)]; n != calls {
			t.Errorf("caller g%d: %d lines, want %d", g, n, calls)
		}
	}
}

// Secrets are redacted wherever they are in the arguments, under keys
// that name them, and in strings that show them; what only looks like
// them is kept.
func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, _ := open(t, path, nil)
	reg := newRegistry(t, rec)
	args := `{
		"token": "tok-hush1",
		"max_tokens": 4096,
		"author": "Jane Doe",
		"config": {
			"Password": "hush2",
			"deeper": {"X-Api-Key": "hush3", "clientSecret": {"v": "hush4"}, "region": "eu-west-1"},
			"aws": [{"AWS_SECRET_ACCESS_KEY": "hush5"}, {"session_key": 12345678}]
		},
		"items": [{"Authorization": "Basic hush6"}, {"cookie": "sid=hush7"}, {"name": "kept"}],
		"text": "GITHUB_TOKEN=hush8 curl -H 'Authorization: Bearer hush9' https://me:hush10@example.com/?access_token=hush11&page=2 --password hush12"
	}`
	if got := reg.Execute(context.Background(), "echo", json.RawMessage(args)); got != "echo 0" {
		t.Fatalf("the call failed: %s", got)
	}
	l := readLines(t, path)[0]
	if strings.Contains(l.raw, "hush") || strings.Contains(l.raw, "12345678") {
		t.Errorf("a secret is in the record: %s", l.raw)
	}
	for _, kept := range []string{`"max_tokens":4096`, `"author":"Jane Doe"`, `"region":"eu-west-1"`, `"name":"kept"`,
		`"token":"[redacted]"`, `"clientSecret":"[redacted]"`, `GITHUB_TOKEN=[redacted] curl`, `'Authorization: [redacted]'`,
		`https://me:[redacted]@example.com/?access_token=[redacted]&page=2 --password [redacted]`} {
		if !strings.Contains(l.raw, kept) {
			t.Errorf("the record lacks %s: %s", kept, l.raw)
		}
	}
}

// Long strings are cut with a marker saying how much, and arguments too
// long as a whole are recorded as their text, cut: no line is long.
func TestLongValuesBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, _ := open(t, path, nil)
	reg := newRegistry(t, rec)
	ctx := context.Background()

	long := strings.Repeat("é", 50_000) // 100,000 bytes, no rune split
	args, _ := json.Marshal(echoIn{Text: long})
	reg.Execute(ctx, "echo", args)
	config := map[string]any{}
	for i := range 500 {
		config[fmt.Sprintf("key%03d", i)] = strings.Repeat("v", 100)
	}
	args, _ = json.Marshal(echoIn{Config: config})
	reg.Execute(ctx, "echo", args)

	lines := readLines(t, path)
	var got echoIn
	if err := json.Unmarshal(lines[0].Args, &got); err != nil {
		t.Fatal(err)
	}
	kept, cut, ok := strings.Cut(got.Text, "... [")
	if !ok || !strings.HasPrefix(long, kept) || len(kept) > audit.MaxString ||
		cut != strconv.Itoa(len(long)-len(kept))+" bytes cut]" {
		t.Errorf("a long string is recorded as %d bytes ending %q", len(got.Text), got.Text[max(0, len(got.Text)-40):])
	}
	var text string
	if err := json.Unmarshal(lines[1].Args, &text); err != nil {
		t.Fatalf("long arguments are not recorded as a string: %s", lines[1].Args)
	}
	if !strings.HasPrefix(text, `{"config":{"key000":"vvv`) || !strings.HasSuffix(text, " bytes cut]") || len(text) > audit.MaxArgs+32 {
		t.Errorf("long arguments recorded as %d bytes: %.60q...%q", len(text), text, text[max(0, len(text)-30):])
	}
	for i, l := range lines {
		if len(l.raw) > 2*audit.MaxArgs {
			t.Errorf("line %d is %d bytes long", i+1, len(l.raw))
		}
	}
}

// A new file is the user's alone: mode 0600.
func TestFileCreatedPrivate(t *testing.T) {
	t.Parallel()
	skipWithoutModes(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	open(t, path, nil)
	if m := mode(t, path); m != 0o600 {
		t.Errorf("mode %v, want -rw-------", m)
	}
}

// An existing file that others may read is refused, and left as it is.
func TestWideFileRefused(t *testing.T) {
	t.Parallel()
	skipWithoutModes(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644) // whatever the umask
	rec, err := audit.Open(path, nil)
	if err == nil {
		rec.Close()
		t.Fatal("a file of mode 0644 was opened")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "audit record "+path+": ") || !strings.Contains(msg, "chmod 600") {
		t.Errorf("error %q must name the file and the fix", msg)
	}
	if m := mode(t, path); m != 0o644 {
		t.Errorf("the refused file's mode changed to %v", m)
	}
}

// A symbolic link at the path is refused, whether its target exists or
// not, and its target is left alone.
func TestSymlinkRefused(t *testing.T) {
	t.Parallel()
	skipWithoutModes(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"link": target, "dangling": filepath.Join(dir, "missing")} {
		path := filepath.Join(dir, name)
		if err := os.Symlink(to, path); err != nil {
			t.Fatal(err)
		}
		rec, err := audit.Open(path, nil)
		if err == nil {
			rec.Close()
			t.Errorf("%s: a symbolic link was opened", name)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "audit record "+path+": ") || !strings.Contains(msg, "symbolic link") {
			t.Errorf("%s: error %q must name the file and say it is a link", name, msg)
		}
	}
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Errorf("the link's target was written: %q", data)
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the dangling link's target was created")
	}
}

// A missing directory is an error naming the file.
func TestMissingDirectory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nowhere", "audit.jsonl")
	_, err := audit.Open(path, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "audit record "+path+": ") || !strings.Contains(err.Error(), "create its directory") {
		t.Errorf("error %v", err)
	}
}

// Rotation keeps FILE and FILE.1 to FILE.Keep, never more, none past
// MaxSize, each 0600 and of whole lines, holding the newest calls in
// order.
func TestRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const maxSize, keep, calls = 2 << 10, 2, 200
	rec, logs := open(t, path, &audit.Options{MaxSize: maxSize, Keep: keep})
	reg := newRegistry(t, rec)
	for i := range calls {
		args, _ := json.Marshal(echoIn{N: i})
		reg.Execute(context.Background(), "echo", args)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := "audit.jsonl audit.jsonl.1 audit.jsonl.2"; strings.Join(names, " ") != want {
		t.Fatalf("files %v, want %s", names, want)
	}
	var all []line
	for _, name := range []string{"audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxSize {
			t.Errorf("%s is %d bytes, past MaxSize %d", name, fi.Size(), maxSize)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", name, fi.Mode())
		}
		lines := readLines(t, p)
		if len(lines) == 0 {
			t.Errorf("%s is empty", name)
		}
		all = append(all, lines...)
	}
	var n echoIn
	for i, l := range all {
		json.Unmarshal(l.Args, &n)
		if want := calls - len(all) + i; n.N != want {
			t.Fatalf("the kept lines are not the newest calls in order: line %d is call %d, want %d", i, n.N, want)
		}
	}
	if s := logs.String(); s != "" {
		t.Errorf("logged: %s", s)
	}
}

// Opening the file again appends to it; a last line cut short by a crash
// stays as it is, and the next line starts on a line of its own.
func TestReopenAppends(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	call := &host.Call{Tool: "echo", Args: json.RawMessage(`{}`)}
	ok := func(context.Context, *host.Call) host.Result { return host.Result{Text: "ok"} }

	rec, _ := open(t, path, nil)
	rec.Intercept(context.Background(), call, ok)
	rec.Intercept(context.Background(), call, ok)
	rec.Close()
	rec, _ = open(t, path, nil)
	rec.Intercept(context.Background(), call, ok)
	rec.Close()
	if n := len(readLines(t, path)); n != 3 {
		t.Fatalf("%d lines after reopening, want 3", n)
	}

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2025-`)
	f.Close()
	rec, logs := open(t, path, nil)
	if !strings.Contains(logs.String(), "cut short") {
		t.Errorf("the cut line was not said: %q", logs.String())
	}
	rec.Intercept(context.Background(), call, ok)
	rec.Close()
	data, _ := os.ReadFile(path)
	rows := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(rows) != 5 || rows[3] != `{"time":"2025-` || !json.Valid([]byte(rows[4])) {
		t.Errorf("after a cut line:\n%s", data)
	}
}

// Calls made after Close run, unrecorded, and that is said once.
func TestCallsAfterClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	rec, logs := open(t, path, nil)
	reg := newRegistry(t, rec)
	rec.Close()
	for range 3 {
		if got := reg.Execute(context.Background(), "echo", json.RawMessage(`{"n":7}`)); got != "echo 7" {
			t.Errorf("a call after Close: %q", got)
		}
	}
	if n := len(readLines(t, path)); n != 0 {
		t.Errorf("%d lines after Close", n)
	}
	if n := strings.Count(logs.String(), "after Close"); n != 1 {
		t.Errorf("said %d times: %s", n, logs.String())
	}
}

// crashEnv names the file that the test binary, run again by
// TestCrashLeavesWholeLines, records calls to until it is killed.
const crashEnv = "AUDIT_TEST_CRASH_FILE"

// A process killed while it records calls leaves only whole lines, and
// the file goes on from there.
func TestCrashLeavesWholeLines(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		recordUntilKilled(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesWholeLines$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 256<<10 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child recorded too little in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	lines := readLines(t, path) // fails on any line that is not whole
	if len(lines) < 100 {
		t.Fatalf("%d lines", len(lines))
	}

	rec, logs := open(t, path, nil)
	rec.Intercept(context.Background(), &host.Call{Tool: "after"}, func(context.Context, *host.Call) host.Result { return host.Result{} })
	rec.Close()
	again := readLines(t, path)
	if len(again) != len(lines)+1 || again[len(again)-1].Tool != "after" {
		t.Errorf("%d lines after one more call, from %d", len(again), len(lines))
	}
	if s := logs.String(); s != "" {
		t.Errorf("logged: %s", s)
	}
}

// recordUntilKilled records calls to path from several goroutines, as
// fast as it can, for at most 20 seconds.
func recordUntilKilled(path string) {
	rec, err := audit.Open(path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	args, _ := json.Marshal(echoIn{Text: strings.Repeat("crash ", 100)})
	stop := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				rec.Intercept(ctx, &host.Call{Tool: "echo", Args: args}, func(context.Context, *host.Call) host.Result {
					return host.Result{Text: "ok"}
				})
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}

// BenchmarkRecord is the cost of recording one call: its record made
// (arguments redacted and bounded), encoded and written.
func BenchmarkRecord(b *testing.B) {
	rec, _ := open(b, filepath.Join(b.TempDir(), "audit.jsonl"), &audit.Options{MaxSize: 64 << 20})
	call := &host.Call{
		Tool:     "run_bash",
		Source:   "agenthost-plugin-bash",
		Caller:   "chat-1",
		Args:     json.RawMessage(`{"command":"git log --oneline -n 20 -- host/audit","timeout":30,"env":{"GITHUB_TOKEN":"ghp_x"}}`),
		Decision: &host.Decision{Allowed: true, By: `rule "run_bash(git log*)"`},
	}
	ctx := context.Background()
	next := func(context.Context, *host.Call) host.Result { return host.Result{Text: "ok"} }
	b.ReportAllocs()
	for b.Loop() {
		rec.Intercept(ctx, call, next)
	}
}
