package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/wire"
)

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// tamper replaces the file at path by a copy with one more byte, leaving
// the file it may be hard-linked to alone.
func tamper(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeExec(t, path, string(append(data, '\n')))
}

func TestLockFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, b := "#!/bin/sh\necho a\n", "#!/bin/sh\necho b\n"
	writeExec(t, filepath.Join(dir, PluginPrefix+"b"), b)
	writeExec(t, filepath.Join(dir, PluginPrefix+"a"), a)
	writeExec(t, filepath.Join(dir, "not-a-plugin"), "#!/bin/sh\n")
	if err := os.WriteFile(filepath.Join(dir, PluginPrefix+"noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	entries, err := WriteLockFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []LockEntry{{PluginPrefix + "a", sha256Hex([]byte(a))}, {PluginPrefix + "b", sha256Hex([]byte(b))}}
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("entries = %v, want %v", entries, want)
	}
	path := filepath.Join(dir, LockFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantText := lockHeader +
		"sha256:" + want[0].SHA256 + "  agenthost-plugin-a\n" +
		"sha256:" + want[1].SHA256 + "  agenthost-plugin-b\n"
	if string(data) != wantText {
		t.Errorf("lock file:\n%s\nwant:\n%s", data, wantText)
	}

	lock, err := ReadLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lock.Path != path || !reflect.DeepEqual(lock.Entries, want) {
		t.Errorf("read %q %v, want %q %v", lock.Path, lock.Entries, path, want)
	}
	for _, e := range want {
		if err := lock.Check(filepath.Join(dir, e.Name)); err != nil {
			t.Errorf("Check(%s): %v", e.Name, err)
		}
		sc, err := lock.SecureConfig(filepath.Join(dir, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := sc.Check(filepath.Join(dir, e.Name)); !ok || err != nil {
			t.Errorf("SecureConfig(%s).Check = %v, %v", e.Name, ok, err)
		}
	}

	// Another path for the lock file.
	other := filepath.Join(t.TempDir(), "sub", "my.lock")
	if _, err := WriteLockFile(dir, other); err != nil {
		t.Fatal(err)
	}
	if again, err := os.ReadFile(other); err != nil || string(again) != wantText {
		t.Errorf("--lock file: %q, %v", again, err)
	}
}

func TestLockCheckErrors(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, PluginPrefix+"x")
	writeExec(t, bin, "#!/bin/sh\n")
	if _, err := WriteLockFile(dir, ""); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, LockFileName)
	lock, err := ReadLockFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	locked := sha256Hex([]byte("#!/bin/sh\n"))

	writeExec(t, bin, "#!/bin/sh\nexit 1\n")
	changed := sha256Hex([]byte("#!/bin/sh\nexit 1\n"))
	err = lock.Check(bin)
	want := fmt.Sprintf("%s: its SHA-256 is %s, the lock file %s says %s", bin, changed, lockPath, locked)
	if err == nil || err.Error() != want {
		t.Errorf("changed binary: %v\nwant: %s", err, want)
	}
	if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		t.Errorf("changed binary: %v is not plugin.ErrChecksumsDoNotMatch", err)
	}
	if sc, err := lock.SecureConfig(bin); err != nil {
		t.Error(err)
	} else if ok, _ := sc.Check(bin); ok {
		t.Error("go-plugin's SecureConfig accepts the changed binary")
	}

	extra := filepath.Join(dir, PluginPrefix+"y")
	writeExec(t, extra, "#!/bin/sh\n")
	err = lock.Check(extra)
	want = fmt.Sprintf("%s is not in the lock file %s (its SHA-256 is %s)", extra, lockPath, locked)
	if err == nil || err.Error() != want {
		t.Errorf("unlisted binary: %v\nwant: %s", err, want)
	}
	if _, err := lock.SecureConfig(extra); err == nil || err.Error() != want {
		t.Errorf("SecureConfig of an unlisted binary: %v\nwant: %s", err, want)
	}

	// No lock file: no lock, which allows everything.
	none, err := ReadLockFile(filepath.Join(dir, "missing.lock"))
	if none != nil || err != nil {
		t.Fatalf("missing lock file: %v, %v", none, err)
	}
	if err := none.Check(bin); err != nil {
		t.Errorf("nil lock refuses: %v", err)
	}
	if sc, err := none.SecureConfig(bin); sc != nil || err != nil {
		t.Errorf("nil lock SecureConfig: %v, %v", sc, err)
	}
}

func TestReadLockFileRejectsDamage(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for name, text := range map[string]string{
		"no prefix":   sum + "  agenthost-plugin-x\n",
		"short hash":  "sha256:abcd  agenthost-plugin-x\n",
		"not hex":     "sha256:" + strings.Repeat("zz", 32) + "  agenthost-plugin-x\n",
		"no name":     "sha256:" + sum + "\n",
		"a path":      "sha256:" + sum + "  ../agenthost-plugin-x\n",
		"two hashes":  "sha256:" + sum + "  agenthost-plugin-x\nsha256:" + strings.Repeat("cd", 32) + "  agenthost-plugin-x\n",
		"other hash":  "md5:" + sum + "  agenthost-plugin-x\n",
		"stray words": "hello\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), LockFileName)
			if err := os.WriteFile(path, []byte("# comment\n\n"+text), 0o644); err != nil {
				t.Fatal(err)
			}
			lock, err := ReadLockFile(path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadLockFile = %v, %v; want an error naming the file", lock, err)
			}
		})
	}
	// Upper-case hex and extra spacing are fine.
	path := filepath.Join(t.TempDir(), LockFileName)
	if err := os.WriteFile(path, []byte("  sha256:"+strings.ToUpper(sum)+"\tagenthost-plugin-x  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if lock, err := ReadLockFile(path); err != nil || len(lock.Entries) != 1 || lock.Entries[0] != (LockEntry{"agenthost-plugin-x", sum}) {
		t.Errorf("ReadLockFile = %+v, %v", lock, err)
	}
}

// execRunner is a plain runner for go-plugin, as launch's: the runner
// function sets the command's path.
type execRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
}

func newExecRunner(cmd *exec.Cmd) (*execRunner, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &execRunner{cmd: cmd, stdout: stdout, stderr: stderr}, nil
}

func (r *execRunner) Start(context.Context) error { return r.cmd.Start() }
func (r *execRunner) Wait(context.Context) error  { return r.cmd.Wait() }
func (r *execRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	return r.cmd.Process.Kill()
}
func (r *execRunner) Diagnose(context.Context) string { return "" }
func (r *execRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *execRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *execRunner) Name() string                    { return r.cmd.Path }
func (r *execRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}
func (r *execRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *execRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// clientConfig is a go-plugin client configuration like launch's, for the
// binary at path. ran counts the runner functions that ran.
func clientConfig(path string, ran *int) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{}),
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			*ran++
			cmd.Path = path
			cmd.Args = []string{path}
			return newExecRunner(cmd)
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     5 * time.Second,
		GRPCDialOptions:  wire.DialOptions(),
		Logger:           hclog.NewNullLogger(),
	}
}

// A binary that changes after the lock was written is never executed:
// neither when it changed before the launch (hardenLaunch refuses it) nor
// when it changed between that check and the exec (go-plugin's
// SecureConfig, checked in the runner function, refuses it).
func TestChangedBinaryIsNeverExecuted(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "MARKER")
	bin := filepath.Join(dir, PluginPrefix+"marker")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	writeExec(t, bin, script)
	if _, err := WriteLockFile(dir, ""); err != nil {
		t.Fatal(err)
	}
	lock, err := ReadLockFile(filepath.Join(dir, LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, modifyAfterCheck bool) (ran int, err error) {
		t.Helper()
		cfg := clientConfig(bin, &ran)
		if err := hardenLaunch(cfg, bin, lock, nil); err != nil {
			return ran, err
		}
		if modifyAfterCheck {
			writeExec(t, bin, script+"# changed\n")
		}
		client := plugin.NewClient(cfg)
		defer client.Kill()
		_, err = client.Start()
		return ran, err
	}

	t.Run("unchanged runs", func(t *testing.T) {
		// The control: the script does run when it matches the lock (it
		// then fails the handshake, which does not matter here).
		if _, err := start(t, false); err == nil {
			t.Fatal("a shell script completed the handshake")
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the unchanged script did not run: %v", err)
		}
		os.Remove(marker)
	})
	t.Run("changed between check and exec", func(t *testing.T) {
		defer writeExec(t, bin, script)
		ran, err := start(t, true)
		if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			t.Fatalf("Start = %v, want go-plugin's %v", err, plugin.ErrChecksumsDoNotMatch)
		}
		for _, s := range []string{bin, sha256Hex([]byte(script)), sha256Hex([]byte(script + "# changed\n")), lock.Path} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the error %q does not name %s", err, s)
			}
		}
		if ran != 0 {
			t.Errorf("the runner function ran %d times", ran)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the changed script ran")
		}
	})
	t.Run("changed before launch", func(t *testing.T) {
		writeExec(t, bin, script+"# changed\n")
		defer writeExec(t, bin, script)
		ran, err := start(t, false)
		if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			t.Errorf("Start = %v, want go-plugin's %v", err, plugin.ErrChecksumsDoNotMatch)
		}
		want := fmt.Sprintf("%s: its SHA-256 is %s, the lock file %s says %s", bin, sha256Hex([]byte(script+"# changed\n")), lock.Path, sha256Hex([]byte(script)))
		if err == nil || err.Error() != want {
			t.Fatalf("Start = %v, want %s", err, want)
		}
		if ran != 0 {
			t.Errorf("the runner function ran %d times", ran)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the changed script ran")
		}
	})
	t.Run("not in the lock", func(t *testing.T) {
		other := filepath.Join(dir, PluginPrefix+"other")
		writeExec(t, other, script)
		var ran int
		err := hardenLaunch(clientConfig(other, &ran), other, lock, nil)
		if err == nil || !strings.Contains(err.Error(), "is not in the lock file "+lock.Path) {
			t.Fatalf("hardenLaunch = %v", err)
		}
	})
}

// A real plugin launched with hardenLaunch: it runs when it matches the
// lock, with a scrubbed environment; a modified copy is refused by
// go-plugin's checksum check.
func TestHardenedLaunchOfARealPlugin(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	t.Setenv("AGENTHOST_TEST_PASSED", "passed-through")
	t.Setenv("LC_ALL", "C.UTF-8")
	dir := t.TempDir()
	bin := plugintest.Install(t, dir, PluginPrefix+"test", "./host/testdata/testplugin")
	if _, err := WriteLockFile(dir, ""); err != nil {
		t.Fatal(err)
	}
	lock, err := ReadLockFile(filepath.Join(dir, LockFileName))
	if err != nil {
		t.Fatal(err)
	}

	var ran int
	cfg := clientConfig(bin, &ran)
	if err := hardenLaunch(cfg, bin, lock, []string{"AGENTHOST_TEST_PASSED"}); err != nil {
		t.Fatal(err)
	}
	if cfg.SecureConfig != nil || !cfg.SkipHostEnv {
		t.Errorf("SecureConfig %v, SkipHostEnv %v", cfg.SecureConfig, cfg.SkipHostEnv)
	}
	client := plugin.NewClient(cfg)
	defer client.Kill()
	if _, err := client.Start(); err != nil {
		t.Fatalf("the locked plugin did not start: %v", err)
	}
	env := processEnv(t, client.ID())
	for _, name := range []string{"PATH", "LC_ALL", "AGENTHOST_TEST_PASSED", wire.Handshake.MagicCookieKey, plugin.EnvUnixSocketDir} {
		if _, ok := env[name]; !ok {
			t.Errorf("the plugin lacks %s: %v", name, env)
		}
	}
	if v, ok := env["OPENAI_API_KEY"]; ok {
		t.Errorf("the plugin got OPENAI_API_KEY=%s", v)
	}
	client.Kill()

	// A modified copy is refused by go-plugin, between the check and the
	// exec.
	ran = 0
	cfg = clientConfig(bin, &ran)
	if err := hardenLaunch(cfg, bin, lock, nil); err != nil {
		t.Fatal(err)
	}
	tamper(t, bin)
	client = plugin.NewClient(cfg)
	defer client.Kill()
	_, err = client.Start()
	if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		t.Fatalf("Start of a modified binary = %v, want %v", err, plugin.ErrChecksumsDoNotMatch)
	}
	if ran != 0 || client.ID() != "" {
		t.Errorf("the modified binary was started (runner function ran %d times, id %q)", ran, client.ID())
	}
}

// processEnv reads the environment of the process pid.
func processEnv(t *testing.T, pid string) map[string]string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for kv := range strings.SplitSeq(string(data), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
