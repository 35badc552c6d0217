package host_test

import (
	"context"
	"errors"
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

// These tests run host/testdata/bareplugin, a plugin written as one in
// another language is: without go-plugin, so without go-plugin's
// controller service, through which the host asks a plugin serving calls
// to shut down.

// loadBare installs the bare plugin as agenthost-plugin-NAME and loads
// it, with a workspace root of its own and a log at trace level.
func loadBare(t *testing.T, name string) (reg *host.ToolRegistry, root string, logs *plugintest.Buffer) {
	t.Helper()
	dir := t.TempDir()
	plugintest.Install(t, dir, host.PluginPrefix+name, "./host/testdata/bareplugin")
	root = t.TempDir()
	logs = &plugintest.Buffer{}
	reg = load(t, dir, &host.Options{
		Roots:    []string{root},
		CacheDir: t.TempDir(),
		Logger:   hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace}),
	})
	return reg, root, logs
}

// closeDuringBareCall starts a bare_wait call, closes the registry while
// it is under way, and returns the plugin's process id as it says it
// (see sigtermMarker) and the call's answer. When Close returns, the
// plugin has been reaped.
func closeDuringBareCall(t *testing.T, reg *host.ToolRegistry, root string) (self, answer string) {
	t.Helper()
	self = strings.TrimSpace(call(t, reg, "bare_pid", `{}`))
	pid := atoi(t, self)
	started := filepath.Join(root, "started")
	result := make(chan string, 1)
	go func() {
		result <- reg.Execute(context.Background(), "bare_wait", []byte(`{"started":`+strconv.Quote(started)+`}`))
	}()
	waitForFile(t, started)
	closeWithin(t, reg, 10*time.Second)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin (pid %d) is still a process once Close returned (alive: %v): %v", pid, alive(pid), err)
	}
	select {
	case answer = <-result:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end with Close")
	}
	if !host.IsError(answer) {
		t.Errorf("the call cut by Close = %q, want an error", answer)
	}
	return self, answer
}

// sigtermMarker is the process id the bare plugin wrote on SIGTERM, as
// bare_pid says it, or "".
func sigtermMarker(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "sigterm"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// gracefulWaitSatOut is what go-plugin logs when it kills a plugin that
// did not exit within its two seconds of grace after a shutdown request.
const gracefulWaitSatOut = "plugin failed to exit gracefully"

// A plugin without go-plugin's controller that serves a call when it is
// stopped gets SIGTERM, and exits on it, instead of sitting out
// go-plugin's two seconds of grace and SIGKILL.
func TestPluginWithoutControllerIsEndedBySIGTERM(t *testing.T) {
	t.Parallel()
	reg, root, logs := loadBare(t, "bare")
	self, answer := closeDuringBareCall(t, reg, root)
	if got := sigtermMarker(t, root); got != self {
		t.Errorf("the plugin (pid %s) wrote %q on SIGTERM: it was not sent SIGTERM", self, got)
	}
	if strings.Contains(answer, "signal: killed") {
		t.Errorf("the call cut by Close = %q: the plugin was killed, not ended by SIGTERM", answer)
	}
	if strings.Contains(logs.String(), gracefulWaitSatOut) {
		t.Errorf("go-plugin waited for the plugin to exit, then killed it:\n%s", logs)
	}
}

// One that ignores SIGTERM is killed, its process group with it, once its
// short grace is over: Close still returns with the process reaped.
func TestPluginWithoutControllerIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	reg, root, logs := loadBare(t, "bare-stubborn")
	self, _ := closeDuringBareCall(t, reg, root)
	if got := sigtermMarker(t, root); got != self {
		t.Errorf("the plugin (pid %s) wrote %q on SIGTERM: it was not sent SIGTERM", self, got)
	}
	if strings.Contains(logs.String(), gracefulWaitSatOut) {
		t.Errorf("go-plugin waited for the plugin to exit, then killed it:\n%s", logs)
	}
}

// A plugin with the controller (the sdk's) is still asked through it, and
// never sees SIGTERM, which the sdk takes for its host's death.
func TestPluginWithControllerIsAskedToShutDown(t *testing.T) {
	t.Parallel()
	logs := &plugintest.Buffer{}
	opts := &host.Options{CacheDir: t.TempDir(), Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})}
	started := startedMarker(t, opts)
	reg := load(t, pluginDir(t, "test"), opts)
	pid := atoi(t, call(t, reg, "pid", `{}`))
	result := make(chan string, 1)
	go func() {
		result <- reg.Execute(context.Background(), "sleep", []byte(`{"millis":60000,"started":`+strconv.Quote(started)+`}`))
	}()
	waitForFile(t, started)
	closeWithin(t, reg, 10*time.Second)
	if got := <-result; !host.IsError(got) || strings.Contains(got, "signal: killed") || strings.Contains(got, "exit status 143") {
		t.Errorf("the call cut by Close = %q, want an error from a plugin that shut down", got)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin (pid %d) is still a process once Close returned: %v", pid, err)
	}
	if strings.Contains(logs.String(), gracefulWaitSatOut) {
		t.Errorf("go-plugin waited for the plugin to exit, then killed it:\n%s", logs)
	}
}
