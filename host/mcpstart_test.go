package host

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMCPStartTimeoutDefaults: a launcher that may download what it runs
// gets LauncherStartTimeout, unless the registry's own is longer; any
// server's StartupTimeout wins.
func TestMCPStartTimeoutDefaults(t *testing.T) {
	const def = 10 * time.Second
	for _, tc := range []struct {
		command string
		args    []string
		want    time.Duration
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, LauncherStartTimeout},
		{"/usr/local/bin/uvx", []string{"mcp-server-fetch"}, LauncherStartTimeout},
		{"pnpx", nil, LauncherStartTimeout},
		{"bunx", nil, LauncherStartTimeout},
		{"pipx", []string{"run", "x"}, LauncherStartTimeout},
		{"npx.cmd", nil, LauncherStartTimeout},
		{"npm", []string{"exec", "--yes", "pkg"}, LauncherStartTimeout},
		{"npm", []string{"--yes", "x", "pkg"}, LauncherStartTimeout},
		{"pnpm", []string{"dlx", "pkg"}, LauncherStartTimeout},
		{"yarn", []string{"dlx", "pkg"}, LauncherStartTimeout},
		{"uv", []string{"tool", "run", "pkg"}, LauncherStartTimeout},
		{"docker", []string{"run", "-i", "--rm", "ghcr.io/github/github-mcp-server"}, LauncherStartTimeout},
		{"npm", []string{"start"}, def},
		{"node", []string{"server.js"}, def},
		{"docker", []string{"exec", "c", "server"}, def},
	} {
		s := MCPServer{Name: "s", Command: tc.command, Args: tc.args}
		if got := s.startTimeout(def); got != tc.want {
			t.Errorf("%s %q: %v, want %v", tc.command, tc.args, got, tc.want)
		}
	}
	npx := MCPServer{Name: "s", Command: "npx"}
	if got := npx.startTimeout(5 * time.Minute); got != 5*time.Minute {
		t.Errorf("npx under a registry's 5m: %v", got)
	}
	npx.StartupTimeout = 3 * time.Second
	if got := npx.startTimeout(def); got != 3*time.Second {
		t.Errorf("npx with startupTimeout 3: %v", got)
	}
	remote := MCPServer{Name: "r", Command: "npx", URL: "http://127.0.0.1:1/mcp", Transport: "http"}
	if got := remote.startTimeout(def); got != def {
		t.Errorf("a remote server: %v", got)
	}
}

// npxTree makes an _npx directory under a launcher directory: each
// entry named, complete (its hidden lock file written) or not, with a
// lock of the age given (none when zero), and the directory's own age.
type npxTree struct {
	launcher, dir string
}

func newNpxTree(t *testing.T) npxTree {
	t.Helper()
	launcher := filepath.Join(t.TempDir(), "launchers", "srv")
	return npxTree{launcher: launcher, dir: filepath.Join(launcher, "npm_config_cache", "_npx")}
}

func (n npxTree) entry(t *testing.T, name string, complete bool, lockAge, dirAge time.Duration) string {
	t.Helper()
	dir := filepath.Join(n.dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", "zod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if complete {
		if err := os.WriteFile(filepath.Join(dir, npxComplete), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if lockAge > 0 {
		lock := filepath.Join(dir, npxLock)
		if err := os.Mkdir(lock, 0o755); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-lockAge)
		if err := os.Chtimes(lock, at, at); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-dirAge)
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (n npxTree) installs() *npxInstalls {
	return &npxInstalls{dir: n.dir, root: n.launcher, rel: filepath.Join("npm_config_cache", "_npx")}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestNpxLeftovers: what an npx cut short left in the host's npm cache of
// a server is removed — an install never completed, a lock no npm holds
// — and nothing else: not a complete install, not an install whose lock
// is fresh or whose directory just changed, not what a link planted in
// the cache points to. In the user's own cache nothing is removed: the
// command that would is said.
func TestNpxLeftovers(t *testing.T) {
	n := newNpxTree(t)
	old := time.Minute
	done := n.entry(t, "done", true, 0, old)
	cut := n.entry(t, "cut", false, old, old)
	lockLeft := n.entry(t, "lockleft", true, old, old)
	busy := n.entry(t, "busy", false, time.Second, old)
	fresh := n.entry(t, "fresh", false, 0, 0)
	stale := n.entry(t, "stale", false, 0, old)
	// What the server may have planted: a link to the user's files, as an
	// entry, and inside an install cut short.
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(n.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cut, "node_modules", "evil")); err != nil {
		t.Fatal(err)
	}

	removed := n.installs().repair(t.Context(), false, false)
	slices.Sort(removed)
	want := []string{cut, filepath.Join(lockLeft, npxLock), stale}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, p := range []string{done, filepath.Join(lockLeft, npxComplete), busy, fresh, keep, filepath.Join(n.dir, "link")} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	for _, p := range want {
		if exists(p) {
			t.Errorf("%s is still there", p)
		}
	}

	// The server said a package is missing: complete installs go too,
	// never one whose lock is held.
	removed = n.installs().repair(t.Context(), false, true)
	if !slices.Contains(removed, done) || exists(done) || !exists(busy) {
		t.Errorf("broken: removed %q", removed)
	}

	// A server that made its npm cache a link to the user's files: the
	// repair stays in the server's launcher directory, and removes
	// nothing there.
	h := newNpxTree(t)
	mine := newNpxTree(t)
	theirs := mine.entry(t, "cut", false, old, old)
	if err := os.MkdirAll(h.launcher, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(mine.dir), filepath.Join(h.launcher, "npm_config_cache")); err != nil {
		t.Fatal(err)
	}
	if removed := h.installs().repair(t.Context(), false, false); removed != nil || !exists(theirs) {
		t.Errorf("through a link out of the launcher directory: removed %q", removed)
	}

	// In the user's own cache: nothing removed, the command said.
	u := newNpxTree(t)
	userCut := u.entry(t, "cut", false, old, old)
	user := &npxInstalls{dir: u.dir}
	if removed := user.repair(t.Context(), true, false); removed != nil {
		t.Errorf("the user's cache: removed %q", removed)
	}
	if hint := user.hint(false); !strings.Contains(hint, "rm -rf "+userCut) || !exists(userCut) {
		t.Errorf("the user's cache: hint %q", hint)
	}
	if hint := (&npxInstalls{dir: n.dir}).hint(false); hint != "" {
		t.Errorf("no install cut short, yet the hint %q", hint)
	}
}

// TestNpxRepairWaitsForLocks: a fresh lock is watched until it is
// stale (its npx was killed a moment ago: it goes) or touched (an npm
// holds it: its install stays).
func TestNpxRepairWaitsForLocks(t *testing.T) {
	n := newNpxTree(t)
	killed := n.entry(t, "killed", false, npxLockStale-time.Second, time.Minute)
	held := n.entry(t, "held", false, time.Second, time.Minute)
	stop := make(chan struct{})
	touched := make(chan struct{})
	go func() {
		defer close(touched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				now := time.Now()
				_ = os.Chtimes(filepath.Join(held, npxLock), now, now)
			}
		}
	}()
	start := time.Now()
	removed := n.installs().repair(t.Context(), true, false)
	close(stop)
	<-touched
	if !slices.Equal(removed, []string{killed}) || !exists(held) {
		t.Errorf("removed %q, want %s alone", removed, killed)
	}
	if d := time.Since(start); d > npxLockStale+2*time.Second {
		t.Errorf("the repair took %v", d)
	}
}

// TestStartFailureMemory: a failure is remembered a minute, doubled at
// each failure in a row up to 30 minutes; the file says nothing of the
// entry's values; a record that claims longer is ignored; one that is
// forgotten is gone.
func TestStartFailureMemory(t *testing.T) {
	c := newDescCache(t.TempDir())
	srv := MCPServer{Name: "s", Command: "node", Env: map[string]string{"API_KEY": "sk-secret-value"}}
	key := srv.failureKey("id", time.Second, "")
	if key == (&MCPServer{Name: "s", Command: "node", Env: map[string]string{"API_KEY": "other"}}).failureKey("id", time.Second, "") ||
		key == srv.failureKey("id", 2*time.Second, "") || key == srv.failureKey("id2", time.Second, "") ||
		key == srv.failureKey("id", time.Second, "write:/tmp") {
		t.Error("another value, timeout or identity has the same key")
	}
	now := time.Now()
	boom := errors.New("it exited during start-up (exit status 1)")
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		f := c.recordFailure(key, "s", boom, now)
		if f == nil || f.Failures != i+1 || f.RetryAt.Sub(now) != want || !errors.Is(f, boom) || f.Error() != boom.Error() {
			t.Fatalf("failure %d: %+v", i+1, f)
		}
	}
	for range 20 {
		c.recordFailure(key, "s", boom, now)
	}
	rec := c.readFailure(key)
	if rec == nil || rec.RetryAt.Sub(rec.At) != failureBackoffMax {
		t.Fatalf("after 23 failures: %+v", rec)
	}
	data, err := os.ReadFile(c.file(failurePrefix + key))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sk-secret-value") {
		t.Errorf("the record holds a value of the environment: %s", data)
	}
	if info, _ := os.Stat(c.file(failurePrefix + key)); info.Mode().Perm() != 0o600 {
		t.Errorf("the record is %v", info.Mode())
	}
	// A failure a day old starts the count again.
	if f := c.recordFailure(key, "s", boom, now.Add(25*time.Hour)); f.Failures != 1 {
		t.Errorf("a day later: %d failures in a row", f.Failures)
	}
	// A record that claims a longer wait than any is not believed.
	rec.RetryAt = rec.At.Add(24 * time.Hour)
	data, _ = json.Marshal(rec)
	if err := os.WriteFile(c.file(failurePrefix+key), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if c.readFailure(key) != nil {
		t.Error("a record that waits a day was believed")
	}
	c.recordFailure(key, "s", boom, now)
	c.forgetFailure(key)
	if c.readFailure(key) != nil || exists(c.file(failurePrefix+key)) {
		t.Error("a forgotten failure is remembered")
	}
	// Without a cache, nothing is remembered.
	if f := newDescCache(NoCache).recordFailure(key, "s", boom, now); f != nil {
		t.Errorf("without a cache: %+v", f)
	}
}
