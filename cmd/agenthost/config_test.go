package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/sdk"
)

// writeFile writes data to dir/name, making the directories it needs.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigKeys: every key that stands for a flag names one.
func TestConfigKeys(t *testing.T) {
	t.Parallel()
	global := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	(&globals{}).register(global)
	chat := flag.NewFlagSet("agenthost chat", flag.ContinueOnError)
	chatCommand().flags(chat)
	for _, fs := range []struct {
		set  *flag.FlagSet
		keys []flagKey
	}{{global, globalKeys}, {chat, chatKeys}} {
		for _, k := range fs.keys {
			if fs.set.Lookup(k.flag) == nil {
				t.Errorf("%s: %s has no flag -%s", k.key, fs.set.Name(), k.flag)
			}
		}
	}
}

// TestConfigServers: the mcpServers blocks other clients write are read
// as they are, agenthost's own keys are read, and the keys agenthost does
// not use are ignored.
func TestConfigServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "secrets.env", "# the server's keys\n\nexport API_KEY=from-file\nQUOTED=\"a b\"\nSINGLE='c'\nLEFT=kept\n")

	cases := map[string]struct {
		json string
		want []host.MCPServer
	}{
		"Claude Desktop": {
			json: `{"mcpServers":{"filesystem":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/Users/me/Desktop"]}}}`,
			want: []host.MCPServer{{Name: "filesystem", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"}, Transport: "stdio"}},
		},
		"Claude Desktop with env": {
			json: `{
  "mcpServers": {
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    }
  }
}`,
			want: []host.MCPServer{{Name: "github", Command: "docker", Args: []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
				Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}, Transport: "stdio"}},
		},
		"Cursor remote": {
			json: `{"mcpServers":{"remote":{"url":"https://api.example.com/mcp","headers":{"Authorization":"Bearer ${env:TOKEN}"}}}}`,
			want: []host.MCPServer{{Name: "remote", URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${env:TOKEN}"}, Transport: "http"}},
		},
		"Cursor envFile": {
			json: `{"mcpServers":{"s":{"command":"server","envFile":"secrets.env","env":{"LEFT":"from-env"}}}}`,
			want: []host.MCPServer{{Name: "s", Command: "server", Transport: "stdio",
				Env: map[string]string{"API_KEY": "from-file", "QUOTED": "a b", "SINGLE": "c", "LEFT": "from-env"}}},
		},
		"Claude Code": {
			json: `{"mcpServers":{
  "api": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${API_KEY:-none}"}},
  "local": {"type": "stdio", "command": "/usr/local/bin/server", "args": [], "env": {}},
  "old": {"type": "sse", "url": "https://sse.example.com/sse"},
  "stream": {"type": "streamable-http", "url": "https://example.com/mcp"}
}}`,
			want: []host.MCPServer{
				{Name: "api", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_KEY:-none}"}, Transport: "http"},
				{Name: "local", Command: "/usr/local/bin/server", Args: []string{}, Env: map[string]string{}, Transport: "stdio"},
				{Name: "old", URL: "https://sse.example.com/sse", Transport: "sse"},
				{Name: "stream", URL: "https://example.com/mcp", Transport: "http"},
			},
		},
		"agenthost's keys; others' ignored": {
			json: `{"mcpServers":{
  "b": {"command": "b", "prefix": "gh_1-x", "timeout": 2.5, "grant": ["network", "read:data", "write:/abs"],
        "autoApprove": ["x"], "alwaysAllow": [], "description": "a server"},
  "a": {"url": "https://a.example.com", "timeout": 60, "disabled": false},
  "c": {"command": "c", "disabled": true, "envFile": "missing.env"}
}}`,
			want: []host.MCPServer{
				{Name: "a", URL: "https://a.example.com", Transport: "http", Timeout: time.Minute},
				{Name: "b", Command: "b", Transport: "stdio", Prefix: "gh_1-x", Timeout: 2500 * time.Millisecond,
					Grant: host.Grant{Permissions: sdk.Permissions{Network: true, Read: []string{filepath.Join(dir, "data")}, Write: []string{"/abs"}}}},
			},
		},
		"relative paths": {
			json: `{"mcpServers":{
  "bare": {"command": "uvx"},
  "dot": {"command": "./bin/server", "cwd": "work"},
  "sub": {"command": "bin/server", "cwd": "/abs"},
  "var": {"command": "${HOME}/bin/server", "cwd": "${PROJECT}"}
}}`,
			want: []host.MCPServer{
				{Name: "bare", Command: "uvx", Transport: "stdio"},
				{Name: "dot", Command: filepath.Join(dir, "bin/server"), Dir: filepath.Join(dir, "work"), Transport: "stdio"},
				{Name: "sub", Command: filepath.Join(dir, "bin/server"), Dir: "/abs", Transport: "stdio"},
				{Name: "var", Command: "${HOME}/bin/server", Dir: "${PROJECT}", Transport: "stdio"},
			},
		},
		"no servers": {json: `{}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := parseAndRead(filepath.Join(dir, "agenthost.json"), []byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.mcpServers(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("servers:\n%+v\nwant:\n%+v", got, tc.want)
			}
		})
	}
}

// TestConfigFlags: the keys that stand for flags, with their paths made
// absolute against the file's directory.
func TestConfigFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseConfig(filepath.Join(dir, "agenthost.json"), []byte(`{
  "plugins": "plugins",
  "roots": ["src", "/"],
  "enable": ["danger"],
  "disable": [],
  "pluginEnv": ["GOPATH"],
  "logLevel": "debug",
  "lock": "~/agenthost.lock",
  "eager": true,
  "cacheDir": "-",
  "idleTimeout": "0",
  "allowInsecurePlugins": false,
  "sandbox": "require",
  "grants": {"agenthost-plugin-fs": ["read:docs", "network"], "mcp:github": ["asked"], "none": []},
  "chat": {"provider": "ollama", "model": "qwen3", "baseURL": "http://gpu:11434/v1", "system": "be brief", "sessionFile": "session.md", "maxTurns": 5, "maxTokens": 0}
}`))
	if err != nil {
		t.Fatal(err)
	}
	values := func(m map[string]setting) map[string][]string {
		out := map[string][]string{}
		for k, s := range m {
			out[k] = s.values
		}
		return out
	}
	wantFlags := map[string][]string{
		"plugins": {filepath.Join(dir, "plugins")}, "root": {filepath.Join(dir, "src"), "/"},
		"enable": {"danger"}, "disable": {}, "plugin-env": {"GOPATH"}, "log-level": {"debug"},
		"lock": {filepath.Join(home, "agenthost.lock")}, "eager": {"true"}, "cache-dir": {"-"},
		"idle-timeout": {"0"}, "allow-insecure-plugins": {"false"}, "sandbox": {"require"},
	}
	if got := values(c.flags); !reflect.DeepEqual(got, wantFlags) {
		t.Errorf("flags:\n%v\nwant:\n%v", got, wantFlags)
	}
	wantGrants := map[string][]string{
		"fs":         {"agenthost-plugin-fs=read:" + filepath.Join(dir, "docs") + ",network"},
		"mcp:github": {"mcp:github=asked"},
		"none":       nil,
	}
	if got := values(c.grants); !reflect.DeepEqual(got, wantGrants) {
		t.Errorf("grants:\n%v\nwant:\n%v", got, wantGrants)
	}
	wantChat := map[string][]string{
		"provider": {"ollama"}, "model": {"qwen3"}, "base-url": {"http://gpu:11434/v1"}, "system": {"be brief"},
		"session-file": {filepath.Join(dir, "session.md")}, "max-turns": {"5"}, "max-tokens": {"0"},
	}
	if got := values(c.chat); !reflect.DeepEqual(got, wantChat) {
		t.Errorf("chat:\n%v\nwant:\n%v", got, wantChat)
	}
}

// TestConfigErrors: every bad file is refused with the line where it goes
// wrong and what is wrong there.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "bad.env", "A=1\nnot a pair\n")
	cases := map[string]struct{ json, want string }{
		"unknown server key": {`{
  "mcpServers": {
    "github": {
      "comand": "npx"
    }
  }
}`, `agenthost.json:4: mcpServers.github: unknown key "comand" (want command, args, env, envFile, cwd, url, headers, type, prefix, timeout, grant, disabled)`},
		"unknown top-level key": {`{"plugin": "x"}`, `agenthost.json:1: unknown key "plugin" (want plugins, roots, enable, disable, pluginEnv, logLevel, lock, eager, cacheDir, idleTimeout, allowInsecurePlugins, sandbox, devProfile, profileRead, profileCaches, secrets, grants, chat, mcpServers)`},
		"unknown chat key":      {"{\n\"chat\": {\"temperature\": 1}}", `agenthost.json:2: chat: unknown key "temperature" (want provider, model, baseURL, system, sessionFile, maxTurns, maxTokens)`},
		"roots not an array":    {"{\n\n  \"roots\": 3}", `agenthost.json:3: roots: want an array of strings, got a number`},
		"root not a string":     {"{\"roots\": [\n\"a\",\n null]}", `agenthost.json:3: roots[1]: want a string, got null`},
		"eager not a boolean":   {`{"eager": "yes"}`, `agenthost.json:1: eager: want true or false, got a string`},
		"args not strings":      {`{"mcpServers": {"s": {"command": "x", "args": ["a", 1]}}}`, `agenthost.json:1: mcpServers.s.args[1]: want a string, got a number`},
		"env not strings":       {"{\"mcpServers\": {\"s\": {\"command\": \"x\",\n \"env\": {\"A\": true}}}}", `agenthost.json:2: mcpServers.s.env.A: want a string, got a boolean`},
		"headers not an object": {`{"mcpServers": {"s": {"url": "x", "headers": ["a"]}}}`, `agenthost.json:1: mcpServers.s.headers: want an object of strings, got an array`},
		"server not an object":  {`{"mcpServers": {"s": "npx"}}`, `agenthost.json:1: mcpServers.s: want an object, got a string`},
		"servers not an object": {`{"mcpServers": []}`, `agenthost.json:1: mcpServers: want an object, got an array`},
		"chat not an object":    {`{"chat": "openai"}`, `agenthost.json:1: chat: want an object, got a string`},
		"maxTurns not whole":    {`{"chat": {"maxTurns": 2.5}}`, `agenthost.json:1: chat.maxTurns: want a whole number, got 2.5`},
		"maxTurns zero":         {`{"chat": {"maxTurns": 0}}`, `agenthost.json:1: chat.maxTurns: want at least 1, got 0`},
		"unknown provider":      {`{"chat": {"provider": "acme"}}`, `agenthost.json:1: chat.provider: unknown provider "acme" (want openai, anthropic, openrouter or ollama)`},
		"top level not object":  {`["mcpServers"]`, `agenthost.json:1: want an object at the top, got an array`},
		"trailing comma": {`{
  "plugins": "p",
  "roots": [],
}`, `agenthost.json:4: syntax error: invalid character '}' looking for beginning of object key string`},
		"bad literal":          {"{\n\"eager\": tru\n}", `agenthost.json:2: syntax error: invalid character '\n' in literal true (expecting 'e')`},
		"comment":              {"{\n// no comments\n}", `agenthost.json:2: syntax error: invalid character '/' looking for beginning of object key string`},
		"second value":         {"{}\n{}", `agenthost.json:2: syntax error: invalid character '{' after top-level value`},
		"empty":                {"", `agenthost.json:1: syntax error: unexpected end of JSON input`},
		"truncated":            {"{\"mcpServers\": {\n", `agenthost.json:1: syntax error: unexpected end of JSON input`},
		"duplicate key":        {"{\"mcpServers\": {\n \"a\": {\"url\": \"x\"},\n \"a\": {\"url\": \"y\"}}}", `agenthost.json:3: duplicate key "a"`},
		"duplicate nested":     {`{"mcpServers": {"a": {"url": "x", "url": "y"}}}`, `agenthost.json:1: duplicate key "url"`},
		"command and url":      {"{\"mcpServers\": {\n\"s\": {\"command\": \"x\", \"url\": \"y\"}}}", `agenthost.json:2: mcpServers.s: both command and url (want command for a stdio server, url for an HTTP one)`},
		"neither":              {`{"mcpServers": {"s": {"args": ["x"]}}}`, `agenthost.json:1: mcpServers.s: neither command nor url (want command for a stdio server, url for an HTTP one)`},
		"empty command":        {`{"mcpServers": {"s": {"command": ""}}}`, `agenthost.json:1: mcpServers.s.command: empty`},
		"type disagrees":       {`{"mcpServers": {"s": {"type": "stdio", "url": "y"}}}`, `agenthost.json:1: mcpServers.s.type: "stdio" needs command, not url`},
		"http with command":    {`{"mcpServers": {"s": {"type": "http", "command": "y"}}}`, `agenthost.json:1: mcpServers.s.type: "http" needs url, not command`},
		"unknown type":         {`{"mcpServers": {"s": {"type": "ws", "url": "y"}}}`, `agenthost.json:1: mcpServers.s.type: unknown type "ws" (want stdio, http, streamable-http or sse)`},
		"args with url":        {`{"mcpServers": {"s": {"url": "y", "args": []}}}`, `agenthost.json:1: mcpServers.s.args: goes with command, not url`},
		"headers with command": {`{"mcpServers": {"s": {"command": "y", "headers": {}}}}`, `agenthost.json:1: mcpServers.s.headers: goes with url, not command`},
		"bad prefix":           {`{"mcpServers": {"s": {"url": "y", "prefix": "gh.com"}}}`, `agenthost.json:1: mcpServers.s.prefix: "gh.com": want 1 to 40 letters, digits, _ or -`},
		"long prefix":          {`{"mcpServers": {"s": {"url": "y", "prefix": "` + strings.Repeat("a", 41) + `"}}}`, `agenthost.json:1: mcpServers.s.prefix: "` + strings.Repeat("a", 41) + `": want 1 to 40 letters, digits, _ or -`},
		"zero timeout":         {`{"mcpServers": {"s": {"url": "y", "timeout": 0}}}`, `agenthost.json:1: mcpServers.s.timeout: want a number of seconds above 0, got 0`},
		"string timeout":       {`{"mcpServers": {"s": {"url": "y", "timeout": "5s"}}}`, `agenthost.json:1: mcpServers.s.timeout: want a number of seconds, got a string`},
		"huge timeout":         {`{"mcpServers": {"s": {"url": "y", "timeout": 1e300}}}`, `agenthost.json:1: mcpServers.s.timeout: want a number of seconds above 0, got 1e300`},
		"bad server grant":     {"{\"mcpServers\": {\"s\": {\"url\": \"y\", \"grant\": [\n\"network\",\n\"net\"]}}}", `agenthost.json:3: mcpServers.s.grant: grant "mcp:s=net": unknown item "net" (want network, exec, session, unix-sockets, asked, read:PATH, write:PATH, memory:SIZE, processes:N or file-size:SIZE)`},
		"bad grant":            {`{"grants": {"fs": ["read:"]}}`, `agenthost.json:1: grants.fs: grant "fs=read:": unknown item "read:" (want network, exec, session, unix-sockets, asked, read:PATH, write:PATH, memory:SIZE, processes:N or file-size:SIZE)`},
		"grants not array":     {`{"grants": {"fs": "network"}}`, `agenthost.json:1: grants.fs: want an array of strings, got a string`},
		"bad env name":         {`{"mcpServers": {"s": {"command": "x", "env": {"A=B": "c"}}}}`, `agenthost.json:1: mcpServers.s.env: "A=B" is not a variable name`},
		"server name":          {`{"mcpServers": {"": {"command": "x"}}}`, `agenthost.json:1: mcpServers: server name "": want a name without "="`},
		"missing envFile":      {"{\"mcpServers\": {\"s\": {\"command\": \"x\",\n\"envFile\": \".env\"}}}", `agenthost.json:2: mcpServers.s.envFile: open ` + filepath.Join(dir, ".env") + `: no such file or directory`},
		"bad envFile":          {`{"mcpServers": {"s": {"command": "x", "envFile": "bad.env"}}}`, `agenthost.json:1: mcpServers.s.envFile: ` + filepath.Join(dir, "bad.env") + `:2: want KEY=VALUE`},
		"missing root":         {`{"roots": ["nope"]}`, `agenthost.json:1: roots: ` + filepath.Join(dir, "nope") + `: not a directory`},
		"bad sandbox":          {`{"sandbox": "strict"}`, `agenthost.json:1: sandbox: unknown sandbox mode "strict" (want auto, require or off)`},
		"bad log level":        {`{"logLevel": "loud"}`, `agenthost.json:1: logLevel: unknown log level "loud" (want trace, debug, info, warn or error)`},
		"bad idle timeout":     {`{"idleTimeout": 300}`, `agenthost.json:1: idleTimeout: want a string, got a number`},
		"bad duration":         {`{"idleTimeout": "5"}`, `agenthost.json:1: idleTimeout: want a duration such as "5m" or "0" (never), got "5"`},
		"quoted name":          {`{"mcpServers": {"a\u001b[2Jb": {"url": "x", "args": []}}}`, `agenthost.json:1: mcpServers."a\x1b[2Jb".args: goes with command, not url`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parseAndRead(filepath.Join(dir, "agenthost.json"), []byte(tc.json))
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)); got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestLoadConfig: where the configuration is read from, and how the
// project's file lays over the user's.
func TestLoadConfig(t *testing.T) {
	user, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", user)
	t.Chdir(project)
	userFile := writeFile(t, user, "agenthost/config.json", `{
  "plugins": "plugins",
  "lock": "my.lock",
  "enable": ["a"],
  "grants": {"fs": ["network"], "session": ["session"]},
  "chat": {"model": "user-model", "system": "user prompt"},
  "mcpServers": {
    "both": {"command": "user-server"},
    "user": {"command": "./user-server"},
    "off": {"url": "https://off.example.com"}
  }
}`)
	writeFile(t, project, "agenthost.json", `{
  "plugins": "tools",
  "enable": [],
  "grants": {"agenthost-plugin-fs": ["exec"]},
  "chat": {"model": "project-model"},
  "mcpServers": {
    "both": {"url": "https://project.example.com"},
    "project": {"command": "project-server"},
    "off": {"url": "https://off.example.com", "disabled": true}
  }
}`)

	// A project's file is read once it is trusted, as it is now.
	if _, err := loadConfig("", false); err == nil || !strings.Contains(err.Error(), "agenthost.json: this directory's configuration is not trusted") {
		t.Fatalf("an untrusted project file: %v", err)
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"trust"}, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "trusted " + filepath.Join(project, "agenthost.json") + " as it is now"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("agenthost trust printed %q", out.String())
	}
	c, err := loadConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	userDir := filepath.Dir(userFile)
	for flag, want := range map[string][]string{
		"plugins": {filepath.Join(project, "tools")}, // the project's wins
		"lock":    {filepath.Join(userDir, "my.lock")},
		"enable":  {},
	} {
		if got := c.flags[flag].values; !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	if got, want := c.grants["fs"].values, []string{"agenthost-plugin-fs=exec"}; !slices.Equal(got, want) {
		t.Errorf("fs grants = %q, want %q", got, want)
	}
	if got := c.grants["session"].values; len(got) != 1 {
		t.Errorf("the user's session grant is lost: %q", got)
	}
	if c.chat["model"].values[0] != "project-model" || c.chat["system"].values[0] != "user prompt" {
		t.Errorf("chat: %v", c.chat)
	}
	want := []host.MCPServer{
		{Name: "both", URL: "https://project.example.com", Transport: "http"},
		{Name: "project", Command: "project-server", Transport: "stdio"},
		{Name: "user", Command: filepath.Join(userDir, "user-server"), Transport: "stdio"},
	}
	if got := c.mcpServers(); !reflect.DeepEqual(got, want) {
		t.Errorf("servers:\n%+v\nwant:\n%+v", got, want)
	}

	// --config FILE reads that file alone; --config - reads none.
	other := writeFile(t, t.TempDir(), "other.json", `{"lock": "other.lock"}`)
	if c, err = loadConfig(other, true); err != nil {
		t.Fatal(err)
	}
	if len(c.flags) != 1 || len(c.servers) != 0 || c.flags["lock"].values[0] != filepath.Join(filepath.Dir(other), "other.lock") {
		t.Errorf("--config %s: %+v", other, c)
	}
	if c, err = loadConfig("-", true); err != nil || len(c.flags)+len(c.chat)+len(c.grants)+len(c.servers) != 0 {
		t.Errorf("--config -: %+v, %v", c, err)
	}
	// A file that does not exist is an error when named only.
	if _, err := loadConfig(filepath.Join(project, "nope.json"), true); err == nil {
		t.Error("--config with a missing file: no error")
	}
	if err := os.Remove(userFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(project, "agenthost.json")); err != nil {
		t.Fatal(err)
	}
	if c, err = loadConfig("", false); err != nil || len(c.flags) != 0 {
		t.Errorf("no files: %+v, %v", c, err)
	}
}

// TestConfigCommandLine: agenthost reads the configuration, and a flag
// given on the command line wins over it.
func TestConfigCommandLine(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	project := t.TempDir()
	t.Chdir(project)
	fromFile, fromFlag, fromEnv := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, project, "agenthost.json", `{"plugins": "`+fromFile+`", "lock": "project.lock"}`)
	if r := runCLI(t, "", "trust"); r.code != 0 {
		t.Fatalf("agenthost trust: %s", r.stderr)
	}

	// plugins lock starts no plugin and says which directory and lock
	// file it used.
	cases := map[string]struct {
		env  string
		args []string
		want string
	}{
		"file":                        {args: []string{"plugins", "lock"}, want: "wrote " + filepath.Join(project, "project.lock")},
		"flag over file":              {args: []string{"--lock", "flag.lock", "plugins", "lock"}, want: "wrote flag.lock"},
		"flag after the command":      {args: []string{"plugins", "--lock", "flag.lock", "lock"}, want: "wrote flag.lock"},
		"file over AGENTHOST_PLUGINS": {env: fromEnv, args: []string{"plugins", "lock", "--lock", ""}, want: "wrote " + filepath.Join(fromFile, "agenthost.lock")},
		"--plugins over file":         {args: []string{"--plugins", fromFlag, "plugins", "lock", "--lock", ""}, want: "wrote " + filepath.Join(fromFlag, "agenthost.lock")},
		"--config -":                  {env: fromEnv, args: []string{"--config", "-", "plugins", "lock"}, want: "wrote " + filepath.Join(fromEnv, "agenthost.lock")},
		"--config after the command":  {env: fromEnv, args: []string{"plugins", "--config", "-", "lock"}, want: "wrote " + filepath.Join(fromEnv, "agenthost.lock")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("AGENTHOST_PLUGINS", tc.env)
			r := runCLI(t, "", tc.args...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, tc.want+":") {
				t.Errorf("exit status %d, stdout %q, want it to start %q\nstderr: %s", r.code, r.stdout, tc.want, r.stderr)
			}
		})
	}

	writeFile(t, project, "agenthost.json", "{\n  \"mcpServers\": {\"github\": {\"comand\": \"npx\"}}\n}")
	r := runCLI(t, "", "plugins", "lock")
	want := `agenthost: agenthost.json:2: mcpServers.github: unknown key "comand" (want command, args, env, envFile, cwd, url, headers, type, prefix, timeout, grant, disabled)` + "\n"
	if r.code != 2 || r.stderr != want {
		t.Errorf("a bad file: exit status %d, stderr %q, want 2 and %q", r.code, r.stderr, want)
	}
	if r := runCLI(t, "", "--config", "-", "tools", "--help"); r.code != 0 {
		t.Errorf("--config - leaves the bad file aside: exit status %d, stderr %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "--config", "nope.json", "plugins", "lock")
	if r.code != 2 || !strings.Contains(r.stderr, "--config: open nope.json: no such file or directory") {
		t.Errorf("--config with a missing file: exit status %d, stderr %q", r.code, r.stderr)
	}
}

// TestConfigTools: the file's enable and disable lists, then the flags',
// and the file's grants with the flags'.
func TestConfigTools(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	dir := pluginDir(t)
	cfg := writeFile(t, t.TempDir(), "agenthost.json", `{
  "plugins": "`+dir+`",
  "enable": ["danger"],
  "disable": ["echo", "fail"],
  "grants": {"test": ["network"]}
}`)
	status := func(t *testing.T, args ...string) map[string]bool {
		t.Helper()
		r := runCLI(t, "", append([]string{"--config", cfg}, args...)...)
		if r.code != 0 {
			t.Fatalf("exit status %d\nstderr: %s", r.code, r.stderr)
		}
		var tools []toolJSON
		if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
			t.Fatal(err)
		}
		enabled := map[string]bool{}
		for _, tl := range tools {
			enabled[tl.Name] = tl.Enabled
		}
		return enabled
	}
	if got := status(t, "tools", "--json"); !got["danger"] || got["echo"] || got["fail"] || !got["read_file"] {
		t.Errorf("from the file: %v", got)
	}
	if got := status(t, "--enable", "echo", "tools", "--json", "--disable", "danger"); got["danger"] || !got["echo"] || got["fail"] {
		t.Errorf("the flags over the file: %v", got)
	}

	r := runCLI(t, "", "--config", cfg, "--grant", "test=exec", "plugins")
	if !strings.Contains(r.stdout, "granted: roots read-write, network, exec;") {
		t.Errorf("the file's grant and the flag's do not add up:\n%s", r.stdout)
	}

	bad := writeFile(t, t.TempDir(), "agenthost.json", "{\"plugins\": \""+dir+"\",\n \"enable\": [\"nope\"]}")
	r = runCLI(t, "", "--config", bad, "tools")
	if want := "agenthost: " + bad + ":2: enable: nope: tool not found: nope\n"; r.code != 2 || r.stderr != want {
		t.Errorf("exit status %d, stderr %q, want 2 and %q", r.code, r.stderr, want)
	}
}

// TestConfigChat: the chat block, under chat's flags.
func TestConfigChat(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	rp, url := newReplay(t,
		func(map[string]any) []string { return textReply("one") },
		func(map[string]any) []string { return textReply("two") })
	cfg := writeFile(t, t.TempDir(), "agenthost.json", `{
  "plugins": "`+t.TempDir()+`",
  "chat": {"provider": "openai", "baseURL": "`+url+`", "model": "file-model", "maxTokens": 7, "system": "from the file"}
}`)
	for _, args := range [][]string{{"chat", "-m", "hi"}, {"chat", "--model", "flag-model", "--max-tokens", "9", "-m", "hi"}} {
		if r := runCLI(t, "", append([]string{"--config", cfg}, args...)...); r.code != 0 {
			t.Fatalf("%v: exit status %d\nstderr: %s", args, r.code, r.stderr)
		}
	}
	reqs := rp.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, want := range []struct {
		model  string
		tokens float64
	}{{"file-model", 7}, {"flag-model", 9}} {
		if reqs[i]["model"] != want.model || reqs[i]["max_tokens"] != want.tokens {
			t.Errorf("request %d: model %v, max_tokens %v, want %s and %v", i, reqs[i]["model"], reqs[i]["max_tokens"], want.model, want.tokens)
		}
		if msgs, _ := json.Marshal(reqs[i]["messages"]); !strings.Contains(string(msgs), "from the file") {
			t.Errorf("request %d: the file's system prompt is missing: %s", i, msgs)
		}
	}
}

// TestProjectConfigNeedsTrust: a project's file is read only as it was
// when trusted; the user's, and a file named with --config, need no trust.
func TestProjectConfigNeedsTrust(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	project := t.TempDir()
	t.Chdir(project)
	writeFile(t, project, "agenthost.json", `{"lock": "a.lock"}`)
	if err := run(t.Context(), []string{"trust"}, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig("", false); err != nil {
		t.Fatalf("a trusted file: %v", err)
	}
	// A change, however small, needs trust again.
	writeFile(t, project, "agenthost.json", `{"lock": "b.lock"}`)
	_, err := loadConfig("", false)
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("a changed file: %v", err)
	}
	if err := run(t.Context(), []string{"tools"}, nil, io.Discard, io.Discard); err == nil || exitCode(err, io.Discard) != 2 {
		t.Errorf("a command with an untrusted project file: %v", err)
	}
	if c, err := loadConfig("agenthost.json", true); err != nil || c.flags["lock"].values[0] != filepath.Join(project, "b.lock") {
		t.Errorf("--config agenthost.json: %v", err)
	}
	// A file that would be refused is not trusted.
	writeFile(t, project, "agenthost.json", `{"lok": 1}`)
	if err := run(t.Context(), []string{"trust"}, nil, io.Discard, io.Discard); err == nil {
		t.Error("agenthost trust took a bad file")
	}
}

// parseAndRead parses a configuration file and reads its envFiles, as
// loadConfig does for a trusted file.
func parseAndRead(name string, data []byte) (*config, error) {
	c, err := parseConfig(name, data)
	if err != nil {
		return nil, err
	}
	return c, c.readEnvFiles()
}
