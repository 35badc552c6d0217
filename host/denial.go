package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/sandbox"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// A server or plugin that the sandbox refused something fails in its own
// words, which name the path but not the sandbox: Landlock answers
// EACCES, as a file's own permissions do ("EACCES: permission denied,
// open '/work/x'", "npm error code EACCES" / "npm error path ~/.npm",
// "/usr/bin/sleep: Permission denied"). sandboxHint reads those words,
// checks each path they name against the sandbox the process runs in,
// and names the grant that would allow what the sandbox refused. A path
// the sandbox allows, a path whose own permissions refuse the user as
// well, and the secrets no grant reaches get no hint.

// Bounds of what sandboxHint reads: a tool's error text may be large.
// A path longer than maxHintPath gets no hint.
const (
	maxDenialLines    = 64
	maxDenialLineSize = 4096
	maxHintPath       = 512
)

// refusalMarks, on a line with a path, say that something was refused.
var refusalMarks = []string{
	"Permission denied", "permission denied", "Operation not permitted",
	"operation not permitted", "EACCES", "EPERM",
}

var (
	// deniedPath finds the paths of a line: quoted (Node's '/x', a
	// shell's ‘/x’), or bare up to a space or a colon (Go's "open /x:",
	// a shell's "sh: 1: /x:").
	deniedPath = regexp.MustCompile(`'(/[^'\n]*)'|"(/[^"\n]*)"|‘(/[^’\n]*)’|(?:^|[\s(=])(/[^\s'"():;,]*)`)
	// unixSocket finds a unix socket the process could not make: Go's
	// "dial unix /x.sock: socket: operation not permitted", Node's
	// "connect EPERM /x.sock".
	unixSocket = regexp.MustCompile(`dial unix (/[^\s:]+): socket: (?:operation not permitted|permission denied)|connect (?:EPERM|EACCES) (/\S+)`)
	// npmField reads npm's error report, a field a line: "npm error code
	// EACCES", "npm error syscall mkdir", "npm error path /x".
	npmField = regexp.MustCompile(`^npm (?:error|ERR!) (code|syscall|path) (.+)$`)
)

// denial is a refusal that a process's words name: a path and what was
// done to it (a system call or a command's verb, "" when unsaid), or a
// unix socket it could not make.
type denial struct {
	path   string
	op     string
	socket bool
}

// denials finds what lines say was refused, in order.
func denials(lines []string) []denial {
	var out []denial
	var npmCode, npmSyscall, npmPath string
	for i, line := range lines {
		if i == maxDenialLines {
			break
		}
		if len(line) > maxDenialLineSize {
			line = line[:maxDenialLineSize]
		}
		line = strings.TrimSpace(line)
		if m := npmField.FindStringSubmatch(line); m != nil {
			switch v := strings.TrimSpace(m[2]); m[1] {
			case "code":
				npmCode = v
			case "syscall":
				npmSyscall = v
			case "path":
				npmPath = v
			}
			if (npmCode == "EACCES" || npmCode == "EPERM") && npmPath != "" {
				out = append(out, denial{path: npmPath, op: npmSyscall})
				npmCode, npmPath = "", ""
			}
			continue
		}
		if !slices.ContainsFunc(refusalMarks, func(w string) bool { return strings.Contains(line, w) }) {
			continue
		}
		if m := unixSocket.FindStringSubmatch(line); m != nil {
			out = append(out, denial{path: m[1] + m[2], socket: true})
			continue
		}
		// The path a refusal follows comes first ("sh: 2: /usr/bin/x:
		// Permission denied", Go's "open /x: permission denied"); a bare
		// path with no verb that it does not follow (the script a shell
		// names its message by) is not what was refused.
		var near, far []denial
		from, op := 0, ""
		for _, m := range deniedPath.FindAllStringSubmatchIndex(line, 8) {
			for g := 2; g < len(m); g += 2 {
				if m[g] < 0 {
					continue
				}
				d := denial{path: strings.TrimRight(line[m[g]:m[g+1]], "."), op: verb(line[from:m[g]])}
				if d.op == "" {
					d.op = op // the second path of "rename '/x' -> '/y'"
				}
				from, op = m[g+1], d.op
				rest := strings.ToLower(line[m[1]:])
				switch {
				case strings.HasPrefix(rest, ": permission denied") || strings.HasPrefix(rest, ": operation not permitted"):
					near = append(near, d)
				case d.op != "" || g < 8: // a verb, or quoted
					far = append(far, d)
				}
			}
		}
		out = append(append(out, near...), far...)
	}
	return out
}

// verbs are the words, before a path, that say what was done to it: the
// system calls that Node and Go name, and the verbs of shells and
// coreutils ("cannot create", "cannot touch").
var verbs = []string{
	"mkdir", "creat", "touch", "unlink", "rmdir", "remove", "rename", "copyfile",
	"symlink", "link", "utime", "chmod", "chown", "mkdtemp", "write", "truncate",
	"mknod", "move", "overwrite",
	"scandir", "opendir", "readdir", "open directory", "read", "watch",
	"spawn", "exec",
	"stat", "access", "readlink", "realpath",
	"open",
}

// verb is the verb nearest the end of before (what precedes a path on
// its line, back to the path before it), or "".
func verb(before string) string {
	if len(before) > 40 {
		before = before[len(before)-40:]
	}
	best, at := "", -1
	for _, v := range verbs {
		if i := strings.LastIndex(before, v); i > at || i == at && i >= 0 && len(v) > len(best) {
			best, at = v, i
		}
	}
	return best
}

// verbAccess is the access a verb takes: 0 for "open" and none, which
// say nothing of it; ok is false for the verbs the sandbox never refuses
// (Landlock lets a process stat, resolve and check any path).
func verbAccess(v string) (access sandbox.Access, ok bool) {
	switch v {
	case "", "open":
		return 0, true
	case "stat", "access", "readlink", "realpath":
		return 0, false
	case "scandir", "opendir", "readdir", "open directory", "read", "watch":
		return sandbox.Read, true
	case "spawn", "exec":
		return sandbox.Execute, true
	}
	return sandbox.Write, true
}

// sandboxRefusal is what the sandbox refused a process: access to path,
// which exists, or, when it does not, to dir, the nearest directory above
// it that does.
type sandboxRefusal struct {
	path, dir string
	access    sandbox.Access
}

// refusedBy says whether the sandbox pol refused what d says was refused,
// and what that was. It does not when pol allows it (the refusal came from
// elsewhere), when the path's own permissions refuse it to the user too,
// or when the path is one of the secrets no grant reaches.
func refusedBy(pol *sandbox.Policy, d denial) (sandboxRefusal, bool) {
	path := filepath.Clean(d.path)
	if !filepath.IsAbs(path) || path == "/" || len(path) > maxHintPath || textsafe.NeedsQuoting(path) || pol.Secret(path) {
		return sandboxRefusal{}, false
	}
	need, ok := verbAccess(d.op)
	if !ok {
		return sandboxRefusal{}, false
	}
	r := sandboxRefusal{path: path, dir: path}
	info, err := os.Stat(path)
	exists := err == nil
	if !exists {
		// Made, or written, in the nearest directory above it.
		for {
			parent := filepath.Dir(r.dir)
			if parent == r.dir {
				return sandboxRefusal{}, false
			}
			r.dir = parent
			if _, err := os.Stat(r.dir); err == nil {
				break
			}
		}
		if need == 0 {
			need = sandbox.Write
		}
		if need != sandbox.Write {
			return sandboxRefusal{}, false // what is not there was not read or run
		}
	}
	readable := func() bool {
		return pol.Allows(r.dir, sandbox.Read) || exists && info.IsDir() && pol.Allows(r.dir, sandbox.List)
	}
	if need == 0 {
		switch {
		case d.op == "" && info.Mode().IsRegular() && info.Mode()&0o111 != 0 && !pol.Allows(path, sandbox.Execute):
			need = sandbox.Execute
		case !readable():
			need = sandbox.Read
		default:
			need = sandbox.Write
		}
	}
	r.access = need
	mode := uint32(unix.W_OK)
	switch need {
	case sandbox.Read:
		if readable() {
			return sandboxRefusal{}, false
		}
		mode = unix.R_OK
	case sandbox.Execute:
		if pol.Allows(path, sandbox.Execute) {
			return sandboxRefusal{}, false
		}
		mode = unix.X_OK
	default:
		if pol.Allows(r.dir, sandbox.Write) {
			return sandboxRefusal{}, false
		}
	}
	if unix.Access(r.dir, mode) != nil {
		return sandboxRefusal{}, false // its own permissions refuse it the user too
	}
	return r, true
}

// sandboxHint is, when lines (a tool's error, a process's stderr) show a
// refusal that the sandbox of inst made, a sentence naming the grant that
// would allow it, to append to the error: " (the sandbox denies mcp:NAME
// write access to /x: grant it with --grant mcp:NAME=write:/x, or
// "grant": ["write:/x"] in its mcpServers entry)". It is "" when inst
// runs in no sandbox, or nothing in lines shows such a refusal.
func (p *toolSource) sandboxHint(inst *instance, lines []string) string {
	if inst == nil || inst.runner == nil || inst.runner.Policy == nil {
		return ""
	}
	pol := inst.runner.Policy
	secrets := p.sandbox.secretNames()
	for _, d := range denials(lines) {
		if secrets.Secret(filepath.Clean(d.path)) {
			continue
		}
		if d.socket {
			if pol.UnixSockets || len(d.path) > maxHintPath || textsafe.NeedsQuoting(d.path) {
				continue
			}
			return p.grantHint("unix sockets, needed to connect to "+d.path, "them", []string{"unix-sockets"})
		}
		r, ok := refusedBy(pol, d)
		if !ok {
			continue
		}
		switch r.access {
		case sandbox.Execute:
			var items []string
			if !inst.perms.Exec {
				items = append(items, "exec")
			}
			if !pol.Allows(r.path, sandbox.Read) {
				items = append(items, "read:"+r.path)
			}
			if len(items) == 0 {
				continue
			}
			return p.grantHint("execute access to "+r.path, "it", items)
		case sandbox.Read:
			return p.grantHint("read access to "+r.path, "it", []string{"read:" + r.path})
		}
		return p.grantHint("write access to "+r.path, "it", []string{"write:" + writeGrant(r)})
	}
	return ""
}

// secretNames are the secrets no sandboxed process reaches, those that
// are not there too (the sandbox leaves them out, having nothing to
// keep): a path among them gets no hint, as one that is there would not.
func (c *sandboxConfig) secretNames() *sandbox.Policy {
	var out []string
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		for _, s := range slices.Concat(homeSecrets, tokenFiles) {
			out = append(out, configPath(home, s))
		}
	}
	if c != nil {
		out = append(out, expandPaths(c.devProfile.Secrets)...)
	}
	return &sandbox.Policy{Secrets: out}
}

// writeGrant is the path to grant for a write the sandbox refused: a
// directory itself; for a file, its directory, where programs write a
// file anew and rename it over the old one, unless that is the home
// directory or above it; for a path that does not exist, the nearest
// directory above it that does, unless that is the home directory or
// above it, and then the path, which must be made first (a rule on a
// path that does not exist is skipped).
func writeGrant(r sandboxRefusal) string {
	broad := func(dir string) bool {
		home, err := os.UserHomeDir()
		return dir == "/" || err == nil && within(absPath(home), dir)
	}
	if info, err := os.Stat(r.path); err == nil {
		if info.IsDir() || broad(filepath.Dir(r.path)) {
			return r.path
		}
		return filepath.Dir(r.path)
	}
	if broad(r.dir) {
		return r.path
	}
	return r.dir
}

// grantHint words the grant of items to the source, which would allow
// what (the access the sandbox denies it), "it" or "them". A path to
// write that does not exist is to be made first: a grant of it would be
// skipped.
func (p *toolSource) grantHint(what, pronoun string, items []string) string {
	name := strings.TrimPrefix(filepath.Base(p.path), PluginPrefix)
	who, config := "plugin "+name, ""
	list := jsonText(items)
	if k, ok := p.kind.(mcpKind); ok {
		name = MCPSourcePrefix + k.server.Name
		who = name
		config = `"grant": ` + list + " in its mcpServers entry"
	} else {
		config = `"grants": {` + jsonText(name) + ": " + list + "} in the configuration file"
	}
	if textsafe.NeedsQuoting(name) {
		return ""
	}
	how := "grant " + pronoun + " with "
	for _, item := range items {
		if path, ok := strings.CutPrefix(item, "write:"); ok {
			if _, err := os.Stat(path); err != nil {
				how = "make " + path + " first, then grant " + pronoun + " with "
			}
		}
	}
	flag := "--grant " + shellWord(name+"="+strings.Join(items, ","))
	return fmt.Sprintf(" (the sandbox denies %s %s: %s%s, or %s)", who, what, how, flag, config)
}

// jsonText is v in JSON, its characters as they are.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// textLines are the lines of a tool's error text, for sandboxHint.
func textLines(text string) []string {
	var lines []string
	for line := range strings.Lines(text) {
		if len(lines) == maxDenialLines {
			break
		}
		lines = append(lines, line)
	}
	return lines
}
