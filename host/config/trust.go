package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// A project's configuration file comes with the directory agenthost runs
// in, a cloned repository say, and it can start programs (mcpServers, a
// plugins directory) and widen the sandbox (grants, sandbox off). So it is
// used only once the user has trusted it, as it is now: agenthost trust
// records its SHA-256 under the user's configuration directory, with
// those of the project's files it runs or reads (pinned), and a change to
// any needs agenthost trust again. Before that, nothing it names is
// opened: its bytes are read, bounded, and parsed. A file the user names
// with --config, and the user's own file, need no trust.

// trustedDir holds one record per trusted project file, named after the
// SHA-256 of its absolute path, holding the SHA-256 of its content.
const trustedDir = "agenthost/trusted"

// trustRecord is where the trust in the project file at abs is recorded.
func trustRecord(abs string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, trustedDir, hex.EncodeToString(sum[:16])), nil
}

// trustLines is what the record of the project file at abs, with
// content data and configuration c, holds: the file's SHA-256, then that
// of each file it runs or reads from inside the project (pinned), "-"
// for one that is not there.
func trustLines(abs string, data []byte, c *File) string {
	sum := sha256.Sum256(data)
	lines := hex.EncodeToString(sum[:]) + " " + abs + "\n"
	for _, p := range c.pinned(filepath.Dir(abs)) {
		lines += fileSum(p) + " " + p + "\n"
	}
	return lines
}

// pinned are the files of the project directory dir that the
// configuration runs or reads: each server's command when it names a
// file, the files its arguments name, its envFile, and the files of a
// plugins directory. Trust covers them as it covers the file itself: a
// program replaced after agenthost trust runs only after agenthost trust
// again. Programs found on PATH and files outside the project are not
// the project's to change.
func (c *File) pinned(dir string) []string {
	var paths []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) || !within(filepath.Clean(p), dir) {
			return
		}
		// A link that leads out of the project is not the project's.
		if real, err := filepath.EvalSymlinks(p); err == nil && !within(real, dir) {
			return
		}
		paths = append(paths, filepath.Clean(p))
	}
	for _, e := range c.Servers {
		s := e.Server
		if strings.ContainsRune(s.Command, filepath.Separator) {
			add(s.Command)
		}
		add(e.envFile)
		base := dir
		if s.Dir != "" {
			base = s.Dir
		}
		for _, a := range s.Args {
			p := a
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
				add(p)
			}
		}
	}
	if s, ok := c.Flags["plugins"]; ok && len(s.Values) > 0 && within(filepath.Clean(s.Values[0]), dir) {
		entries, _ := os.ReadDir(s.Values[0])
		for _, e := range entries {
			if e.Type().IsRegular() {
				add(filepath.Join(s.Values[0], e.Name()))
			}
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// within reports whether path is dir or beneath it; both are clean.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// fileSum is the SHA-256 of the regular file at path, read without
// blocking; "-" when there is none.
func fileSum(path string) string {
	f, _, err := openRegular(path)
	if err != nil {
		return "-"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "-"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// projectTrusted reports whether the user trusts the project file at abs
// with the content data, and what it runs as it is now; when the file is
// trusted but a file it runs changed, changed names those.
func projectTrusted(abs string, data []byte, c *File) (trusted bool, changed []string) {
	rec, err := trustRecord(abs)
	if err != nil {
		return false, nil
	}
	got, err := readConfigFile(rec)
	if err != nil {
		return false, nil
	}
	// The file itself first: what an untrusted file names is not even
	// hashed.
	sum := sha256.Sum256(data)
	if !strings.HasPrefix(string(got), hex.EncodeToString(sum[:])+" "+abs+"\n") {
		return false, nil
	}
	want := trustLines(abs, data, c)
	if string(got) == want {
		return true, nil
	}
	gotLines, wantLines := strings.SplitAfter(string(got), "\n"), strings.SplitAfter(want, "\n")
	for _, line := range wantLines[1:] {
		if line != "" && !slices.Contains(gotLines, line) {
			_, p, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			changed = append(changed, p)
		}
	}
	return false, changed
}

// untrustedError is a project file that is not trusted (as it is now),
// or whose programs changed since it was trusted.
func untrustedError(file string, changed []string) error {
	if len(changed) > 0 {
		var names []string
		for _, p := range changed {
			names = append(names, textsafe.Name(p))
		}
		return &Error{File: file, Msg: fmt.Sprintf(`this directory's configuration is trusted, but what it runs changed since: %s. Read it, then run "agenthost trust" again`, strings.Join(names, ", "))}
	}
	return &Error{File: file, Msg: `this directory's configuration is not trusted: it can start programs (mcpServers, plugins) and widen the sandbox. Read it, then run "agenthost trust" (again after each change), or name it with --config to use it once`}
}

// Trust records that the user trusts the project configuration file at
// path (an agenthost.json, or a .mcp.json, read as MCPFile) as it is now,
// with the files of the project it runs or reads (pinned): Load uses it
// from then on, until it or one of those changes.
// It returns the file's absolute path and how many project files the
// record pins. A file that Parse refuses (an *Error) is not recorded.
func Trust(path string) (abs string, pinned int, err error) {
	data, err := readConfigFile(path)
	if err != nil {
		return "", 0, err
	}
	c, err := parseProject(path, data)
	if err != nil {
		return "", 0, err
	}
	if abs, err = filepath.Abs(path); err != nil {
		return "", 0, err
	}
	rec, err := trustRecord(abs)
	if err != nil {
		return "", 0, err
	}
	if err := atomicfile.Write(rec, []byte(trustLines(abs, data, c)), 0o600); err != nil {
		return "", 0, err
	}
	return abs, len(c.pinned(filepath.Dir(abs))), nil
}
