// Package config reads agenthost's configuration file: roots, grants, the
// mcpServers block as Claude Desktop, Cursor and Claude Code write it,
// chat settings, and every other key that stands for a flag of the
// agenthost CLI. Errors name the file and line. A project's files
// (ProjectFile, and Claude Code's MCPFile, in the working directory) are
// used only once the user has trusted each as it is (Trust); the user's
// own file and a file named explicitly need no trust.
//
// The CLI reads it through Load and lets its flags win; a program that
// builds its own registry reads the same file and takes File.Options.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// The configuration file is one JSON object. Its keys stand for the CLI's
// global flags (GlobalKeys), chat's flags (the chat block, ChatKeys) and
// --grant (grants: plugin name → grant items); mcpServers takes the block
// Claude Desktop, Cursor and Claude Code write, as host.MCPServers.
// Relative paths start from the file's directory. A flag given on the
// command line wins over the file.

// The configuration files Load reads: the user's, under
// os.UserConfigDir, then the project's, in the working directory, whose
// keys win: MCPFile's servers, then ProjectFile.
const (
	UserFile    = "agenthost/config.json"
	ProjectFile = "agenthost.json"
	// MCPFile is the project file of Claude Code's MCP servers, which
	// holds an mcpServers block and nothing else (ParseMCPFile). Its
	// servers count under the same trust as ProjectFile's, which wins
	// over it for a server of the same name.
	MCPFile = ".mcp.json"
)

// ProjectFiles returns the project's files, as Load reads them in the
// working directory, in order.
func ProjectFiles() []string { return []string{MCPFile, ProjectFile} }

// ParseMCPFile reads a file in the format of Claude Code's .mcp.json
// (MCPFile): {"mcpServers": {...}}, the servers with "type" "stdio",
// "http" or "sse", as Parse reads that block; name is how errors call it.
func ParseMCPFile(name string, data []byte) (*File, error) {
	return parse(name, data, []string{"mcpServers"})
}

// parseProject reads a project file: MCPFile's format for a file of that
// name, the configuration file's for any other.
func parseProject(name string, data []byte) (*File, error) {
	if filepath.Base(name) == MCPFile {
		return ParseMCPFile(name, data)
	}
	return Parse(name, data)
}

// File is what one configuration file, or several merged, says. Each key
// that stands for a flag is kept as the values the flag would be set to,
// so that a flag given on the command line can win over it and the flag's
// own parsing reads it; Options turns the keys a host needs into
// host.Options.
type File struct {
	// Flags are the top-level keys, by the global flag each stands for
	// ("root", "plugins", "grant"...; see GlobalKeys).
	Flags map[string]Setting
	// Chat is the chat block, by the chat flag each key stands for.
	Chat map[string]Setting
	// Grants are the --grant specs of the grants block, by plugin name.
	Grants map[string]Setting
	// Servers is the mcpServers block, by server name.
	Servers map[string]Server
	// Rules are the permissions block's rules, in the order written (the
	// user file's first), and the allow rules an mcpServers entry's
	// autoApprove or alwaysAllow makes.
	Rules []Rule
	// Notes are what Load has to tell the user about the files it read:
	// a project file's allow rules that wait for its trust.
	Notes []string
}

// Rule is one rule of the permissions block: its list (policy.Allow,
// policy.Ask or policy.Deny), its text, and where it is written.
type Rule struct {
	Effect policy.Effect
	Text   string
	File   string
	Line   int
}

// Policy returns the rules as a policy.
func (c *File) Policy() *policy.Policy {
	p := &policy.Policy{}
	for _, r := range c.Rules {
		_ = p.Add(r.Effect, r.Text) // checked as the file was read
	}
	return p
}

// Setting is one key of a configuration file: the values its flag is set
// to (once each), and where it was written.
type Setting struct {
	// Key is the key's path in the file: "roots", "chat.model",
	// "grants.fs".
	Key string
	// Values are the flag's values: one for a single value, one per
	// element of an array, paths made absolute.
	Values []string
	// File and Line say where the key is written.
	File string
	Line int
}

// Errorf is an error about the setting's value, at its line.
func (s Setting) Errorf(format string, args ...any) error {
	return &Error{File: s.File, Line: s.Line, Msg: s.Key + ": " + fmt.Sprintf(format, args...)}
}

// Server is one entry of the mcpServers block.
type Server struct {
	Server host.MCPServer
	// Disabled: the entry says "disabled": true; the server is not
	// started.
	Disabled bool
	// envFile is the entry's envFile, made absolute, which is read only
	// once the file that names it is trusted (readEnvFiles); envFileAt
	// says where the file names it.
	envFile   string
	envFileAt Setting
	// autoApprove are the entry's autoApprove and alwaysAllow lists.
	autoApprove []autoApproved
}

type autoApproved struct {
	tools []string
	at    *jsonValue
}

// New returns an empty configuration: what --config - reads.
func New() *File {
	return &File{Flags: map[string]Setting{}, Chat: map[string]Setting{}, Grants: map[string]Setting{}, Servers: map[string]Server{}}
}

// Error is a configuration file that cannot be used, with the line where
// it goes wrong (0: the file as a whole). The CLI reports it as a usage
// error: exit status 2.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	msg := toolcall.Bound(e.Msg, maxConfigMessage)
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", textsafe.Name(e.File), msg)
	}
	return fmt.Sprintf("%s:%d: %s", textsafe.Name(e.File), e.Line, msg)
}

// maxConfigMessage bounds what a configuration error says: a value it
// quotes is cut, not echoed whole.
const maxConfigMessage = 400

// ReadFile reads the configuration file at path, which must exist, and
// the envFiles it names. It needs no trust: the caller named the file.
func ReadFile(path string) (*File, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return c, c.readEnvFiles()
}

// Load reads the user file and the project files (ProjectFiles), all
// optional, the project's keys replacing the user's one by one, and its
// grants, chat keys and servers replacing the user's of the same name
// (agenthost.json's servers replace .mcp.json's). A project file is used
// only once the user trusts it (see Trust); before that, Load returns an
// *Error saying so, naming the file, and nothing the file names has been
// opened.
func Load() (*File, error) {
	var files []string
	if dir, err := os.UserConfigDir(); err == nil {
		files = append(files, filepath.Join(dir, UserFile))
	}
	c := New()
	for _, file := range append(files, ProjectFiles()...) {
		data, err := readConfigFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &Error{File: file, Msg: err.Error()}
		}
		// Parsing reads the bytes and nothing else: what the file names
		// (an envFile, a program) is opened only once it is trusted.
		over, err := parseProject(file, data)
		if err != nil {
			return nil, err
		}
		if slices.Contains(ProjectFiles(), file) {
			abs, err := filepath.Abs(file)
			if err != nil {
				return nil, untrustedError(file, nil)
			}
			if trusted, changed := projectTrusted(abs, data, over); !trusted {
				if !over.onlyRules() {
					return nil, untrustedError(file, changed)
				}
				// Ask and deny rules only narrow what runs: they count
				// at once. Allow rules wait for the file's trust.
				c.Rules = append(c.Rules, over.narrowing()...)
				if len(over.narrowing()) < len(over.Rules) {
					c.Notes = append(c.Notes, file+`: its permissions' allow rules count once the file is trusted (read it, then run "agenthost trust"); its ask and deny rules count now`)
				}
				continue
			}
		}
		if err := over.readEnvFiles(); err != nil {
			return nil, err
		}
		maps.Copy(c.Flags, over.Flags)
		maps.Copy(c.Chat, over.Chat)
		maps.Copy(c.Grants, over.Grants)
		maps.Copy(c.Servers, over.Servers)
		c.Rules = append(c.Rules, over.Rules...)
	}
	return c, nil
}

// onlyRules reports whether the file says nothing but rules.
func (c *File) onlyRules() bool {
	return len(c.Flags) == 0 && len(c.Chat) == 0 && len(c.Grants) == 0 && len(c.Servers) == 0
}

// narrowing are the ask and deny rules.
func (c *File) narrowing() []Rule {
	var out []Rule
	for _, r := range c.Rules {
		if r.Effect != policy.Allow {
			out = append(out, r)
		}
	}
	return out
}

// MCPServers lists the servers that are not disabled, by name.
func (c *File) MCPServers() []host.MCPServer {
	var out []host.MCPServer
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if e := c.Servers[name]; !e.Disabled {
			out = append(out, e.Server)
		}
	}
	return out
}

// valueKind is the JSON a key that stands for a flag takes.
type valueKind int

const (
	kindString  valueKind = iota
	kindPath              // a string, relative to the file's directory
	kindStrings           // an array of strings
	kindPaths             // an array of paths
	kindBool
	kindInt
	// kindTokens is a number, or a word (true, false, or a string): a
	// threshold such as deferTools.
	kindTokens
)

// flagKey is a key that stands for a flag.
type flagKey struct {
	key, flag string
	kind      valueKind
	// check, if set, vets each value.
	check func(string) error
}

// globalKeys are the top-level keys that stand for global flags, in the
// order the error messages list them.
var globalKeys = []flagKey{
	{"plugins", "plugins", kindPath, nil},
	{"roots", "root", kindPaths, checkDir},
	{"enable", "enable", kindStrings, nil},
	{"disable", "disable", kindStrings, nil},
	{"deferTools", "defer-tools", kindTokens, checkDeferTokens},
	{"pluginEnv", "plugin-env", kindStrings, nil},
	{"logLevel", "log-level", kindString, checkLogLevel},
	{"lock", "lock", kindPath, nil},
	{"eager", "eager", kindBool, nil},
	{"cacheDir", "cache-dir", kindPath, nil},
	{"idleTimeout", "idle-timeout", kindString, checkDuration},
	{"allowInsecurePlugins", "allow-insecure-plugins", kindBool, nil},
	{"sandbox", "sandbox", kindString, checkSandbox},
	{"devProfile", "dev-profile", kindString, checkOnOff},
	{"profileRead", "profile-read", kindPaths, nil},
	{"profileCaches", "profile-cache", kindStrings, nil},
	{"secrets", "secret", kindPaths, nil},
	{"approval", "approval", kindString, checkApproval},
	{"audit", "audit", kindPath, nil},
}

// ParseDeferTokens reads deferTools and --defer-tools as
// host.Options.DeferTokens takes them: a number of tokens past which
// the MCP servers' tools are deferred (0: whatever their size), "auto"
// or true for host.DefaultDeferTokens, "off" or false for never.
func ParseDeferTokens(s string) (int, error) {
	switch s {
	case "", "auto", "true", "on":
		return 0, nil
	case "off", "false":
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a number of tokens (0: defer whatever their size), auto or off", s)
	}
	if n == 0 {
		return 1, nil // more than 0: every tool
	}
	return n, nil
}

func checkDeferTokens(s string) error {
	_, err := ParseDeferTokens(s)
	return err
}

func checkApproval(s string) error {
	_, err := policy.ParseMode(s)
	return err
}

// chatKeys are the keys of the chat block.
var chatKeys = []flagKey{
	{"provider", "provider", kindString, checkProvider},
	{"model", "model", kindString, nil},
	{"baseURL", "base-url", kindString, nil},
	{"system", "system", kindString, nil},
	{"sessionFile", "session-file", kindPath, nil},
	{"maxTurns", "max-turns", kindInt, atLeast(1)},
	{"maxTokens", "max-tokens", kindInt, atLeast(0)},
}

// The keys of an mcpServers entry: agenthost's, and the ones other clients
// write that agenthost accepts: autoApprove and alwaysAllow (allow rules
// for the server's tools), description (ignored), includeTools and
// enabledTools (as tools), excludeTools (as disabledTools).
var (
	serverKeys        = []string{"command", "args", "env", "envFile", "cwd", "url", "headers", "type", "prefix", "timeout", "startupTimeout", "grant", "disabled", "tools", "disabledTools", "defer", "oauth"}
	ignoredServerKeys = []string{"autoApprove", "alwaysAllow", "description", "includeTools", "enabledTools", "excludeTools"}
)

var prefixPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)

func checkDir(path string) error {
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		return fmt.Errorf("%s: not a directory", textsafe.Name(path))
	}
	return nil
}

func checkLogLevel(s string) error {
	if hclog.LevelFromString(s) == hclog.NoLevel {
		return fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", s)
	}
	return nil
}

func checkDuration(s string) error {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Errorf("want a duration such as \"5m\" or \"0\" (never), got %q", s)
	}
	return nil
}

func checkSandbox(s string) error {
	_, err := host.ParseSandboxMode(s)
	return err
}

// checkOnOff accepts on, off, or nothing (the default, on).
func checkOnOff(s string) error {
	if s != "" && s != "on" && s != "off" {
		return fmt.Errorf("%q: want on or off", s)
	}
	return nil
}

// Providers are the model providers the chat block's provider may name.
var Providers = []string{"openai", "anthropic", "openrouter", "ollama"}

func checkProvider(s string) error {
	if !slices.Contains(Providers, s) {
		return fmt.Errorf("unknown provider %q (want openai, anthropic, openrouter or ollama)", s)
	}
	return nil
}

func atLeast(min int) func(string) error {
	return func(s string) error {
		if n, _ := strconv.Atoi(s); n < min {
			return fmt.Errorf("want at least %d, got %s", min, s)
		}
		return nil
	}
}

// Parse reads one configuration file; name is how errors call it.
func Parse(name string, data []byte) (*File, error) {
	return parse(name, data, append(keyNames(globalKeys), "grants", "chat", "mcpServers", "permissions"))
}

// parse reads a configuration file whose top-level keys may be want.
func parse(name string, data []byte, want []string) (*File, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	l := &loader{file: name, dir: filepath.Dir(abs)}
	doc, err := l.parse(data)
	if err != nil {
		return nil, err
	}
	c := New()
	members, err := l.object(doc, "", want, nil)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		switch m.name {
		case "grants":
			err = l.grants(c, m.value)
		case "chat":
			err = l.flagBlock(c.Chat, m.value, "chat", chatKeys)
		case "mcpServers":
			err = l.servers(c, m.value)
		case "permissions":
			err = l.permissions(c, m.value)
		default:
			err = l.flagValue(c.Flags, m, "", globalKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func keyNames(keys []flagKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.key)
	}
	return out
}

// loader reads the values of one configuration file.
type loader struct {
	file string
	dir  string // the directory relative paths start from
}

func (l *loader) errorf(line int, path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{File: l.file, Line: line, Msg: msg}
}

// flagBlock reads an object of keys that stand for flags.
func (l *loader) flagBlock(dst map[string]Setting, v *jsonValue, path string, keys []flagKey) error {
	members, err := l.object(v, path, keyNames(keys), nil)
	if err != nil {
		return err
	}
	for _, m := range members {
		if err := l.flagValue(dst, m, path+".", keys); err != nil {
			return err
		}
	}
	return nil
}

// flagValue reads the value of a key that stands for a flag.
func (l *loader) flagValue(dst map[string]Setting, m jsonMember, prefix string, keys []flagKey) error {
	i := slices.IndexFunc(keys, func(k flagKey) bool { return k.key == m.name })
	k, v, path := keys[i], m.value, prefix+m.name
	var values []string
	lines := []int{v.line}
	var err error
	switch k.kind {
	case kindString, kindPath:
		var s string
		s, err = l.str(v, path)
		values = []string{s}
	case kindStrings, kindPaths:
		values, err = l.strs(v, path)
		lines = lines[:0]
		for _, e := range v.elems {
			lines = append(lines, e.line)
		}
	case kindBool:
		var b bool
		b, err = l.boolean(v, path)
		values = []string{strconv.FormatBool(b)}
	case kindInt:
		var n int
		n, err = l.integer(v, path)
		values = []string{strconv.Itoa(n)}
	case kindTokens:
		switch v.kind {
		case jsonBool:
			values = []string{strconv.FormatBool(v.b)}
		case jsonNumber, jsonString:
			values = []string{v.text}
		default:
			err = l.errorf(v.line, path, "want a number of tokens, true or false, got %s", v.kind)
		}
	}
	if err != nil {
		return err
	}
	for i, s := range values {
		if (k.kind == kindPath || k.kind == kindPaths) && s != "" && s != "-" {
			values[i] = l.resolve(s)
		}
		if k.check != nil {
			if err := k.check(values[i]); err != nil {
				return l.errorf(lines[i], path, "%v", err)
			}
		}
	}
	dst[k.flag] = Setting{Key: path, Values: values, File: l.file, Line: m.line}
	return nil
}

// resolve makes a path the file names absolute: a relative path starts
// from the file's directory, and "~/" is the home directory. A path that
// starts with $ is kept as written, for the host to expand.
func (l *loader) resolve(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(path) || strings.HasPrefix(path, "$") || strings.HasPrefix(path, "~") {
		return path
	}
	return filepath.Join(l.dir, path)
}

// permissions reads the permissions block: allow, ask and deny lists of
// rules (policy.Parse).
func (l *loader) permissions(c *File, v *jsonValue) error {
	lists := map[string]policy.Effect{"allow": policy.Allow, "ask": policy.Ask, "deny": policy.Deny}
	members, err := l.object(v, "permissions", []string{"allow", "ask", "deny"}, nil)
	if err != nil {
		return err
	}
	for _, m := range members {
		path := "permissions." + m.name
		rules, err := l.strs(m.value, path)
		if err != nil {
			return err
		}
		for i, text := range rules {
			line := m.value.elems[i].line
			if _, err := policy.Parse(text); err != nil {
				return l.errorf(line, path, "%v", err)
			}
			c.Rules = append(c.Rules, Rule{Effect: lists[m.name], Text: text, File: l.file, Line: line})
		}
	}
	return nil
}

// grants reads the grants block: plugin name → grant items.
func (l *loader) grants(c *File, v *jsonValue) error {
	members, err := l.object(v, "grants", nil, nil)
	if err != nil {
		return err
	}
	for _, m := range members {
		path := "grants." + textsafe.Name(m.name)
		items, _, err := l.grantItems(m.name, m.value, path)
		if err != nil {
			return err
		}
		s := Setting{Key: path, File: l.file, Line: m.line}
		if len(items) > 0 {
			s.Values = []string{m.name + "=" + strings.Join(items, ",")}
		}
		c.Grants[strings.TrimPrefix(strings.TrimSpace(m.name), host.PluginPrefix)] = s
	}
	return nil
}

// grantItems reads an array of grant items as --grant NAME=ITEM,ITEM
// writes them, a relative read: or write: path starting from the file's
// directory, and returns them with the grant they make.
func (l *loader) grantItems(name string, v *jsonValue, path string) ([]string, host.Grant, error) {
	var grant host.Grant
	items, err := l.strs(v, path)
	if err != nil {
		return nil, grant, err
	}
	for i, item := range items {
		kind, p, ok := strings.Cut(strings.TrimSpace(item), ":")
		if ok && (kind == "read" || kind == "write") && p != "" && !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "$TMPDIR") {
			items[i] = kind + ":" + filepath.Join(l.dir, p)
		}
		_, g, err := host.ParseGrant(name + "=" + items[i])
		if err != nil {
			return nil, grant, l.errorf(v.elems[i].line, path, "%v", err)
		}
		grant = host.MergeGrants(grant, g)
	}
	return items, grant, nil
}

// servers reads the mcpServers block.
func (l *loader) servers(c *File, v *jsonValue) error {
	members, err := l.object(v, "mcpServers", nil, nil)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.name == "" || strings.Contains(m.name, "=") {
			return l.errorf(m.line, "mcpServers", "server name %q: want a name without \"=\"", m.name)
		}
		e, err := l.server(m.name, m.value)
		if err != nil {
			return err
		}
		c.Servers[m.name] = e
		for _, list := range e.autoApprove {
			for i, tool := range list.tools {
				name := tool
				if e.Server.Prefix != "" {
					name = e.Server.Prefix + "_" + tool
				}
				text := host.MCPSourcePrefix + m.name + "/" + name
				line := list.at.elems[i].line
				if _, err := policy.Parse(text); err != nil {
					return l.errorf(line, "mcpServers."+textsafe.Name(m.name), "auto-approved tool %q: %v", tool, err)
				}
				c.Rules = append(c.Rules, Rule{Effect: policy.Allow, Text: text, File: l.file, Line: line})
			}
		}
	}
	return nil
}

// server reads one entry of the mcpServers block.
func (l *loader) server(name string, v *jsonValue) (Server, error) {
	path := "mcpServers." + textsafe.Name(name)
	members, err := l.object(v, path, serverKeys, ignoredServerKeys)
	if err != nil {
		return Server{}, err
	}
	e := Server{Server: host.MCPServer{Name: name}}
	s := &e.Server
	at := map[string]*jsonValue{}
	var envFile, typ string
	for _, m := range members {
		at[m.name] = m.value
		p := path + "." + m.name
		switch m.name {
		case "command":
			s.Command, err = l.nonEmpty(m.value, p)
		case "args":
			s.Args, err = l.strs(m.value, p)
		case "env":
			s.Env, err = l.env(m.value, p)
		case "envFile":
			envFile, err = l.nonEmpty(m.value, p)
		case "cwd":
			s.Dir, err = l.nonEmpty(m.value, p)
		case "url":
			s.URL, err = l.nonEmpty(m.value, p)
		case "headers":
			s.Headers, err = l.strMap(m.value, p)
		case "type":
			typ, err = l.str(m.value, p)
		case "prefix":
			if s.Prefix, err = l.str(m.value, p); err == nil && !prefixPattern.MatchString(s.Prefix) {
				err = l.errorf(m.value.line, p, "%q: want 1 to 40 letters, digits, _ or -", s.Prefix)
			}
		case "timeout":
			s.Timeout, err = l.seconds(m.value, p)
		case "startupTimeout":
			s.StartupTimeout, err = l.seconds(m.value, p)
		case "grant":
			_, s.Grant, err = l.grantItems("mcp:"+name, m.value, p)
		case "disabled":
			e.Disabled, err = l.boolean(m.value, p)
		case "autoApprove", "alwaysAllow":
			var tools []string
			if tools, err = l.strs(m.value, p); err == nil {
				e.autoApprove = append(e.autoApprove, autoApproved{tools, m.value})
			}
		case "description":
			_, err = l.str(m.value, p)
		case "tools", "includeTools", "enabledTools":
			// Copilot CLI's tools, Gemini CLI's includeTools, Kimi's
			// and Kilo's enabledTools: the tools to register.
			var globs []string
			if globs, err = l.toolGlobs(m.value, p); err == nil {
				s.Tools = append(s.Tools, globs...)
			}
		case "disabledTools", "excludeTools":
			// Kiro's, Roo's and Windsurf's disabledTools, Gemini CLI's
			// excludeTools: the tools never to register.
			var globs []string
			if globs, err = l.toolGlobs(m.value, p); err == nil {
				s.DisabledTools = append(s.DisabledTools, globs...)
			}
		case "oauth":
			s.OAuth, err = l.oauth(m.value, p)
		case "defer":
			var b bool
			if b, err = l.boolean(m.value, p); err == nil {
				s.Defer = host.DeferNever
				if b {
					s.Defer = host.DeferAlways
				}
			}
		}
		if err != nil {
			return e, err
		}
	}

	stdio := at["command"] != nil
	switch {
	case stdio && at["url"] != nil:
		return e, l.errorf(v.line, path, "both command and url (want command for a stdio server, url for an HTTP one)")
	case !stdio && at["url"] == nil:
		return e, l.errorf(v.line, path, "neither command nor url (want command for a stdio server, url for an HTTP one)")
	}
	// has is the key the entry has, other the one it has not.
	s.Transport = "stdio"
	has, other := "command", "url"
	if !stdio {
		s.Transport = "http"
		has, other = other, has
	}
	switch typ {
	case "":
	case "stdio", "http", "streamable-http", "sse":
		if (typ == "stdio") != stdio {
			return e, l.errorf(at["type"].line, path+".type", "%q needs %s, not %s", typ, other, has)
		}
		if typ == "sse" {
			s.Transport = "sse"
		}
	default:
		return e, l.errorf(at["type"].line, path+".type", "unknown type %q (want stdio, http, streamable-http or sse)", typ)
	}
	for _, key := range []string{"args", "env", "envFile", "cwd", "headers", "oauth"} {
		if at[key] != nil && (key == "headers" || key == "oauth") == stdio {
			return e, l.errorf(at[key].line, path+"."+key, "goes with %s, not %s", other, has)
		}
	}

	if strings.ContainsRune(s.Command, '/') || strings.ContainsRune(s.Command, filepath.Separator) {
		s.Command = l.resolve(s.Command)
	}
	if s.Dir != "" {
		s.Dir = l.resolve(s.Dir)
	}
	if envFile != "" && !e.Disabled {
		e.envFile = l.resolve(envFile)
		e.envFileAt = Setting{Key: path + ".envFile", File: l.file, Line: at["envFile"].line}
	}
	return e, nil
}

// toolGlobs reads a server entry's list of its tools' names or globs.
func (l *loader) toolGlobs(v *jsonValue, p string) ([]string, error) {
	globs, err := l.strs(v, p)
	if err != nil {
		return nil, err
	}
	for i, g := range globs {
		if _, perr := path.Match(g, ""); g == "" || perr != nil {
			return nil, l.errorf(v.elems[i].line, p, "%q is not a tool name or a glob over tool names", g)
		}
	}
	return globs, nil
}

// readEnvFiles reads the envFile of each server entry, whose variables
// the entry's env overrides.
func (c *File) readEnvFiles() error {
	for name, e := range c.Servers {
		if e.envFile == "" {
			continue
		}
		fileEnv, err := readEnvFile(e.envFile)
		if err != nil {
			return e.envFileAt.Errorf("%v", err)
		}
		maps.Copy(fileEnv, e.Server.Env)
		e.Server.Env = fileEnv
		e.envFile = ""
		c.Servers[name] = e
	}
	return nil
}

// maxConfigFile bounds a configuration file and an envFile.
const maxConfigFile = 1 << 20

// readConfigFile reads a configuration file or an envFile: a regular
// file of at most maxConfigFile bytes. It opens without blocking, so a
// FIFO or a device is refused, never read.
func readConfigFile(path string) ([]byte, error) {
	f, info, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > maxConfigFile {
		return nil, fmt.Errorf("%s is %d bytes: a configuration file is at most %d (1 MiB)", textsafe.Name(path), info.Size(), maxConfigFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigFile {
		return nil, fmt.Errorf("%s grew past %d bytes (1 MiB) while it was read", textsafe.Name(path), maxConfigFile)
	}
	return data, nil
}

// openRegular opens the file at path for reading, without blocking, so a
// FIFO or a device is refused, never read: it must be a regular file.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", textsafe.Name(path), fileKind(info.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// readEnvFile reads a file of KEY=VALUE lines, as Cursor's envFile names
// one: blank lines and lines starting with # are skipped, a line may start
// with "export ", and a value may be quoted with " or '. Values are taken
// as written.
func readEnvFile(path string) (map[string]string, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE", textsafe.Name(path), i+1)
		}
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		env[key] = value
	}
	return env, nil
}

// ParseGrants reads grant specs as --grant takes them (NAME=ITEM,ITEM...);
// grants to one plugin add up.
func ParseGrants(specs []string) (map[string]host.Grant, error) {
	grants := map[string]host.Grant{}
	for _, spec := range specs {
		name, g, err := host.ParseGrant(spec)
		if err != nil {
			return nil, err
		}
		grants[name] = host.MergeGrants(grants[name], g)
	}
	return grants, nil
}

// Key is a key of the configuration file that stands for a flag of the
// CLI: Name in the file, Flag on the command line.
type Key struct{ Name, Flag string }

// GlobalKeys are the top-level keys that stand for global flags.
func GlobalKeys() []Key { return exportKeys(globalKeys) }

// ChatKeys are the keys of the chat block.
func ChatKeys() []Key { return exportKeys(chatKeys) }

func exportKeys(keys []flagKey) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[i] = Key{Name: k.key, Flag: k.flag}
	}
	return out
}

// CheckOnOff accepts on, off, or nothing (the default, on): the values
// of devProfile and --dev-profile.
func CheckOnOff(s string) error { return checkOnOff(s) }

// PluginsDir is the plugins directory the file names, or "".
func (c *File) PluginsDir() string { return c.first("plugins") }

// first is the first value of a top-level key, or "".
func (c *File) first(flag string) string {
	if s := c.Flags[flag]; len(s.Values) > 0 {
		return s.Values[0]
	}
	return ""
}

// Options returns the host options the configuration sets, as the CLI
// reads them when no flag overrides the file: roots, the grants block,
// the MCP servers that are not disabled, the sandbox mode, the lock file,
// the cache directory, eager start, the idle timeout ("0": never), the
// plugins' environment, insecure plugins and the development profile.
// The logger, the plugins directory (PluginsDir), enable and disable
// (apply them to the registry) and the chat block are the caller's.
func (c *File) Options() (*host.Options, error) {
	opts := &host.Options{
		Roots:      c.Flags["root"].Values,
		LockFile:   c.first("lock"),
		CacheDir:   c.first("cache-dir"),
		PluginEnv:  c.Flags["plugin-env"].Values,
		MCPServers: c.MCPServers(),
		Profile: host.DevProfile{
			Off:     c.first("dev-profile") == "off",
			Read:    c.Flags["profile-read"].Values,
			Caches:  c.Flags["profile-cache"].Values,
			Secrets: c.Flags["secret"].Values,
		},
	}
	opts.Eager = c.first("eager") == "true"
	opts.DeferTokens, _ = ParseDeferTokens(c.first("defer-tools")) // checked as the file was read
	opts.AllowInsecurePlugins = c.first("allow-insecure-plugins") == "true"
	if s := c.first("idle-timeout"); s != "" {
		d, _ := time.ParseDuration(s) // checked as the file was read
		if d <= 0 {
			d = -1
		}
		opts.IdleTimeout = d
	}
	if s := c.first("sandbox"); s != "" {
		mode, err := host.ParseSandboxMode(s)
		if err != nil {
			return nil, c.Flags["sandbox"].Errorf("%v", err)
		}
		opts.Sandbox = mode
	}
	var err error
	var specs []string
	for _, name := range slices.Sorted(maps.Keys(c.Grants)) {
		specs = append(specs, c.Grants[name].Values...)
	}
	if opts.Grants, err = ParseGrants(specs); err != nil {
		return nil, err
	}
	return opts, nil
}
