package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

func TestMain(m *testing.M) {
	// The plugins run with host.NoCache: no description cache to isolate.
	code := m.Run()
	plugintest.Cleanup()
	if fuzzTreeDir != "" {
		os.RemoveAll(fuzzTreeDir)
	}
	os.Exit(code)
}

// searchPlugin is a registry holding the tools of a real search plugin
// process, built from this tree.
type searchPlugin struct {
	t   *testing.T
	reg *host.ToolRegistry
	dir string // where its binary is
}

// startPlugin starts the search plugin in its own process with the
// workspace roots given. It stops when the test ends. A call that takes
// longer than a minute fails: a hang shows as a failure, not as a test
// that never ends.
func startPlugin(t *testing.T, roots ...string) *searchPlugin {
	t.Helper()
	dir := t.TempDir()
	plugintest.Install(t, dir, "agenthost-plugin-search", "./plugins/search")
	reg, err := host.NewDefaultToolRegistry(t.Context(), dir, &host.Options{
		Roots:    roots,
		CacheDir: host.NoCache,
		Eager:    true,
		Logger:   hclog.NewNullLogger(),
		Timeout:  time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	if !reg.HasTool("search_text") {
		t.Fatalf("the search plugin in %s did not load", dir)
	}
	return &searchPlugin{t: t, reg: reg, dir: dir}
}

// call runs a tool in the plugin process and returns what the model
// would read.
func (p *searchPlugin) call(name string, fields map[string]any) string {
	p.t.Helper()
	args, err := json.Marshal(fields)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.reg.Execute(p.t.Context(), name, args)
}

// callRaw runs a tool with arguments as JSON text.
func (p *searchPlugin) callRaw(name, args string) string {
	p.t.Helper()
	return p.reg.Execute(p.t.Context(), name, []byte(args))
}

// pid is the plugin's process: the one this test process started (see
// plugintest.StartedBy) that runs the binary installed for it.
func (p *searchPlugin) pid() int {
	p.t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		p.t.Skipf("no /proc: %v", err)
	}
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if !plugintest.StartedBy(pid, me) {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Dir(exe) == p.dir {
			return pid
		}
	}
	p.t.Fatalf("no plugin process runs a binary in %s", p.dir)
	return 0
}

// usage is what a process holds: open descriptors, threads, and the peak
// of its resident memory.
type usage struct {
	fds, threads int
	peakKB       int
}

func (u usage) String() string {
	return fmt.Sprintf("%d descriptors, %d threads, peak RSS %d kB", u.fds, u.threads, u.peakKB)
}

func (p *searchPlugin) usage() usage {
	p.t.Helper()
	pid := p.pid()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		p.t.Fatal(err)
	}
	u := usage{fds: len(fds)}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		p.t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		n, _ := strconv.Atoi(strings.Fields(value + " 0")[0])
		switch key {
		case "Threads":
			u.threads = n
		case "VmHWM":
			u.peakKB = n
		}
	}
	return u
}
