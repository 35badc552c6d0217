package host_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// These tests load plugins that misbehave on purpose
// (host/testdata/hostileplugin, whose behaviour follows the last word of
// its file name) and plugin files that others could replace.

// installHostile installs the hostile plugin as agenthost-plugin-NAME;
// the last word of NAME picks its behaviour.
func installHostile(t *testing.T, dir, name string) string {
	t.Helper()
	pluginDir(t) // builds every test plugin at once
	return plugintest.Install(t, dir, host.PluginPrefix+name, "./host/testdata/hostileplugin")
}

// logged returns a logger writing to a buffer, at warn level.
func logged() (hclog.Logger, *plugintest.Buffer) {
	logs := &plugintest.Buffer{}
	return hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Warn}), logs
}

func reportOf(t *testing.T, reg *host.ToolRegistry, base string) host.SourceReport {
	t.Helper()
	for _, r := range reg.Plugins() {
		if filepath.Base(r.Path) == base {
			return r
		}
	}
	t.Fatalf("no report of %s in %+v", base, reg.Plugins())
	return host.SourceReport{}
}

// A third-party plugin whose file name sorts before the built-ins cannot
// take a built-in's tool name: the built-ins register first, and the
// third party is told who holds the name.
func TestBuiltinsKeepTheirToolNames(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "fs")
	installHostile(t, dir, "aaa-builtin") // declares read_file
	logger, logs := logged()
	reg := load(t, dir, &host.Options{Logger: logger})

	if got := call(t, reg, "read_file", `{"path":"testdata/hello.txt"}`); got != "hello from testdata\n" {
		t.Errorf("read_file = %q: the built-in must serve it", got)
	}
	if info := toolInfo(reg, "read_file"); info.Plugin != host.PluginPrefix+"fs" {
		t.Errorf("read_file is served by %q", info.Plugin)
	}
	if got := reg.ToolNames(); !slices.Equal(got, append(slices.Clone(fsTools), "hostile_tool")) {
		t.Errorf("ToolNames() = %v: the built-ins register first", got)
	}
	want := "tool already exists: read_file is served by the built-in agenthost-plugin-fs; agenthost-plugin-aaa-builtin may not take it (register it under a different name, such as read_file_v2)"
	third := reportOf(t, reg, host.PluginPrefix+"aaa-builtin")
	if !slices.Equal(third.Refused, []string{want}) || !slices.Equal(third.Tools, []string{"hostile_tool"}) || third.Builtin {
		t.Errorf("the third party's report: %+v\nwant refused %q", third, want)
	}
	if !reportOf(t, reg, host.PluginPrefix+"fs").Builtin {
		t.Error("the fs plugin is not reported as a built-in")
	}
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
}

func toolInfo(reg *host.ToolRegistry, name string) host.ToolInfo {
	for _, info := range reg.Tools() {
		if info.Name == name {
			return info
		}
	}
	return host.ToolInfo{}
}

// A plugins directory, a binary or a lock file that another user could
// change is refused, with a message naming it and the fix; the other
// plugins load; Options.AllowInsecurePlugins loads them with a warning.
func TestInsecurePluginFilesAreRefused(t *testing.T) {
	t.Parallel()
	pluginDir(t) // builds every test plugin at once
	const fix = ", or pass --allow-insecure-plugins"
	root := os.Geteuid() == 0

	cases := map[string]struct {
		setup    func(t *testing.T, dir string) (want string)
		rootOnly bool
		allowed  bool
		// others: the test plugin, which is fine, loads.
		others bool
	}{
		"world-writable plugins directory": {setup: func(t *testing.T, dir string) string {
			chmod(t, dir, 0o777)
			return "plugins directory " + dir + " is writable by others (mode 0777); run chmod o-w " + dir + fix
		}},
		"sticky world-writable plugins directory": {setup: func(t *testing.T, dir string) string {
			// Anyone could still add a binary to it.
			chmod(t, dir, 0o1777)
			return "plugins directory " + dir + " is writable by others (mode 01777); run chmod o-w " + dir + fix
		}},
		"world-writable directory above": {setup: func(t *testing.T, dir string) string {
			chmod(t, filepath.Dir(dir), 0o777)
			return "directory " + filepath.Dir(dir) + " is writable by others (mode 0777); run chmod o-w " + filepath.Dir(dir) + fix
		}},
		"sticky world-writable directory above": {others: true, setup: func(t *testing.T, dir string) string {
			// As /tmp: no one else can rename or remove the plugins
			// directory in it.
			chmod(t, filepath.Dir(dir), 0o1777)
			return ""
		}},
		"world-writable binary": {others: true, setup: func(t *testing.T, dir string) string {
			bin := plugintest.Copy(t, dir, host.PluginPrefix+"bad", "./host/testdata/dupplugin", 0o777)
			return "plugin binary " + bin + " is writable by others (mode 0777); run chmod o-w " + bin + fix
		}},
		"world-writable lock file": {setup: func(t *testing.T, dir string) string {
			if _, err := host.WriteLockFile(dir, ""); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(dir, host.LockFileName)
			chmod(t, lock, 0o666)
			return "lock file " + lock + " is writable by others (mode 0666); run chmod o-w " + lock + fix
		}},
		"binary owned by another user": {rootOnly: true, others: true, setup: func(t *testing.T, dir string) string {
			bin := plugintest.Copy(t, dir, host.PluginPrefix+"bad", "./host/testdata/dupplugin", 0o755)
			if err := os.Chown(bin, 12345, -1); err != nil {
				t.Fatal(err)
			}
			return "plugin binary " + bin + " is owned by uid 12345, not by you (uid 0 (root)) or root; run chown root " + bin + fix
		}},
		"binary writable by another group": {rootOnly: true, others: true, setup: func(t *testing.T, dir string) string {
			bin := plugintest.Copy(t, dir, host.PluginPrefix+"bad", "./host/testdata/dupplugin", 0o775)
			if err := os.Chown(bin, -1, 12345); err != nil {
				t.Fatal(err)
			}
			return "plugin binary " + bin + " is writable by group gid 12345 (mode 0775); run chmod g-w " + bin + fix
		}},
		"allowed": {allowed: true, others: true, setup: func(t *testing.T, dir string) string {
			chmod(t, dir, 0o777)
			return ""
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.rootOnly && !root {
				t.Skip("changing a file's owner needs root; run the tests as root to cover it")
			}
			dir := filepath.Join(t.TempDir(), "plugins")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			plugintest.Copy(t, dir, host.PluginPrefix+"test", "./host/testdata/testplugin", 0o755)
			want := tc.setup(t, dir)
			logger, logs := logged()
			reg := load(t, dir, &host.Options{Logger: logger, AllowInsecurePlugins: tc.allowed, CacheDir: host.NoCache})

			if got := reg.HasTool("echo"); got != tc.others {
				t.Errorf("the test plugin loaded: %v, want %v (%+v)", got, tc.others, reg.Plugins())
			}
			if want == "" {
				for _, r := range reg.Plugins() {
					if r.Err != nil {
						t.Errorf("%s: %v", r.Path, r.Err)
					}
				}
				if tc.allowed && !strings.Contains(logs.String(), "allowed by the host's options") {
					t.Errorf("no warning for an insecure plugins directory allowed:\n%s", logs)
				}
				return
			}
			var refused int
			for _, r := range reg.Plugins() {
				if r.Err != nil {
					refused++
					if r.Err.Error() != want {
						t.Errorf("%s refused with\n%q\nwant %q", r.Path, r.Err, want)
					}
				}
			}
			if refused == 0 {
				t.Errorf("nothing was refused: %+v", reg.Plugins())
			}
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the log does not say %q:\n%s", want, logs)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	// os.Chmod takes the sticky bit as os.ModeSticky.
	m := mode.Perm()
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if err := os.Chmod(path, m); err != nil {
		t.Fatal(err)
	}
}

// A plugin may not claim a call deadline beyond MaxToolTimeout.
func TestPluginDeadlineIsCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	installHostile(t, dir, "hostile-timeout")
	logger, logs := logged()
	reg := load(t, dir, &host.Options{Logger: logger})
	if got := toolInfo(reg, "forever").Annotations.Timeout; got != host.MaxToolTimeout {
		t.Errorf("the declared 1000h became %v, want %v", got, host.MaxToolTimeout)
	}
	if !strings.Contains(logs.String(), "capping the deadline a tool declares") || !strings.Contains(logs.String(), "declared=1000h0m0s") {
		t.Errorf("the cap is not logged:\n%s", logs)
	}
	if got := call(t, reg, "forever", `{}`); got != "ok" {
		t.Errorf("forever = %q", got)
	}
}

// A schema, a description or a tool count beyond the limits is refused,
// naming the tool and the sizes; the rest loads.
func TestPluginDescriptionLimits(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	installHostile(t, dir, "hostile-schema")
	installHostile(t, dir, "hostile-many")
	reg := load(t, dir, nil)

	schema := reportOf(t, reg, host.PluginPrefix+"hostile-schema")
	wantRefused := []string{
		fmt.Sprintf("invalid tool: big_schema: its parameters schema is %d bytes, more than the 65536 allowed", 1<<20+34),
		fmt.Sprintf("invalid tool: long_description: its description is %d bytes, more than the 16384 allowed", 64<<10),
	}
	if !slices.Equal(schema.Refused, wantRefused) || !slices.Equal(schema.Tools, []string{"small"}) {
		t.Errorf("report: tools %v, refused %q\nwant refused %q", schema.Tools, schema.Refused, wantRefused)
	}
	many := reportOf(t, reg, host.PluginPrefix+"hostile-many")
	if many.Err == nil || many.Err.Error() != "it declares 200 tools, more than the 128 a plugin may serve" || reg.HasTool("tool_0") {
		t.Errorf("a plugin of 200 tools: %+v", many)
	}
	if !reg.HasTool("echo") {
		t.Error("the other plugins did not load")
	}
}

// A schema that does not resolve as an object schema is refused, even
// for a tool that checks its own arguments, and it stays refused when the
// description comes from the cache, which records what was checked.
func TestUnresolvableSchemaIsRefusedColdAndCached(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t)
	installHostile(t, dir, "hostile-badschema")
	cache := t.TempDir()
	for _, round := range []string{"cold", "cached"} {
		reg := load(t, dir, &host.Options{CacheDir: cache})
		r := reportOf(t, reg, host.PluginPrefix+"hostile-badschema")
		if round == "cached" && (!r.Cached || r.Launched) {
			t.Errorf("%s: cached %v, launched %v: want the description from the cache", round, r.Cached, r.Launched)
		}
		if !slices.Equal(r.Tools, []string{"fine_checked"}) || len(r.Refused) != 2 ||
			!strings.HasPrefix(r.Refused[0], "invalid tool: bad_ref: parameters schema: ") ||
			r.Refused[1] != `invalid tool: not_object: parameters schema has type "string", not "object"` {
			t.Errorf("%s: tools %v, refused %q", round, r.Tools, r.Refused)
		}
		if reg.HasTool("bad_ref") || reg.HasTool("not_object") {
			t.Errorf("%s: a tool with a bad schema was registered", round)
		}
		reg.Close()
	}
}

// What a cache entry says was checked counts only for the checker that
// wrote it: an entry claiming, under another checker (or an older host,
// which said nothing), that every schema resolved does not let a bad one
// through; the schemas are checked again and the entry rewritten.
func TestCachedSchemaVerdictOfAnotherCheckerIsIgnored(t *testing.T) {
	t.Parallel()
	dir, cache := pluginDir(t), t.TempDir()
	installHostile(t, dir, "hostile-badschema")
	load(t, dir, &host.Options{CacheDir: cache}).Close()
	files, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	if err := json.Unmarshal(data, &entry); err != nil {
		t.Fatal(err)
	}
	if entry["checker"] == nil || !slices.Equal(anyStrings(entry["resolved"]), []string{"fine_checked"}) {
		t.Fatalf("cache entry: checker %v, resolved %v; want the tools whose schema resolved", entry["checker"], entry["resolved"])
	}
	entry["checker"] = "another checker"
	entry["resolved"] = []string{"bad_ref", "not_object", "fine_checked"}
	if data, err = json.Marshal(entry); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := load(t, dir, &host.Options{CacheDir: cache})
	r := reportOf(t, reg, host.PluginPrefix+"hostile-badschema")
	if !r.Cached || !slices.Equal(r.Tools, []string{"fine_checked"}) || len(r.Refused) != 2 {
		t.Errorf("cached %v, tools %v, refused %q: want the bad schemas checked again and refused", r.Cached, r.Tools, r.Refused)
	}
	// And the entry now says what this checker found.
	if data, err = os.ReadFile(files[0]); err != nil {
		t.Fatal(err)
	}
	entry = nil
	if err := json.Unmarshal(data, &entry); err != nil {
		t.Fatal(err)
	}
	if entry["checker"] == "another checker" || !slices.Equal(anyStrings(entry["resolved"]), []string{"fine_checked"}) {
		t.Errorf("the entry after the check: checker %v, resolved %v", entry["checker"], entry["resolved"])
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// What reaches the model is bounded and in the tool's words: a 4 MiB
// error is cut on a rune boundary, an unknown 1 MB key is quoted in part,
// and the message size limits, in both directions, say which side was
// too large.
func TestFailuresAreBoundedAndPlain(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "test")
	installHostile(t, dir, "hostile-errors")
	reg := load(t, dir, nil)
	exec := func(tool, args string) string { return reg.Execute(t.Context(), tool, []byte(args)) }

	got := exec("huge_error", `{}`)
	prefix := "Error executing huge_error: xé"
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, " bytes cut]") || !utf8.ValidString(got) ||
		len(got) > len("Error executing huge_error: ")+toolcall.MaxMessage+32 {
		t.Errorf("a 4 MiB error came back as %d bytes: %.60q … %q", len(got), got, got[max(0, len(got)-40):])
	}
	if want := fmt.Sprintf("... [%d bytes cut]", 1+2*(2<<20)-(toolcall.MaxMessage-1)); !strings.HasSuffix(got, want) {
		t.Errorf("the marker: %q, want %q", got[max(0, len(got)-40):], want)
	}

	key := strings.Repeat("k", 1_000_000)
	want := `Error executing echo: invalid arguments: unexpected additional properties ["` + strings.Repeat("k", toolcall.MaxQuoted) + `…" (1000000 bytes)]`
	if got := exec("echo", `{"text":"a","`+key+`":1}`); got != want {
		t.Errorf("an unknown 1 MB key: %.200q", got)
	}

	for name, tc := range map[string]struct{ tool, args, want string }{
		"result over the limit, sdk":  {"big", fmt.Sprintf(`{"n":%d}`, 65<<20), fmt.Sprintf("Error executing big: the result is %d bytes, larger than the 64 MiB limit", 65<<20)},
		"result over the limit, gRPC": {"huge_result", `{}`, "Error executing huge_result: the result is larger than the 64 MiB limit"},
		"null":                        {"echo", `{"text":null}`, `Error executing echo: invalid arguments: text: type: null has type "null", want "string"`},
		"object for a string":         {"echo", `{"text":{"a":1}}`, `Error executing echo: invalid arguments: text: type: {…} has type "object", want "string"`},
		"integer out of Go's range":   {"sleep", `{"millis":1e30}`, "Error executing sleep: invalid arguments: millis: must be an integer from -9223372036854775808 to 9223372036854775807, not 1e+30"},
		"number out of JSON's range":  {"sleep", `{"millis":1e400}`, "Error executing sleep: invalid arguments: millis: the number 1e400 is out of range"},
		"invalid UTF-8, typed":        {"echo", "{\"text\":\"a\xffb\"}", `Error executing echo: invalid arguments: argument "text" is not valid UTF-8`},
		"invalid UTF-8, host-checked": {"loose", "{\"text\":\"a\xffb\"}", `Error executing loose: invalid arguments: argument "text" is not valid UTF-8`},
		"lone surrogate escape":       {"echo", `{"text":"a\udc00b"}`, `Error executing echo: invalid arguments: argument "text" has an unpaired UTF-16 surrogate escape, which is not a character`},
		"surrogate pair is fine":      {"echo", `{"text":"a\ud83d\ude00b"}`, "a😀b"},
		"invalid UTF-8 in a name":     {"loose", "{\"te\xffxt\":\"a\"}", `Error executing loose: invalid arguments: an argument name is not valid UTF-8: "te\xffxt"`},
		"unknown tool, long name":     {strings.Repeat("n", 1000), `{}`, "Error: tool not found: " + strings.Repeat("n", 256) + "... [744 bytes cut]"},
		"arguments over the limit":    {"echo", `{"text":"` + strings.Repeat("a", 64<<20) + `"}`, fmt.Sprintf("Error executing echo: the arguments are %d bytes, larger than the 64 MiB limit", 64<<20+11)},
		"the plugin still serves":     {"echo", `{"text":"fine"}`, "fine"},
	} {
		if got := exec(tc.tool, tc.args); got != tc.want {
			t.Errorf("%s: %s(%.40s…)\n got %.300q\nwant %.300q", name, tc.tool, tc.args, got, tc.want)
		}
	}
}

// Names, descriptions and log lines from a plugin cannot forge lines of
// the host's log or put escape sequences in it.
func TestPluginTextCannotForgeLogLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	installHostile(t, dir, "hostile-names")
	forged := filepath.Join(dir, host.PluginPrefix+"x\n[ERROR] forged\x1b[31m")
	if err := os.WriteFile(forged, []byte("#!/bin/sh\necho 'not a plugin\x1b[2J'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := &plugintest.Buffer{}
	reg := load(t, dir, &host.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})})
	if !reg.HasTool("fine") {
		t.Fatalf("the plugin's good tool is not registered: %+v", reg.Plugins())
	}
	// The plugin's own log line arrives through its stderr, in its time.
	eventually(t, "the plugin's log line is in the host's log, escaped", func() bool {
		return strings.Contains(logs.String(), `[WARN]  agenthost-plugin-hostile-names.agenthost-plugin-hostile-names: "hello\nagenthost: [ERROR] forged log line \x1b[31m": "k\ney"="v\x1b[0m"`)
	})
	text := logs.String()
	for line := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		// Every line of the host's log starts with its timestamp.
		if !strings.HasPrefix(line, "20") {
			t.Errorf("a forged line in the host's log: %q", line)
		}
		if strings.ContainsRune(line, '\x1b') {
			t.Errorf("an escape sequence in the host's log: %q", line)
		}
	}
	if r := reportOf(t, reg, host.PluginPrefix+"hostile-names"); len(r.Refused) != 1 || r.Refused[0] != `invalid tool: name "bad\nname" must match ^[a-zA-Z0-9_-]{1,64}$` {
		t.Errorf("refused: %q", r.Refused)
	}
}
