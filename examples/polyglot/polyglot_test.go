package polyglot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/toolv1"
)

// markerVar is set in the test's environment and passed through to the
// plugins (Options.PluginEnv), so that their processes, and theirs only,
// can be found in /proc.
const markerVar = "AGENTHOST_POLYGLOT_TEST"

var marker string

func TestMain(m *testing.M) {
	plugintest.IsolateCache()
	os.Setenv(markerVar, strconv.Itoa(os.Getpid()))
	marker = markerVar + "=" + os.Getenv(markerVar)
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// A language is one example plugin and what its tools answer.
type language struct {
	name  string // the subtest's
	dir   string // the example's directory, from the module root
	entry string // its entry file, the plugin's name
	// textTool takes {"text": ...}; fileTool takes {"path": ...} in the
	// workspace and logs fileLog at debug level, with the path, before it
	// reads the file.
	textTool, fileTool string
	fileLog            string
	// What the tools answer.
	text  func(text string) string
	file  func(content string) string
	tools map[string]tool
	// A comment line in the entry file's language.
	comment string
}

// A tool is what the host lists of one.
type tool struct {
	description, schema string
}

// schema is the JSON Schema of a tool that takes one string.
func schema(property, description string) string {
	return fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string","description":%q}},"required":[%[1]q],"additionalProperties":false}`, property, description)
}

var languages = []language{
	{
		name:  "node",
		dir:   "examples/node",
		entry: "agenthost-plugin-wordcount",

		textTool: "word_count",
		fileTool: "count_lines",
		fileLog:  "counting lines",
		text:     func(s string) string { return strconv.Itoa(len(strings.Fields(s))) },
		file:     func(s string) string { return strconv.Itoa(strings.Count(s, "\n")) },
		tools: map[string]tool{
			"word_count":  {"Count the words of a text (runs of characters between white space).", schema("text", "the text whose words to count")},
			"count_lines": {"Count the lines of a text file in the workspace.", schema("path", "the file, relative to the first workspace root or absolute")},
		},
		comment: "// changed\n",
	},
	{
		name:  "python",
		dir:   "examples/python",
		entry: "agenthost-plugin-digest",

		textTool: "sha256",
		fileTool: "sha256_file",
		fileLog:  "hashing",
		text:     sha256Hex,
		file:     sha256Hex,
		tools: map[string]tool{
			"sha256":      {"The SHA-256 of a text (its UTF-8 bytes), in hex.", schema("text", "the text to hash")},
			"sha256_file": {"The SHA-256 of a file in the workspace, in hex.", schema("path", "the file, relative to the first workspace root or absolute")},
		},
		comment: "# changed\n",
	},
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The text tools' argument, and the content of the file the file tools
// read.
const (
	sampleText = "  Grüße, world:\n\tthree words  "
	notes      = "alpha beta\ngamma\n\ndelta\n"
)

// root is the module's root directory, absolute.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(plugintest.Root())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	requireOnce sync.Once
	requireErr  string
)

// requirePlugins skips the test, saying in one line what to install,
// unless both plugins can run: node with the example's node_modules, and
// /usr/bin/python3 with Debian's h2 and protobuf. With
// AGENTHOST_REQUIRE_ALL set (CI), it fails instead.
func requirePlugins(t *testing.T) {
	t.Helper()
	requireOnce.Do(func() {
		var missing []string
		if node, err := exec.LookPath("node"); err != nil {
			missing = append(missing, "node is not installed: the Node.js example needs Node.js 18 or newer (Debian: apt-get install nodejs)")
		} else if out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output(); err != nil {
			missing = append(missing, fmt.Sprintf("%s does not run: %v", node, err))
		} else if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); major < 18 {
			missing = append(missing, fmt.Sprintf("%s is Node.js %d: the Node.js example needs 18 or newer", node, major))
		}
		for _, pkg := range []string{"@grpc/grpc-js", "@grpc/proto-loader"} {
			if _, err := os.Stat(filepath.Join(root(t), "examples", "node", "node_modules", pkg, "package.json")); err != nil {
				missing = append(missing, "examples/node/node_modules lacks "+pkg+": run make test, or npm ci in examples/node")
				break
			}
		}
		if out, err := exec.Command("/usr/bin/python3", "-c", "import h2, google.protobuf").CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			missing = append(missing, fmt.Sprintf("/usr/bin/python3 cannot import h2 and google.protobuf (%v: %s): install Debian's python3-h2 and python3-protobuf (apt-get install python3-h2 python3-protobuf)", err, lines[len(lines)-1]))
		}
		if len(missing) > 0 {
			requireErr = "the example plugins in other languages cannot run:\n  " + strings.Join(missing, "\n  ")
		}
	})
	if requireErr != "" {
		if os.Getenv("AGENTHOST_REQUIRE_ALL") == "" {
			// make test installs them where it may (.ci/prereqs); CI
			// requires them.
			t.Skip(strings.ReplaceAll(requireErr, "\n  ", "; "))
		}
		t.Fatal(requireErr)
	}
}

// setup is what both tests use: a plugins directory holding a symlink
// to each example's entry file (a plugin's other files stay beside its
// entry file, where it finds them: the host lets a script read its own
// directory, and nothing more is granted), and a workspace root with a
// file.
type setup struct {
	plugins, work string
	examples      map[string]string // language name → the example's directory, symlinks resolved
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	requirePlugins(t)
	s := &setup{plugins: t.TempDir(), work: t.TempDir(), examples: map[string]string{}}
	for _, lang := range languages {
		dir := filepath.Join(root(t), lang.dir)
		entry := filepath.Join(dir, lang.entry)
		if info, err := os.Stat(entry); err != nil || info.Mode().Perm()&0o111 == 0 {
			t.Fatalf("%s is not an executable file (%v)", entry, err)
		}
		if err := os.Symlink(entry, filepath.Join(s.plugins, lang.entry)); err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.examples[lang.name] = real
	}
	write(t, filepath.Join(s.work, "notes.txt"), notes)
	return s
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsonArgs(t *testing.T, key, value string) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(map[string]string{key: value})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// call runs a tool that must succeed.
func call(t *testing.T, reg *host.ToolRegistry, name string, args json.RawMessage) string {
	t.Helper()
	got := reg.Execute(t.Context(), name, args)
	if host.IsError(got) {
		t.Fatalf("%s(%s): %s", name, args, got)
	}
	return got
}

// pids lists the live processes of lang's plugin that the registry of
// TestPlugins started: they have the marker in their environment and the
// entry file's path among their arguments.
func pids(t *testing.T, lang language) []int {
	t.Helper()
	var out []int
	for _, pid := range plugintest.Processes(t, marker) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		for arg := range strings.SplitSeq(string(cmdline), "\x00") {
			if filepath.Base(arg) == lang.entry {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// pid is the one process of lang's plugin, once any other it had (one
// stopped a moment ago) has ended.
func pid(t *testing.T, lang language) int {
	t.Helper()
	var got []int
	poll.Eventually(t, 10*time.Second, lang.entry+" runs as one process", func() error {
		if got = pids(t, lang); len(got) != 1 {
			return fmt.Errorf("processes %v", got)
		}
		return nil
	})
	return got[0]
}

// blocked starts a call of lang's file tool on a FIFO in the workspace
// and returns once the plugin is inside the call, blocked reading the
// FIFO (a process has the FIFO open for reading exactly when its write
// end can be opened without blocking). It returns the call's answer to
// come. The write end stays open until the test ends, so the read
// never ends by itself.
func blocked(t *testing.T, reg *host.ToolRegistry, lang language, work, name string) <-chan string {
	t.Helper()
	fifo := filepath.Join(work, name)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	args := jsonArgs(t, "path", name)
	answer := make(chan string, 1)
	go func() { answer <- reg.Execute(context.Background(), lang.fileTool, args) }()
	var w *os.File
	poll.Eventually(t, 10*time.Second, lang.entry+" reads "+name, func() error {
		select {
		case got := <-answer:
			return poll.Stop(fmt.Errorf("the call of %s on a FIFO ended before it read it: %s", lang.fileTool, got))
		default:
		}
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err // ENXIO: no reader yet
		}
		w = f
		return nil
	})
	t.Cleanup(func() { w.Close() })
	return answer
}

// TestPlugins runs both example plugins through one registry, as a host
// embedding agenthost would: each language's checks share its plugin's
// process, which they kill and see started again, and the last check
// closes the registry.
func TestPlugins(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	logs := &plugintest.Buffer{}
	reg, err := host.NewDefaultToolRegistry(t.Context(), s.plugins, &host.Options{
		Roots:     []string{s.work},
		PluginEnv: []string{markerVar},
		Logger:    hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		reg.Close()
		if t.Failed() {
			t.Logf("the host's log:\n%s", logs)
		}
	})

	t.Run("languages", func(t *testing.T) {
		for _, lang := range languages {
			t.Run(lang.name, func(t *testing.T) {
				t.Parallel()
				checkLanguage(t, reg, lang, s, logs)
			})
		}
	})

	t.Run("Close ends calls under way and leaves no process", func(t *testing.T) {
		var answers []<-chan string
		var running []int
		for _, lang := range languages {
			answers = append(answers, blocked(t, reg, lang, s.work, "pipe-close-"+lang.name))
			running = append(running, pid(t, lang))
		}
		before := len(logs.String())
		reg.Close()
		for i, lang := range languages {
			if got := <-answers[i]; !host.IsError(got) {
				t.Errorf("%s: the call under way at Close answered %q", lang.entry, got)
			}
			if left := pids(t, lang); len(left) > 0 {
				t.Errorf("%s: processes %v remain after Close", lang.entry, left)
			}
			// Nothing of its process group either.
			if err := syscall.Kill(-running[i], 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s: its process group %d remains after Close (%v)", lang.entry, running[i], err)
			}
		}
		// A plugin serving calls is asked to shut down (go-plugin's
		// controller service); one that does not is killed after a grace.
		if strings.Contains(logs.String()[before:], "plugin failed to exit gracefully") {
			t.Errorf("a plugin did not answer the host's request to shut down:\n%s", logs.String()[before:])
		}
		if got := reg.Execute(t.Context(), "word_count", jsonArgs(t, "text", "a")); !host.IsError(got) {
			t.Errorf("a call after Close answered %q", got)
		}
	})
}

func checkLanguage(t *testing.T, reg *host.ToolRegistry, lang language, s *setup, logs *plugintest.Buffer) {
	t.Run("its tools are listed", func(t *testing.T) {
		infos := map[string]host.ToolInfo{}
		for _, info := range reg.Tools() {
			infos[info.Name] = info
		}
		schemas := map[string]json.RawMessage{}
		for _, s := range reg.EnabledSchemas() {
			schemas[s.Function.Name] = s.Function.Parameters
		}
		for name, want := range lang.tools {
			info, ok := infos[name]
			if !ok {
				t.Errorf("%s is not listed; the tools are %v", name, reg.ToolNames())
				continue
			}
			wantInfo := host.ToolInfo{Name: name, Description: want.description, Enabled: true, Plugin: lang.entry,
				Annotations: host.Annotations{ReadOnly: true, Idempotent: true}}
			if !reflect.DeepEqual(info, wantInfo) {
				t.Errorf("%s:\n got %+v\nwant %+v", name, info, wantInfo)
			}
			var got, wantSchema any
			if err := json.Unmarshal(schemas[name], &got); err != nil {
				t.Errorf("%s's schema %s: %v", name, schemas[name], err)
			}
			if err := json.Unmarshal([]byte(want.schema), &wantSchema); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantSchema) {
				t.Errorf("%s's schema is %s, want %s", name, schemas[name], want.schema)
			}
		}
		for _, r := range reg.Plugins() {
			if filepath.Base(r.Path) != lang.entry {
				continue
			}
			// Granted nothing, it may read its own directory, where its
			// helper and packages are.
			granted := sdk.Permissions{Roots: sdk.RootsRead, Read: []string{s.examples[lang.name]}}
			if r.Err != nil || r.Name != lang.entry || r.Version != "1.0.0" || r.ProtocolMinor != 5 ||
				!slices.Equal(r.Tools, []string{lang.textTool, lang.fileTool}) || r.Sandbox.Asked.Roots != sdk.RootsRead ||
				!reflect.DeepEqual(r.Sandbox.Granted, granted) {
				t.Errorf("%s's report: %+v\nwant granted %+v", lang.entry, r, granted)
			}
			return
		}
		t.Errorf("no report of %s", lang.entry)
	})

	t.Run("a call answers", func(t *testing.T) {
		if got, want := call(t, reg, lang.textTool, jsonArgs(t, "text", sampleText)), lang.text(sampleText); got != want {
			t.Errorf("%s(%q) = %q, want %q", lang.textTool, sampleText, got, want)
		}
		if got, want := call(t, reg, lang.fileTool, jsonArgs(t, "path", "notes.txt")), lang.file(notes); got != want {
			t.Errorf("%s(notes.txt) = %q, want %q", lang.fileTool, got, want)
		}
	})

	t.Run("a tool error is the call's answer", func(t *testing.T) {
		outside := filepath.Join(root(t), "go.mod")
		for args, want := range map[string]string{
			"missing.txt": "file not found: missing.txt",
			outside:       fmt.Sprintf("path %q is outside the workspace roots", outside),
			".":           ". is a directory",
		} {
			if got := reg.Execute(t.Context(), lang.fileTool, jsonArgs(t, "path", args)); got != "Error executing "+lang.fileTool+": "+want {
				t.Errorf("%s(%q) = %q, want the error %q", lang.fileTool, args, got, want)
			}
		}
	})

	t.Run("arguments the schema refuses never reach the plugin", func(t *testing.T) {
		never := "never-" + lang.name + ".txt"
		write(t, filepath.Join(s.work, never), "x\n")
		for _, args := range []string{
			`{"path":"` + never + `","follow":true}`,
			`{"path":7}`,
			`{}`,
		} {
			prefix := "Error executing " + lang.fileTool + ": invalid arguments: "
			if got := reg.Execute(t.Context(), lang.fileTool, json.RawMessage(args)); !strings.HasPrefix(got, prefix) {
				t.Errorf("%s(%s) = %q, want the host's refusal", lang.fileTool, args, got)
			}
		}
		// The plugin logs each path it reads before it reads it, on its
		// stderr, which the host reads in order: once the line of a later
		// call is in the log, that of a refused call would be too.
		barrier := "barrier-" + lang.name + ".txt"
		write(t, filepath.Join(s.work, barrier), "x\n")
		call(t, reg, lang.fileTool, jsonArgs(t, "path", barrier))
		line := lang.fileLog + ": path=" + barrier
		poll.Eventually(t, 10*time.Second, "the log shows "+line, func() error {
			if !strings.Contains(logs.String(), line) {
				return errors.New("not in the log yet")
			}
			return nil
		})
		if strings.Contains(logs.String(), never) {
			t.Errorf("the plugin ran a call the host refused:\n%s", logs)
		}
		// Its JSON log lines reach the host's log with their level.
		for l := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(l, line) && !strings.Contains(l, "[DEBUG]") {
				t.Errorf("the plugin's debug line is logged as %q", l)
			}
		}
	})

	t.Run("SIGTERM ends it, and the next call starts it again", func(t *testing.T) {
		old := pid(t, lang)
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", old))
		if err != nil {
			t.Fatal(err)
		}
		// The plugin serves on the host's connection: it is given no
		// socket directory, and leaves nothing behind.
		for kv := range strings.SplitSeq(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
				t.Errorf("the plugin is given a socket directory, %s", v)
			}
		}
		// The process the host started, and reaps: the plugin's, or its
		// sandbox's first (its parent).
		started := old
		if ppid, ok := sandbox.Parent(old); ok && ppid != os.Getpid() {
			started = ppid
		}
		if err := syscall.Kill(old, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// go-plugin logs the exit once the host has reaped the process:
		// from then on the next call starts a new one.
		exited := fmt.Sprintf("plugin process exited: plugin=%s id=%d", filepath.Join(s.plugins, lang.entry), started)
		poll.Eventually(t, 10*time.Second, "the host sees "+lang.entry+" exit", func() error {
			if l := logs.String(); !strings.Contains(l, exited+" ") && !strings.Contains(l, exited+"\n") {
				return errors.New("not in the log yet")
			}
			return nil
		})
		if got, want := call(t, reg, lang.textTool, jsonArgs(t, "text", "again")), lang.text("again"); got != want {
			t.Errorf("%s after SIGTERM = %q, want %q", lang.textTool, got, want)
		}
		if now := pid(t, lang); now == old {
			t.Errorf("the plugin's pid is still %d", now)
		}
	})

	t.Run("a crash costs the call under way, and the next call starts it again", func(t *testing.T) {
		answer := blocked(t, reg, lang, s.work, "pipe-crash-"+lang.name)
		old := pid(t, lang)
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The host says how it ended, or, when the process is not reaped
		// at once, that it stopped answering.
		got := <-answer
		prefix := "Error executing " + lang.fileTool + ": plugin " + lang.entry + " "
		if !strings.HasPrefix(got, prefix+"exited during the call") && !strings.HasPrefix(got, prefix+"stopped answering") {
			t.Errorf("the call under way when the plugin died answered %q", got)
		}
		if got, want := call(t, reg, lang.textTool, jsonArgs(t, "text", "after the crash")), lang.text("after the crash"); got != want {
			t.Errorf("%s after the crash = %q, want %q", lang.textTool, got, want)
		}
		if now := pid(t, lang); now == old {
			t.Errorf("the plugin's pid is still %d", now)
		}
	})
}

// cli runs the built agenthost with args and returns its stdout, stderr
// and exit status.
func cli(t *testing.T, exe string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AGENTHOST_PLUGINS=") || strings.HasPrefix(kv, markerVar+"=")
	})
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestCommandLine runs both example plugins through the built agenthost,
// with no grant: started at once (each may read its own directory, which
// agenthost plugins shows), listed (then from the description cache),
// and under a lock file, run while unchanged and refused once changed,
// with the lock's message.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	exe := plugintest.Install(t, t.TempDir(), "agenthost", "./cmd/agenthost")
	args := []string{"--config", "-", "--plugins", s.plugins, "--root", s.work}
	run := func(more ...string) (string, string, int) {
		t.Helper()
		return cli(t, exe, append(slices.Clone(args), more...)...)
	}

	// Without the description cache, each starts at once, which it could
	// not without reading the files beside its entry file.
	stdout, stderr, code := run("--cache-dir", "-", "plugins")
	for _, lang := range languages {
		want := fmt.Sprintf("%s\n  %s 1.0.0 (protocol 1.5)\n  tools: %s, %s\n", filepath.Join(s.plugins, lang.entry), lang.entry, lang.textTool, lang.fileTool)
		granted := "    granted: roots read-only, read " + s.examples[lang.name] + "; the system read-only\n"
		if code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, granted) {
			t.Errorf("agenthost plugins (exit status %d) does not say %q and %q:\n%s%s", code, want, granted, stdout, stderr)
		}
	}

	stdout, stderr, code = run("tools")
	if code != 0 {
		t.Fatalf("agenthost tools: exit status %d\n%s", code, stderr)
	}
	for _, lang := range languages {
		for name, want := range lang.tools {
			found := false
			for line := range strings.SplitSeq(stdout, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[0] == name && f[1] == "enabled" && f[2] == lang.entry &&
					strings.HasSuffix(line, "  "+want.description) {
					found = true
				}
			}
			if !found {
				t.Errorf("agenthost tools does not list %s, enabled, of %s: %q\n%s", name, lang.entry, want.description, stdout)
			}
		}
	}

	// Each lists what its tools come from in a .deps file beside it, so
	// that its description is cached: listing the tools again starts
	// neither.
	if _, stderr, code := run("--log-level", "debug", "tools"); code != 0 || strings.Contains(stderr, "plugin started") {
		t.Errorf("agenthost tools, a second time, started a plugin (exit status %d):\n%s", code, stderr)
	}

	lock := filepath.Join(s.plugins, host.LockFileName)
	if stdout, stderr, code := run("plugins", "lock"); code != 0 || !strings.Contains(stdout, "wrote "+lock+": 2 plugin binaries") {
		t.Fatalf("agenthost plugins lock: exit status %d\n%s%s", code, stdout, stderr)
	}
	// Under a lock a script is run as the very file that was hashed,
	// /proc/self/fd/3: each still finds its helper and its packages.
	for _, lang := range languages {
		stdout, stderr, code := run("call", lang.textTool, string(jsonArgs(t, "text", sampleText)))
		if want := lang.text(sampleText) + "\n"; code != 0 || stdout != want {
			t.Errorf("locked, agenthost call %s: exit status %d, stdout %q (want %q)\n%s", lang.textTool, code, stdout, want, stderr)
		}
	}

	// Change each script: it is refused before it runs.
	refusals := map[string]string{}
	for _, lang := range languages {
		installed := filepath.Join(s.plugins, lang.entry)
		original, err := os.ReadFile(installed)
		if err != nil {
			t.Fatal(err)
		}
		changed := append(original, lang.comment...)
		if err := os.Remove(installed); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(installed, changed, 0o755); err != nil {
			t.Fatal(err)
		}
		refusals[lang.name] = fmt.Sprintf("%s: its SHA-256 is %s, the lock file %s says %s", installed, sha256Hex(string(changed)), lock, sha256Hex(string(original)))
	}
	stdout, _, _ = run("plugins")
	for _, lang := range languages {
		if want := filepath.Join(s.plugins, lang.entry) + "\n  skipped: " + refusals[lang.name] + "\n"; !strings.Contains(stdout, want) {
			t.Errorf("agenthost plugins does not say %q:\n%s", want, stdout)
		}
	}
	for _, lang := range languages {
		_, stderr, code := run("call", lang.textTool, string(jsonArgs(t, "text", "x")))
		if code != 1 || !strings.Contains(stderr, "Error: tool not found: "+lang.textTool) || !strings.Contains(stderr, refusals[lang.name]) {
			t.Errorf("agenthost call %s of a changed script: exit status %d, stderr:\n%s", lang.textTool, code, stderr)
		}
	}
}

// TestScriptReadsOnlyItsOwnDirectory: a script plugin granted nothing may
// read the files of its own directory, and no file outside it, the
// directory of the example whose helper it copies included. The plugin
// is testdata/agenthost-plugin-reader, installed with copies of the
// Python example's helper and messages, whose tool reports what reading
// a file answers.
func TestScriptReadsOnlyItsOwnDirectory(t *testing.T) {
	t.Parallel()
	requirePlugins(t)
	if s := sandbox.Probe(); !s.Enforced() {
		t.Fatalf("the kernel does not confine plugins (%v): nothing to check", s)
	}
	project, sibling, plugins := t.TempDir(), t.TempDir(), t.TempDir()
	example := filepath.Join(root(t), "examples", "python")
	for src, mode := range map[string]os.FileMode{
		filepath.Join(root(t), "examples", "polyglot", "testdata", "agenthost-plugin-reader"): 0o755,
		filepath.Join(example, "agenthost_plugin.py"):                                         0o644,
		filepath.Join(example, "tool_pb2.py"):                                                 0o644,
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(project, filepath.Base(src)), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(project, "agenthost-plugin-reader"), filepath.Join(plugins, "agenthost-plugin-reader")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(project, "data.txt"), "mine\n")
	write(t, filepath.Join(sibling, "secret.txt"), "not mine\n")
	reg, err := host.NewDefaultToolRegistry(t.Context(), plugins, &host.Options{
		Roots:    []string{t.TempDir()},
		CacheDir: host.NoCache,
		Logger:   hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })

	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Plugins() {
		if want := (sdk.Permissions{Roots: sdk.RootsNone, Read: []string{real}}); r.Err != nil || !reflect.DeepEqual(r.Sandbox.Granted, want) {
			t.Errorf("%s: %+v\nwant granted %+v", r.Path, r, want)
		}
	}
	for path, want := range map[string]string{
		filepath.Join(project, "data.txt"):            "ok",
		filepath.Join(sibling, "secret.txt"):          "EACCES",
		filepath.Join(example, "agenthost_plugin.py"): "EACCES",
	} {
		if got := call(t, reg, "read_any", jsonArgs(t, "path", path)); got != want {
			t.Errorf("read_any(%s) = %q, want %q", path, got, want)
		}
	}
}

// TestNodeProtoIsTheContract: the Node.js example loads its own copy of
// tool.proto, so that it can be copied out of this tree whole; the copy
// must be the contract.
func TestNodeProtoIsTheContract(t *testing.T) {
	t.Parallel()
	contract, err := os.ReadFile(filepath.Join(root(t), "sdk", "toolv1", "tool.proto"))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(root(t), "examples", "node", "tool.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copied, contract) {
		t.Error("examples/node/tool.proto differs from sdk/toolv1/tool.proto: copy it again")
	}
}

// TestPythonMessagesAreTheContract: the Python example's tool_pb2.py,
// generated by protoc from tool.proto, describes the same file as the Go
// code generated from it.
func TestPythonMessagesAreTheContract(t *testing.T) {
	t.Parallel()
	requirePlugins(t)
	cmd := exec.Command("/usr/bin/python3", "-B", "-c", "import base64, tool_pb2; print(base64.b64encode(tool_pb2.DESCRIPTOR.serialized_pb).decode())")
	cmd.Dir = filepath.Join(root(t), "examples", "python")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading tool_pb2.py's descriptor: %v", err)
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	got := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	want := protodesc.ToFileDescriptorProto(toolv1.File_tool_proto)
	// protoc gives plugins such as protoc-gen-go each field's JSON name,
	// which Python's generator leaves out: it is the same by definition.
	for _, fd := range [](*descriptorpb.FileDescriptorProto){got, want} {
		for _, m := range fd.GetMessageType() {
			for _, f := range m.GetField() {
				f.JsonName = nil
			}
		}
	}
	if !proto.Equal(got, want) {
		t.Errorf("examples/python/tool_pb2.py does not describe sdk/toolv1/tool.proto: regenerate it (see examples/python/README.md)\n got %v\nwant %v", got, want)
	}
}
