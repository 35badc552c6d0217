package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// The description cache and script plugins: agenthost-plugin-script is a
// shell script that runs the scriptplugin binary on a file of tools, so
// that what the plugin serves lives in a file the script does not hold.

// installScript writes, into the plugins directory dir, the script plugin
// agenthost-plugin-script serving the tools of the file tools, and
// returns its path.
func installScript(t *testing.T, dir, tools string) string {
	t.Helper()
	bin := plugintest.Binary(t, "./host/testdata/scriptplugin")
	path := filepath.Join(dir, host.PluginPrefix+"script")
	script := "#!/bin/sh\nexec '" + bin + "' '" + tools + "'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadScript loads the plugins directory dir, whose only plugin is the
// script, and returns its report and its tools as "NAME DESCRIPTION"
// lines.
func loadScript(t *testing.T, dir string, opts host.Options) (host.SourceReport, string) {
	t.Helper()
	// The sandbox is not under test here, and would not let the script
	// run a binary outside the system's directories.
	opts.Sandbox = host.SandboxOff
	reg := load(t, dir, &opts)
	defer reg.Close()
	rep := onlyReport(t, reg)
	var tools []string
	for _, s := range reg.EnabledSchemas() {
		tools = append(tools, s.Function.Name+" "+s.Function.Description)
	}
	return rep, strings.Join(tools, "\n")
}

// step is one load of the script and what it must find.
type step struct {
	what   string
	change func(t *testing.T) // before the load; nil for none
	eager  bool
	tools  string // the tools registered
	cached bool   // from the cache, else described by the running plugin
}

func runSteps(t *testing.T, dir, cacheDir string, steps []step) {
	t.Helper()
	for _, s := range steps {
		if s.change != nil {
			s.change(t)
		}
		rep, tools := loadScript(t, dir, host.Options{CacheDir: cacheDir, Eager: s.eager})
		if tools != s.tools || rep.Cached != s.cached || rep.Launched == s.cached {
			t.Fatalf("%s: tools %q (cached %v, launched %v), want %q (cached %v)",
				s.what, tools, rep.Cached, rep.Launched, s.tools, s.cached)
		}
	}
}

func TestScriptWithoutDepsIsDescribedAtEveryLoad(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	tools := filepath.Join(dir, "tools")
	writeFile(t, tools, "greet Hello.\n")
	installScript(t, dir, tools)
	rewrite := func(t *testing.T) { writeFile(t, tools, "greet Howdy.\n") }
	runSteps(t, dir, cacheDir, []step{
		{what: "first load", tools: "greet Hello."},
		{what: "second load", tools: "greet Hello."},
		{what: "after the tools file changed", change: rewrite, tools: "greet Howdy."},
	})
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 0 {
		t.Errorf("the cache holds %d entries, want none for a script that lists no dependencies", len(entries))
	}

	// The log says why, for whoever wonders why it starts every time.
	var log plugintest.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Debug})
	loadScript(t, dir, host.Options{CacheDir: cacheDir, Logger: logger})
	if want := "no agenthost-plugin-script.deps lists what it depends on"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, log.String())
	}
}

func TestScriptDepsKeyTheCache(t *testing.T) {
	t.Parallel()
	// Each case writes the script's .deps for the plugins directory dir
	// and returns the file of tools the script serves, which the list
	// covers, and the directory the script is to be in when it is not
	// dir (dir then holds a symlink to it). "Hello." and "Howdy." are as
	// long: a changed size is not what tells.
	type layout struct{ tools, scriptDir string }
	cases := map[string]func(t *testing.T, dir string) layout{
		"a file beside it": func(t *testing.T, dir string) layout {
			writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), "# where its tools come from\n\ntools\n")
			return layout{tools: filepath.Join(dir, "tools")}
		},
		"a directory": func(t *testing.T, dir string) layout {
			writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), "conf/\n")
			return layout{tools: filepath.Join(dir, "conf", "tools")}
		},
		"an absolute path": func(t *testing.T, dir string) layout {
			tools := filepath.Join(t.TempDir(), "tools")
			writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), tools+"\n")
			return layout{tools: tools}
		},
		"a list behind a symlink, relative to where it is": func(t *testing.T, dir string) layout {
			project := t.TempDir()
			writeFile(t, filepath.Join(project, "script.deps"), "tools\n")
			if err := os.Symlink(filepath.Join(project, "script.deps"), filepath.Join(dir, "agenthost-plugin-script.deps")); err != nil {
				t.Fatal(err)
			}
			return layout{tools: filepath.Join(project, "tools")}
		},
		"a list shipped beside the script a symlink installs": func(t *testing.T, dir string) layout {
			project := t.TempDir()
			writeFile(t, filepath.Join(project, "agenthost-plugin-script.deps"), "tools\n")
			return layout{tools: filepath.Join(project, "tools"), scriptDir: project}
		},
		"an executable list, which is no plugin": func(t *testing.T, dir string) layout {
			list := filepath.Join(dir, "agenthost-plugin-script.deps")
			writeFile(t, list, "tools\n")
			if err := os.Chmod(list, 0o755); err != nil {
				t.Fatal(err)
			}
			return layout{tools: filepath.Join(dir, "tools")}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, cacheDir := t.TempDir(), t.TempDir()
			l := setup(t, dir)
			tools := l.tools
			writeFile(t, tools, "greet Hello.\n")
			if l.scriptDir == "" {
				installScript(t, dir, tools)
			} else if err := os.Symlink(installScript(t, l.scriptDir, tools), filepath.Join(dir, host.PluginPrefix+"script")); err != nil {
				t.Fatal(err)
			}
			runSteps(t, dir, cacheDir, []step{
				{what: "cold cache", tools: "greet Hello."},
				{what: "warm cache", tools: "greet Hello.", cached: true},
				{what: "after the tools file changed", change: func(t *testing.T) { writeFile(t, tools, "greet Howdy.\n") }, tools: "greet Howdy."},
				{what: "the new description, cached", tools: "greet Howdy.", cached: true},
				{what: "after the tools file was replaced by a rename", change: func(t *testing.T) {
					writeFile(t, tools+".new", "greet Hi.\n")
					if err := os.Rename(tools+".new", tools); err != nil {
						t.Fatal(err)
					}
				}, tools: "greet Hi."},
			})
		})
	}

	t.Run("a new file in a listed directory", func(t *testing.T) {
		t.Parallel()
		dir, cacheDir := t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), "conf\n")
		tools := filepath.Join(dir, "conf", "tools")
		writeFile(t, tools, "greet Hello.\n")
		installScript(t, dir, tools)
		runSteps(t, dir, cacheDir, []step{
			{what: "cold cache", tools: "greet Hello."},
			{what: "warm cache", tools: "greet Hello.", cached: true},
			{what: "after a file was added", change: func(t *testing.T) { writeFile(t, filepath.Join(dir, "conf", "more"), "") }, tools: "greet Hello."},
			{what: "warm again", tools: "greet Hello.", cached: true},
		})
	})

	t.Run("a listed file that appears", func(t *testing.T) {
		t.Parallel()
		dir, cacheDir := t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), "tools\nlocal-tools\n")
		tools := filepath.Join(dir, "tools")
		writeFile(t, tools, "greet Hello.\n")
		installScript(t, dir, tools)
		runSteps(t, dir, cacheDir, []step{
			{what: "cold cache", tools: "greet Hello."},
			{what: "warm cache", tools: "greet Hello.", cached: true},
			{what: "after local-tools was created", change: func(t *testing.T) { writeFile(t, filepath.Join(dir, "local-tools"), "") }, tools: "greet Hello."},
		})
	})

	t.Run("an edited list", func(t *testing.T) {
		t.Parallel()
		dir, cacheDir := t.TempDir(), t.TempDir()
		list := filepath.Join(dir, "agenthost-plugin-script.deps")
		writeFile(t, list, "tools\n")
		tools := filepath.Join(dir, "tools")
		writeFile(t, tools, "greet Hello.\n")
		installScript(t, dir, tools)
		runSteps(t, dir, cacheDir, []step{
			{what: "cold cache", tools: "greet Hello."},
			{what: "after the list changed", change: func(t *testing.T) { writeFile(t, list, "tools\nother\n") }, tools: "greet Hello."},
			{what: "warm cache", tools: "greet Hello.", cached: true},
		})
	})
}

func TestEagerRefreshesTheCacheEntry(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	// An empty list: the script says it depends on nothing else, so a
	// change to its tools file goes unseen until a load is eager.
	writeFile(t, filepath.Join(dir, "agenthost-plugin-script.deps"), "")
	tools := filepath.Join(dir, "tools")
	writeFile(t, tools, "greet Hello.\n")
	installScript(t, dir, tools)
	runSteps(t, dir, cacheDir, []step{
		{what: "cold cache", tools: "greet Hello."},
		{what: "warm cache", tools: "greet Hello.", cached: true},
		{what: "after an unlisted change", change: func(t *testing.T) { writeFile(t, tools, "greet Howdy.\nwave Bye.\n") }, tools: "greet Hello.", cached: true},
		{what: "eager", eager: true, tools: "greet Howdy.\nwave Bye."},
		{what: "after the eager load", tools: "greet Howdy.\nwave Bye.", cached: true},
		{what: "eager again, the entry current", eager: true, tools: "greet Howdy.\nwave Bye."},
		{what: "and still cached", tools: "greet Howdy.\nwave Bye.", cached: true},
	})
}
