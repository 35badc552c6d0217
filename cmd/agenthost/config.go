package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/toolcall"
)

// A configuration file is one JSON object. Its keys stand for the global
// flags (globalKeys), chat's flags (the chat block, chatKeys) and --grant
// (grants: plugin name → grant items); mcpServers takes the block Claude
// Desktop, Cursor and Claude Code write, as host.MCPServers. Relative
// paths start from the file's directory. A flag given on the command line
// wins over the file.

// The configuration files agenthost reads without --config: the user's,
// under os.UserConfigDir, then the project's, in the working directory,
// whose keys win.
const (
	userConfigFile    = "agenthost/config.json"
	projectConfigFile = "agenthost.json"
)

// config is what the configuration files say. Each key that stands for a
// flag is kept as the values the flag would be set to, so that a flag
// given on the command line can win over it and the flag's own parsing
// reads it.
type config struct {
	// flags are the top-level keys, by the global flag each stands for.
	flags map[string]setting
	// chat is the chat block, by the chat flag each key stands for.
	chat map[string]setting
	// grants are the --grant specs of the grants block, by plugin name.
	grants map[string]setting
	// servers is the mcpServers block, by server name.
	servers map[string]mcpEntry
}

// setting is one key of a configuration file: the values its flag is set
// to (once each), and where it was written.
type setting struct {
	key    string
	values []string
	file   string
	line   int
}

func (s setting) errorf(format string, args ...any) error {
	return &configError{file: s.file, line: s.line, msg: s.key + ": " + fmt.Sprintf(format, args...)}
}

// mcpEntry is one entry of the mcpServers block.
type mcpEntry struct {
	server   host.MCPServer
	disabled bool
	// envFile is the entry's envFile, made absolute, which is read only
	// once the file that names it is trusted (readEnvFiles); envFileAt
	// says where the file names it.
	envFile   string
	envFileAt setting
}

func newConfig() *config {
	return &config{flags: map[string]setting{}, chat: map[string]setting{}, grants: map[string]setting{}, servers: map[string]mcpEntry{}}
}

// configError is a configuration file that cannot be used, with the line
// where it goes wrong (0: the file as a whole). Like a bad flag, it is a
// usage error: exit status 2.
type configError struct {
	file string
	line int
	msg  string
}

func (e *configError) Error() string {
	msg := toolcall.Bound(e.msg, maxConfigMessage)
	if e.line == 0 {
		return fmt.Sprintf("%s: %s", textsafe.Name(e.file), msg)
	}
	return fmt.Sprintf("%s:%d: %s", textsafe.Name(e.file), e.line, msg)
}

// maxConfigMessage bounds what a configuration error says: a value it
// quotes is cut, not echoed whole.
const maxConfigMessage = 400

// loadConfig reads the configuration: the file --config names (it must
// exist; "-" reads none), else the user file and the project file, both
// optional, the project's keys replacing the user's one by one, and its
// grants, chat keys and servers replacing the user's of the same name.
func loadConfig(file string, given bool) (*config, error) {
	switch {
	case file == "-":
		return newConfig(), nil
	case given && file == "":
		return nil, usagef("--config needs a FILE (- for none)")
	case given:
		data, err := readConfigFile(file)
		if err != nil {
			return nil, usagef("--config: %v", err)
		}
		c, err := parseConfig(file, data)
		if err != nil {
			return nil, err
		}
		return c, c.readEnvFiles()
	}
	var files []string
	if dir, err := os.UserConfigDir(); err == nil {
		files = append(files, filepath.Join(dir, userConfigFile))
	}
	c := newConfig()
	for _, file := range append(files, projectConfigFile) {
		data, err := readConfigFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &configError{file: file, msg: err.Error()}
		}
		// Parsing reads the bytes and nothing else: what the file names
		// (an envFile, a program) is opened only once it is trusted.
		over, err := parseConfig(file, data)
		if err != nil {
			return nil, err
		}
		if file == projectConfigFile {
			abs, err := filepath.Abs(file)
			if err != nil {
				return nil, untrustedError(file, nil)
			}
			if trusted, changed := projectTrusted(abs, data, over); !trusted {
				return nil, untrustedError(file, changed)
			}
		}
		if err := over.readEnvFiles(); err != nil {
			return nil, err
		}
		maps.Copy(c.flags, over.flags)
		maps.Copy(c.chat, over.chat)
		maps.Copy(c.grants, over.grants)
		maps.Copy(c.servers, over.servers)
	}
	return c, nil
}

// apply sets each flag the command line did not give to the
// configuration's value; --plugin-env and --grant add to the file's. The
// chat block applies to the chat command only. The enable and disable
// lists are left to toggleTools.
func (c *config) apply(fs *flag.FlagSet, given map[string]bool, command string) error {
	set := func(s setting, name string) error {
		for _, v := range s.values {
			if err := fs.Set(name, v); err != nil {
				return s.errorf("%v", err)
			}
		}
		return nil
	}
	for name, s := range c.flags {
		if name == "enable" || name == "disable" || given[name] && name != "plugin-env" {
			continue
		}
		if err := set(s, name); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.grants)) {
		if err := set(c.grants[name], "grant"); err != nil {
			return err
		}
	}
	if command != "chat" {
		return nil
	}
	for name, s := range c.chat {
		if !given[name] {
			if err := set(s, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// toggleTools applies the configuration's enable and disable lists, before
// the flags', so that a flag wins over the file.
func (c *config) toggleTools(reg *host.ToolRegistry) error {
	for _, t := range []struct {
		flag   string
		toggle func(string) error
	}{{"enable", reg.Enable}, {"disable", reg.Disable}} {
		s := c.flags[t.flag]
		for _, name := range s.values {
			if err := t.toggle(name); err != nil {
				return s.errorf("%s: %v", textsafe.Name(name), err)
			}
		}
	}
	return nil
}

// mcpServers lists the servers that are not disabled, by name.
func (c *config) mcpServers() []host.MCPServer {
	var out []host.MCPServer
	for _, name := range slices.Sorted(maps.Keys(c.servers)) {
		if e := c.servers[name]; !e.disabled {
			out = append(out, e.server)
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
// write that agenthost accepts and ignores.
var (
	serverKeys        = []string{"command", "args", "env", "envFile", "cwd", "url", "headers", "type", "prefix", "timeout", "grant", "disabled"}
	ignoredServerKeys = []string{"autoApprove", "alwaysAllow", "description"}
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

func checkProvider(s string) error {
	if _, ok := providerDefaults[s]; !ok {
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

// parseConfig reads one configuration file; name is how errors call it.
func parseConfig(name string, data []byte) (*config, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &configError{file: name, msg: err.Error()}
	}
	l := &loader{file: name, dir: filepath.Dir(abs)}
	doc, err := l.parse(data)
	if err != nil {
		return nil, err
	}
	c := newConfig()
	want := append(keyNames(globalKeys), "grants", "chat", "mcpServers")
	members, err := l.object(doc, "", want, nil)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		switch m.name {
		case "grants":
			err = l.grants(c, m.value)
		case "chat":
			err = l.flagBlock(c.chat, m.value, "chat", chatKeys)
		case "mcpServers":
			err = l.servers(c, m.value)
		default:
			err = l.flagValue(c.flags, m, "", globalKeys)
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
	return &configError{file: l.file, line: line, msg: msg}
}

// flagBlock reads an object of keys that stand for flags.
func (l *loader) flagBlock(dst map[string]setting, v *jsonValue, path string, keys []flagKey) error {
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
func (l *loader) flagValue(dst map[string]setting, m jsonMember, prefix string, keys []flagKey) error {
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
	dst[k.flag] = setting{key: path, values: values, file: l.file, line: m.line}
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

// grants reads the grants block: plugin name → grant items.
func (l *loader) grants(c *config, v *jsonValue) error {
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
		s := setting{key: path, file: l.file, line: m.line}
		if len(items) > 0 {
			s.values = []string{m.name + "=" + strings.Join(items, ",")}
		}
		c.grants[strings.TrimPrefix(strings.TrimSpace(m.name), host.PluginPrefix)] = s
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
		grant = addGrant(grant, g)
	}
	return items, grant, nil
}

// servers reads the mcpServers block.
func (l *loader) servers(c *config, v *jsonValue) error {
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
		c.servers[m.name] = e
	}
	return nil
}

// server reads one entry of the mcpServers block.
func (l *loader) server(name string, v *jsonValue) (mcpEntry, error) {
	path := "mcpServers." + textsafe.Name(name)
	members, err := l.object(v, path, serverKeys, ignoredServerKeys)
	if err != nil {
		return mcpEntry{}, err
	}
	e := mcpEntry{server: host.MCPServer{Name: name}}
	s := &e.server
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
		case "grant":
			_, s.Grant, err = l.grantItems("mcp:"+name, m.value, p)
		case "disabled":
			e.disabled, err = l.boolean(m.value, p)
		case "autoApprove", "alwaysAllow":
			_, err = l.strs(m.value, p)
		case "description":
			_, err = l.str(m.value, p)
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
	for _, key := range []string{"args", "env", "envFile", "cwd", "headers"} {
		if at[key] != nil && (key == "headers") == stdio {
			return e, l.errorf(at[key].line, path+"."+key, "goes with %s, not %s", other, has)
		}
	}

	if strings.ContainsRune(s.Command, '/') || strings.ContainsRune(s.Command, filepath.Separator) {
		s.Command = l.resolve(s.Command)
	}
	if s.Dir != "" {
		s.Dir = l.resolve(s.Dir)
	}
	if envFile != "" && !e.disabled {
		e.envFile = l.resolve(envFile)
		e.envFileAt = setting{key: path + ".envFile", file: l.file, line: at["envFile"].line}
	}
	return e, nil
}

// readEnvFiles reads the envFile of each server entry, whose variables
// the entry's env overrides.
func (c *config) readEnvFiles() error {
	for name, e := range c.servers {
		if e.envFile == "" {
			continue
		}
		fileEnv, err := readEnvFile(e.envFile)
		if err != nil {
			return e.envFileAt.errorf("%v", err)
		}
		maps.Copy(fileEnv, e.server.Env)
		e.server.Env = fileEnv
		e.envFile = ""
		c.servers[name] = e
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
