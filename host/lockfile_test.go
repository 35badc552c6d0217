package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

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

// launchOnce launches the plugin binary at bin, as the registry does,
// under lock, and stops it again.
func launchOnce(t *testing.T, bin string, lock *Lock, passThrough []string) (*instance, error) {
	t.Helper()
	p := newToolSource(pluginKind{}, bin, hclog.NewNullLogger(), 5*time.Second, 0)
	p.lock, p.pluginEnv = lock, passThrough
	inst, err := p.launch()
	if err == nil {
		t.Cleanup(func() { inst.Stop(true) })
	}
	return inst, err
}

// A binary that changed after the lock was written is never executed,
// nor one that the lock does not list; one that matches is. (A binary
// swapped between the check and the exec: TestLockedLaunchRunsWhatWasHashed.)
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

	t.Run("unchanged runs", func(t *testing.T) {
		// The control: the script does run when it matches the lock (it
		// then fails the handshake, which does not matter here).
		if _, err := launchOnce(t, bin, lock, nil); err == nil {
			t.Fatal("a shell script completed the handshake")
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the unchanged script did not run: %v", err)
		}
		os.Remove(marker)
	})
	t.Run("changed before launch", func(t *testing.T) {
		writeExec(t, bin, script+"# changed\n")
		defer writeExec(t, bin, script)
		_, err := launchOnce(t, bin, lock, nil)
		if !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			t.Errorf("launch = %v, want go-plugin's %v", err, plugin.ErrChecksumsDoNotMatch)
		}
		want := fmt.Sprintf("%s: its SHA-256 is %s, the lock file %s says %s", bin, sha256Hex([]byte(script+"# changed\n")), lock.Path, sha256Hex([]byte(script)))
		if err == nil || err.Error() != want {
			t.Fatalf("launch = %v, want %s", err, want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the changed script ran")
		}
	})
	t.Run("not in the lock", func(t *testing.T) {
		other := filepath.Join(dir, PluginPrefix+"other")
		writeExec(t, other, script)
		_, err := launchOnce(t, other, lock, nil)
		if err == nil || !strings.Contains(err.Error(), other+" is not in the lock file "+lock.Path) {
			t.Fatalf("launch = %v", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the unlisted script ran")
		}
	})
}

// A real plugin launched under a lock runs when it matches, with a
// scrubbed environment, and keeps no descriptor of its binary: the one
// the host executed it through is close-on-exec. A modified copy is
// refused.
func TestLockedLaunchOfARealPlugin(t *testing.T) {
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

	inst, err := launchOnce(t, bin, lock, []string{"AGENTHOST_TEST_PASSED"})
	if err != nil {
		t.Fatalf("the locked plugin did not start: %v", err)
	}
	pid := inst.runner.ID()
	env := processEnv(t, pid)
	for _, name := range []string{"PATH", "LC_ALL", "AGENTHOST_TEST_PASSED", wire.CookieKey, wire.ConnEnv} {
		if _, ok := env[name]; !ok {
			t.Errorf("the plugin lacks %s: %v", name, env)
		}
	}
	if v, ok := env["OPENAI_API_KEY"]; ok {
		t.Errorf("the plugin got OPENAI_API_KEY=%s", v)
	}
	if exe, err := os.Readlink("/proc/" + pid + "/exe"); err != nil || exe != bin {
		t.Errorf("the plugin runs %q (%v), want %s", exe, err, bin)
	}
	fds, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/" + pid + "/fd/" + fd.Name()); target == bin {
			t.Errorf("the plugin holds descriptor %s of its own binary", fd.Name())
		}
	}
	if comm, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(comm)) != (PluginPrefix + "test")[:15] {
		t.Errorf("the plugin's process name is %q", comm)
	}

	tamper(t, bin)
	if _, err := launchOnce(t, bin, lock, nil); !errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		t.Fatalf("launch of a modified binary = %v, want %v", err, plugin.ErrChecksumsDoNotMatch)
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
