package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// npx installs each package it runs in a directory of its own, under the
// _npx directory of the npm cache, and holds concurrency.lock there (a
// directory, whose time npm touches every second) while it installs. A
// start killed during the install (its start timeout passed, the host
// was killed) leaves the lock, which makes the next npx wait a minute
// before it takes it over, and a node_modules half written, which the
// next npx takes for installed and runs: the server then exits with
// "Cannot find package". An install is complete once npm wrote
// node_modules/.package-lock.json, its last step.
const (
	npxLock     = "concurrency.lock"
	npxComplete = "node_modules/.package-lock.json"
	// npxLockStale is how old a lock is when no npm holds it any more.
	npxLockStale = 3 * time.Second
)

// npxInstalls is where npx installs the packages a server runs: the _npx
// directory of its npm cache.
type npxInstalls struct {
	// dir is the _npx directory.
	dir string
	// root and rel: dir is rel under root, the server's launcher
	// directory (launcherDir), when the npm cache is the one the host
	// gives it: only then does the host repair it. Otherwise root is "".
	root, rel string
}

// npxCache is where npx installs what the server runs, and whether the
// host gave it that cache (its launcher directory, launcherDir, under
// root); "" when the server's command is not npx or npm exec. A cache the
// configuration chose (npm_config_cache in env) is the user's, as is
// npm's default, ~/.npm, without a launcher directory.
func (s *MCPServer) npxCache(root string) (string, bool) {
	n := s.npxInstalls(root)
	if n == nil {
		return "", false
	}
	return n.dir, n.root != ""
}

// npxInstalls is npxCache's answer in full; nil when the server's command
// is not npx or npm exec.
func (s *MCPServer) npxInstalls(root string) *npxInstalls {
	x, err := s.expanded()
	if err != nil || x.transport() != "stdio" {
		return nil
	}
	name := commandName(x.Command)
	if name != "npx" && (name != "npm" || !slices.Contains([]string{"exec", "x"}, subcommand(x.Args))) {
		return nil
	}
	for k, v := range x.Env {
		if strings.EqualFold(k, "npm_config_cache") && v != "" {
			if !filepath.IsAbs(v) {
				v = filepath.Join(x.Dir, v)
			}
			return &npxInstalls{dir: filepath.Join(v, "_npx")}
		}
	}
	dir, vars := s.launcherDir(root)
	for _, kv := range vars {
		if cache, ok := strings.CutPrefix(kv, "npm_config_cache="); ok {
			rel, err := filepath.Rel(dir, cache)
			if err != nil || !filepath.IsLocal(rel) {
				break
			}
			return &npxInstalls{dir: filepath.Join(cache, "_npx"), root: dir, rel: filepath.Join(rel, "_npx")}
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return &npxInstalls{}
	}
	return &npxInstalls{dir: filepath.Join(home, ".npm", "_npx")}
}

// npxEntry is one install of npx and what it left: a lock no npm holds,
// an install that never completed.
type npxEntry struct {
	name       string
	staleLock  bool
	incomplete bool
}

// leftovers lists the installs under the _npx directory, fsys, that an
// npx cut short left behind: an install never completed, or a lock no
// npm touched for npxLockStale. An install whose lock is fresh is left
// alone (busy), as is one without a lock that changed within
// npxLockStale: an npx between its steps holds none. broken also counts
// complete installs: the server said a package of its install is
// missing.
func leftovers(fsys fs.FS, now time.Time, broken bool) (found []npxEntry, busy bool) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		entry := npxEntry{name: e.Name()}
		if info, err := fs.Stat(fsys, entry.name+"/"+npxLock); err == nil {
			if now.Sub(info.ModTime()) < npxLockStale {
				busy = true
				continue
			}
			entry.staleLock = true
		} else if info, err := e.Info(); err != nil || now.Sub(info.ModTime()) < npxLockStale {
			continue
		}
		if _, err := fs.Stat(fsys, entry.name+"/"+npxComplete); err != nil || broken {
			entry.incomplete = true
		}
		if entry.staleLock || entry.incomplete {
			found = append(found, entry)
		}
	}
	return found, busy
}

// awaitLocks waits while a lock under fsys is fresh and still: until each
// is released, touched (an npm holds it) or stale (none does), within
// npxLockStale and a little more, or until ctx ends.
func awaitLocks(ctx context.Context, fsys fs.FS) {
	watched := map[string]time.Time{}
	entries, _ := fs.ReadDir(fsys, ".")
	for _, e := range entries {
		if info, err := fs.Stat(fsys, e.Name()+"/"+npxLock); err == nil && time.Since(info.ModTime()) < npxLockStale {
			watched[e.Name()] = info.ModTime()
		}
	}
	deadline := time.Now().Add(npxLockStale + time.Second)
	for len(watched) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		for name, mtime := range watched {
			info, err := fs.Stat(fsys, name+"/"+npxLock)
			if err != nil || !info.ModTime().Equal(mtime) || time.Since(mtime) >= npxLockStale {
				delete(watched, name)
			}
		}
	}
}

// repair removes what npx installs cut short left in the host's own npm
// cache of the server (root set): an install never completed, whole, and
// a lock no npm holds. wait: a fresh lock may be one whose npx was killed
// a moment ago (by the host, at the start timeout, or with the host), so
// it is watched until it is released, touched (another npm holds it: its
// install is left alone) or stale. broken: the server said a package of
// its install is missing, so complete installs go too. It returns what it
// removed, as paths. A wait ends with ctx.
func (n *npxInstalls) repair(ctx context.Context, wait, broken bool) []string {
	if n == nil || n.root == "" {
		return nil
	}
	root, err := os.OpenRoot(n.root)
	if err != nil {
		return nil
	}
	defer root.Close()
	sub, err := root.OpenRoot(n.rel)
	if err != nil {
		return nil
	}
	defer sub.Close()
	found, busy := leftovers(sub.FS(), time.Now(), broken)
	if busy && wait {
		awaitLocks(ctx, sub.FS())
		found, _ = leftovers(sub.FS(), time.Now(), broken)
	}
	var removed []string
	for _, e := range found {
		// Within the root: a link the server planted in its cache
		// leads nowhere else.
		target := e.name
		if !e.incomplete {
			target = e.name + "/" + npxLock
		}
		if err := sub.RemoveAll(target); err == nil {
			removed = append(removed, filepath.Join(n.dir, target))
		}
	}
	return removed
}

// hint is, for a server whose npm cache is the user's, the command that
// removes an npx install cut short that it found there; "" when there is
// none (or the cache is the host's, which it repairs itself).
func (n *npxInstalls) hint(broken bool) string {
	if n == nil || n.root != "" || n.dir == "" {
		return ""
	}
	found, _ := leftovers(os.DirFS(n.dir), time.Now(), broken)
	var paths []string
	for _, e := range found {
		paths = append(paths, shellQuote(filepath.Join(n.dir, e.name)))
	}
	if len(paths) == 0 {
		return ""
	}
	return "; its npx install was cut short or is broken, and its npm cache is not agenthost's to repair: rm -rf " + strings.Join(paths, " ") + " repairs it"
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// missingPackage reports whether a failed start says a package or module
// of the server is missing: Node.js's words for an install that lost
// files.
func missingPackage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"Cannot find package", "Cannot find module", "ERR_MODULE_NOT_FOUND"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// launchMCPRepairing is launchMCP with npx's installs kept usable, for a
// server that npx (or npm exec) runs. Before the start, what an npx cut
// short left in the server's npm cache (the host's own) is removed: a
// lock no npm holds, an install never completed. A start that fails,
// leaving such an install (npx killed at the start timeout), or saying
// a package of its install is missing, has it removed, and is made
// again, once. A server whose npm cache is the user's is not repaired:
// the error says what command does.
func (p *toolSource) launchMCPRepairing(server *MCPServer) (*instance, error) {
	npx := server.npxInstalls(p.sandbox.launchers)
	if npx == nil {
		return p.launchMCP(server)
	}
	// A wait for a lock ends when the source is closed.
	repair := func(broken bool) []string {
		ctx, cancel := p.bounded(2 * (npxLockStale + time.Second))
		defer cancel()
		return npx.repair(ctx, true, broken)
	}
	if removed := repair(false); len(removed) > 0 {
		p.logger.Warn("removed what an npx install cut short left behind", "removed", removed)
	}
	inst, err := p.launchMCP(server)
	if err == nil || p.life.Closed() {
		return inst, err
	}
	broken := missingPackage(err)
	if npx.root == "" {
		if hint := npx.hint(broken); hint != "" {
			return nil, errors.New(err.Error() + hint)
		}
		return nil, err
	}
	removed := repair(broken)
	if len(removed) == 0 || p.life.Closed() {
		return nil, err
	}
	p.logger.Warn("the server's npx install was cut short or broken: removed it; starting the server again", "error", err, "removed", removed)
	inst, err2 := p.launchMCP(server)
	switch {
	case err2 == nil:
		return inst, nil
	case err2.Error() == err.Error():
		return nil, fmt.Errorf("%w; and so again once its npx install, cut short, was removed", err2)
	}
	return nil, fmt.Errorf("%w (once its npx install, cut short, was removed; before: %s)", err2, err)
}
