package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// A command that the sandbox refused something fails in the words of the
// program that ran into the wall, which are often beside the point: Go
// says "package fmt is not in std" when its build cache is not writable,
// git "unknown error occurred while reading the configuration files"
// when ~/.gitconfig is not readable. Landlock tells a process nothing
// but EACCES, and its audit records are the kernel's audit log's, which
// an unprivileged host cannot read; so when a command fails, run_bash
// looks at what it printed: each path it names beside a refusal, the
// build cache of a go command, a name that did not resolve. A path the
// command's sandbox does not allow is named in a notice, with the grant
// that would allow it, or as one of the secrets no grant reaches.

// maxWallNotices bounds the notices of one command.
const maxWallNotices = 3

// refusalWords, on a line with a path, say that something was refused.
var refusalWords = []string{
	"Permission denied", "permission denied", "Operation not permitted",
	"operation not permitted", "Read-only file system", "read-only file system",
	"EACCES", "EPERM", "EROFS", "unable to access", "Access is denied",
}

// writeWords, on such a line, say that the program was writing.
var writeWords = []string{
	"mkdir", "write", "writing", "creat", "Read-only", "read-only", "EROFS",
	"rename", "remove", "unlink", "touch", "cannot make", "cannot save",
}

// networkWords say that a program found no network.
var networkWords = []string{
	"Could not resolve host", "Temporary failure in name resolution",
	"Name or service not known", "getaddrinfo", "ENOTFOUND", "EAI_AGAIN",
	"Network is unreachable", "network is unreachable", "no such host",
	"Failed to connect", "Could not connect", "connection refused",
	"Connection refused", "dial tcp", "ECONNREFUSED", "ENETUNREACH",
	"nodename nor servname", "Cannot assign requested address",
}

// pathPattern finds absolute and home-relative paths in a line.
var pathPattern = regexp.MustCompile(`(?:^|[\s'"(=:\x60])((?:/|~/)[^\s'"():;,\x60]+)`)

// goCommand finds a go command among a shell command's words.
var goCommand = regexp.MustCompile(`(?:^|[\s;&|(])go\s+(?:build|test|vet|run|install|list|generate|mod|work|get|env|tool)\b`)

// assigned finds a variable set on the command line: NAME=VALUE.
func assigned(command, name string) string {
	m := regexp.MustCompile(`(?:^|[\s;&|(])` + regexp.QuoteMeta(name) + `=("[^"]*"|'[^']*'|\S+)`).FindStringSubmatch(command)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"'`)
}

// refusal is one thing the sandbox refused a command.
type refusal struct {
	path   string
	access sandbox.Access
	secret bool
}

// wallNotices are the notices for a command that failed with exitCode in
// sb, having printed output: what the sandbox refused it. None when it
// did not fail, or ran unconfined.
func wallNotices(sb *commandSandbox, command string, env []string, exitCode int, output string) []string {
	if sb == nil || exitCode == 0 {
		return nil
	}
	p := sb.policy()
	home := envValue(env, "HOME")
	var found []refusal
	seen := map[string]bool{}
	consider := func(path string, writing bool) {
		if strings.HasPrefix(path, "~/") && filepath.IsAbs(home) {
			path = filepath.Join(home, path[2:])
		}
		path = strings.TrimRight(filepath.Clean(path), ".")
		if !filepath.IsAbs(path) || seen[path] || path == "/" {
			return
		}
		seen[path] = true
		if r, ok := refused(p, path, writing); ok {
			found = append(found, r)
		}
	}
	for line := range strings.Lines(output) {
		if !slices.ContainsFunc(refusalWords, func(w string) bool { return strings.Contains(line, w) }) {
			continue
		}
		writing := slices.ContainsFunc(writeWords, func(w string) bool { return strings.Contains(line, w) })
		for _, m := range pathPattern.FindAllStringSubmatch(line, 8) {
			consider(m[1], writing)
		}
	}
	if goCommand.MatchString(command) {
		consider(goCache(command, env, home), true)
	}
	var notices []string
	for _, r := range found {
		if len(notices) == maxWallNotices {
			break
		}
		notices = append(notices, r.notice())
	}
	if !sb.Network && !sb.UnixSockets && len(notices) < maxWallNotices && slices.ContainsFunc(networkWords, func(w string) bool { return strings.Contains(output, w) }) {
		notices = append(notices, "[the command has no network in its sandbox: names do not resolve and no connection leaves the machine, so a retry will fail the same way; the user can grant it with --grant bash=network]")
	}
	return notices
}

// refused says whether p refuses path, read, or written when writing,
// and how; a path that does not exist is written through the directory
// it would be made in.
func refused(p *sandbox.Policy, path string, writing bool) (refusal, bool) {
	if p.Secret(path) {
		return refusal{path: path, secret: true}, true
	}
	info, err := os.Stat(path)
	if err != nil {
		if !writing {
			return refusal{}, false
		}
		// What would be made: the nearest directory above it that is.
		dir := path
		for {
			parent := filepath.Dir(dir)
			if parent == dir {
				return refusal{}, false
			}
			dir = parent
			if _, err := os.Stat(dir); err == nil {
				break
			}
		}
		if !p.Allows(dir, sandbox.Write) {
			return refusal{path: dir, access: sandbox.Write}, true
		}
		return refusal{}, false
	}
	switch {
	case writing && !p.Allows(path, sandbox.Write):
		return refusal{path: path, access: sandbox.Write}, true
	case !info.IsDir() && info.Mode()&0o111 != 0 && !p.Allows(path, sandbox.Execute):
		return refusal{path: path, access: sandbox.Execute}, true
	case !p.Allows(path, sandbox.Read) && !(info.IsDir() && p.Allows(path, sandbox.List)):
		return refusal{path: path, access: sandbox.Read}, true
	}
	return refusal{}, false
}

// notice is the refusal in words.
func (r refusal) notice() string {
	shown := showPath(r.path)
	if r.secret {
		return fmt.Sprintf("[the sandbox refused %s: it is one of the secrets no sandboxed process reaches, whatever is granted; a retry will fail the same way]", shown)
	}
	what, item := "reading", "read:"
	switch r.access {
	case sandbox.Write:
		what, item = "writing", "write:"
	case sandbox.Execute:
		what = "running"
	}
	return fmt.Sprintf("[the sandbox refused %s %s: the command's sandbox does not reach it, so a retry will fail the same way; the user can grant it with --grant bash=%s%s]", what, shown, item, shown)
}

// goCache is the build cache a go command uses: GOCACHE as the command
// sets it, or as its environment does, or Go's default.
func goCache(command string, env []string, home string) string {
	if v := assigned(command, "GOCACHE"); v != "" {
		return v
	}
	if v := envValue(env, "GOCACHE"); v != "" {
		return v
	}
	if v := envValue(env, "XDG_CACHE_HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, "go-build")
	}
	if filepath.IsAbs(home) {
		return filepath.Join(home, ".cache", "go-build")
	}
	return ""
}

// envValue is the value of name in env, the last one set.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// showPath is path with the home directory written ~.
func showPath(path string) string {
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && home != "/" {
		if rel, ok := strings.CutPrefix(path, home+"/"); ok {
			return "~/" + rel
		}
	}
	return path
}
