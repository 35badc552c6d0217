package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/poll"
	"github.com/agenthost/agenthost/internal/sandbox"
)

// sleepersWith returns the live processes running sleep with marker:
// the command's own, and not the shell whose command line holds the
// marker too.
func sleepersWith(marker string) []string {
	var found []string
	for _, p := range processesWith(marker) {
		_, cmdline, _ := strings.Cut(p, ": ")
		if strings.HasPrefix(cmdline, "sleep ") {
			found = append(found, p)
		}
	}
	return found
}

// gateFile is the file a gated command waits for in its directory.
const gateFile = "go-on"

// watchedCall runs command with run_bash in a new root and returns its
// result. The test looks in /proc for the command's sleepers, marked with
// marker, while it runs, and fails unless there were want of them at
// once: the command did start what the test is about. When gated, the
// command waits until the test has seen them (it creates gateFile), then
// ends.
//
// When the call returns, no process of the command may be left: the
// test fails at once, without waiting, if /proc shows one.
func watchedCall(t *testing.T, ctx context.Context, command, marker string, want int, gated bool, timeoutMS int) result {
	t.Helper()
	root := t.TempDir()
	if gated {
		command += fmt.Sprintf("\nwhile [ ! -e %s ]; do sleep 0.01; done\necho done", gateFile)
	}
	args := map[string]any{"command": command}
	if timeoutMS > 0 {
		args["timeout"] = timeoutMS
	}
	call := callInBackground(ctx, t, root, args)
	defer killProcessesWith(marker) // what a failure below leaves
	poll.Eventually(t, 10*time.Second, fmt.Sprintf("the command's %d sleepers run", want), running(call, want, func() []string { return sleepersWith(marker) }))
	if gated {
		if err := os.WriteFile(filepath.Join(root, gateFile), nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	c := <-call
	if left := processesWith(marker); len(left) > 0 {
		killProcessesWith(marker)
		t.Errorf("processes of the command outlived the call: %q", left)
	}
	if c.err != nil {
		t.Fatalf("run_bash(%q): %v", command, c.err)
	}
	return c.res
}

// No process the command starts outlives the call: not one in a new
// session, not an orphan, not one that ignores SIGTERM.
func TestRunBashLeavesNothing(t *testing.T) {
	t.Parallel()
	requireProc(t)
	tests := map[string]struct {
		command string // with the marker for %[1]s
		want    int    // how many sleepers run at once
	}{
		"setsid":                {"setsid sleep %[1]s &", 1},
		"setsid, without pipes": {"setsid sleep %[1]s >/dev/null 2>&1 </dev/null &", 1},
		"double fork":           {"( setsid sh -c 'sleep %[1]s & ' & )", 1},
		"nohup":                 {"nohup sleep %[1]s &", 1},
		"SIGTERM ignored":       {"(trap '' TERM; sleep %[1]s) &", 1},
		"setsid, SIGTERM ignored": {
			"setsid sh -c 'trap \"\" TERM; sleep %[1]s' &", 1,
		},
		"a tree in a new session": {
			"setsid sh -c 'sh -c \"sleep %[1]s & sleep %[1]s\" & sleep %[1]s' &", 3,
		},
		"forking in a new session": {
			"setsid sh -c 'while :; do sleep %[1]s & sleep 0.01; done' >/dev/null 2>&1 &", 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := sleepMarker()
			start := time.Now()
			res := watchedCall(t, t.Context(), fmt.Sprintf(tc.command, marker), marker, tc.want, true, 0)
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if !strings.HasSuffix(res.Stdout, "done\n") || res.ExitCode != 0 || res.TimedOut {
				t.Errorf("stdout %q, exit_code %d, timed_out %v; want done, 0, false", res.Stdout, res.ExitCode, res.TimedOut)
			}
		})
	}
}

// A timeout, or the call's cancellation, kills the processes that left
// the command's session as well.
func TestRunBashStopLeavesNothing(t *testing.T) {
	t.Parallel()
	requireProc(t)
	tests := map[string]struct {
		command string
		want    int
		cancel  bool // cancel the call instead of a timeout
	}{
		"timeout, setsid":                  {"setsid sleep %[1]s & sleep %[1]s", 2, false},
		"timeout, setsid, SIGTERM ignored": {"setsid sh -c 'trap \"\" TERM; sleep %[1]s' & sleep %[1]s", 2, false},
		"timeout, double fork":             {"( setsid sh -c 'sleep %[1]s & ' & ); sleep %[1]s", 2, false},
		"cancel, setsid":                   {"setsid sleep %[1]s & sleep %[1]s", 2, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			marker := sleepMarker()
			command := fmt.Sprintf(tc.command, marker)
			if tc.cancel {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				call := callInBackground(ctx, t, t.TempDir(), map[string]any{"command": command})
				poll.Eventually(t, 10*time.Second, "the command's sleepers run", running(call, tc.want, func() []string { return sleepersWith(marker) }))
				cancel()
				if err := (<-call).err; err == nil || !strings.Contains(err.Error(), "the call was cancelled after") {
					t.Errorf("error %v, want the cancellation", err)
				}
				if left := processesWith(marker); len(left) > 0 {
					killProcessesWith(marker)
					t.Errorf("processes of the command outlived the call: %q", left)
				}
				return
			}
			res := watchedCall(t, t.Context(), command, marker, tc.want, false, 1000)
			if !res.TimedOut || res.ExitCode != -1 {
				t.Errorf("timed_out %v, exit_code %d; want true, -1", res.TimedOut, res.ExitCode)
			}
		})
	}
}

// watchdogsOf returns the pids of the watchdogs that the process pid
// started.
func watchdogsOf(pid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []int
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), watchdogArg) {
			continue
		}
		child, _ := strconv.Atoi(filepath.Base(dir))
		if ppid, ok := sandbox.Parent(child); ok && ppid == pid {
			found = append(found, child)
		}
	}
	return found
}

// alive reports whether pid is a process that has not ended.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i:]), ") Z")
}

// A plugin killed while a command runs leaves none of the command's
// processes behind, not even those in sessions of their own: the
// watchdog, alive, kills them all before it exits.
func TestPluginDeathLeavesNothing(t *testing.T) {
	t.Parallel()
	requireProc(t)
	marker := sleepMarker()
	t.Cleanup(func() { killProcessesWith(marker) })
	plugin := exec.Command(os.Args[0], "-test.run=^$")
	plugin.Env = append(os.Environ(), helperEnv+"="+fmt.Sprintf(
		"setsid sleep %[1]s & ( setsid sh -c 'sleep %[1]s & ' & ); nohup sleep %[1]s & sleep %[1]s", marker))
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	defer plugin.Wait()
	defer plugin.Process.Kill()
	poll.Eventually(t, 10*time.Second, "the command's sleepers run", func() error {
		if sleepers := sleepersWith(marker); len(sleepers) < 4 {
			return fmt.Errorf("%d of 4 run: %q", len(sleepers), processesWith(marker))
		}
		return nil
	})
	watchdogs := watchdogsOf(plugin.Process.Pid)
	if len(watchdogs) == 0 {
		t.Fatal("the plugin has no watchdog")
	}
	if err := plugin.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	plugin.Wait()
	poll.Eventually(t, 10*time.Second, "the watchdogs end", func() error {
		if slices.ContainsFunc(watchdogs, alive) {
			return fmt.Errorf("the watchdogs %v still run", watchdogs)
		}
		return nil
	})
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("processes of the command outlived the plugin and its watchdog: %q", left)
	}
}

// A watchdog sent SIGTERM, as by the command, goes on watching.
func TestWatchdogShrugsOffSIGTERM(t *testing.T) {
	t.Parallel()
	requireProc(t)
	marker := sleepMarker()
	res := watchedCall(t, t.Context(), "kill -TERM $PPID; setsid sleep "+marker+" &", marker, 1, true, 0)
	if !strings.HasSuffix(res.Stdout, "done\n") || res.ExitCode != 0 {
		t.Errorf("stdout %q, exit_code %d; want done, 0", res.Stdout, res.ExitCode)
	}
}

// A shell that cannot be started is an error, from the watchdog.
func TestRunShellNotStarted(t *testing.T) {
	t.Parallel()
	_, err := run(t.Context(), job{shell: "/nonexistent/sh", command: "true", dir: "/", timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "no such file or directory") || errors.Is(err, errWatchdogFailed) {
		t.Errorf("error %v, want the shell's start failure", err)
	}
}

// A watchdog killed by the command cannot report: the call says so.
func TestWatchdogKilled(t *testing.T) {
	t.Parallel()
	_, err := callIn(t.Context(), t, t.TempDir(), map[string]any{"command": "kill -KILL $PPID; sleep 0.1"})
	if !errors.Is(err, errWatchdogFailed) {
		t.Errorf("error %v, want %v", err, errWatchdogFailed)
	}
}

// The job reaches the watchdog byte for byte.
func TestJobWire(t *testing.T) {
	t.Parallel()
	j := job{shell: "/bin/bash", command: "echo 'é' \xff", dir: "/tmp/d ir", env: []string{"A=\xfe\xff", "B=", "PWD=/x"}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		defer w.Close()
		if err := writeJob(w, j); err != nil {
			t.Error(err)
		}
		w.Write([]byte{requestTerminate})
	}()
	got, err := readJob(r)
	if err != nil {
		t.Fatal(err)
	}
	if got.shell != j.shell || got.command != j.command || got.dir != j.dir || !slices.Equal(got.env, j.env) {
		t.Errorf("readJob = %+v, want %+v", got, j)
	}
	var next [1]byte
	if _, err := r.Read(next[:]); err != nil || next[0] != requestTerminate {
		t.Errorf("after the job: %q, %v; readJob read too far", next, err)
	}
}

// The watchdog's wait-status message carries a death by signal.
func TestWatchdogStatus(t *testing.T) {
	t.Parallel()
	res := mustRun(t, map[string]any{"command": "kill -TERM $$"})
	if res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("exit_code %d, want %d", res.ExitCode, 128+int(syscall.SIGTERM))
	}
}
