package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/sdk"
)

// TestConfigServers: the mcpServers blocks other clients write are read
// as they are, agenthost's own keys are read, and the keys agenthost does
// not use are ignored.
func TestConfigServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugintest.WriteFile(t, dir, "secrets.env", "# the server's keys\n\nexport API_KEY=from-file\nQUOTED=\"a b\"\nSINGLE='c'\nLEFT=kept\n")

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
		"tool filters": {
			json: `{"mcpServers":{
  "gh": {"command": "gh", "tools": ["list_*"], "includeTools": ["get_me"], "disabledTools": ["delete_*"], "excludeTools": ["x"], "defer": true},
  "fs": {"command": "fs", "enabledTools": ["read_*"], "defer": false}
}}`,
			want: []host.MCPServer{
				{Name: "fs", Command: "fs", Transport: "stdio", Tools: []string{"read_*"}, Defer: host.DeferNever},
				{Name: "gh", Command: "gh", Transport: "stdio", Tools: []string{"list_*", "get_me"}, DisabledTools: []string{"delete_*", "x"}, Defer: host.DeferAlways},
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
			if got := c.MCPServers(); !reflect.DeepEqual(got, tc.want) {
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
	c, err := Parse(filepath.Join(dir, "agenthost.json"), []byte(`{
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
	values := func(m map[string]Setting) map[string][]string {
		out := map[string][]string{}
		for k, s := range m {
			out[k] = s.Values
		}
		return out
	}
	wantFlags := map[string][]string{
		"plugins": {filepath.Join(dir, "plugins")}, "root": {filepath.Join(dir, "src"), "/"},
		"enable": {"danger"}, "disable": {}, "plugin-env": {"GOPATH"}, "log-level": {"debug"},
		"lock": {filepath.Join(home, "agenthost.lock")}, "eager": {"true"}, "cache-dir": {"-"},
		"idle-timeout": {"0"}, "allow-insecure-plugins": {"false"}, "sandbox": {"require"},
	}
	if got := values(c.Flags); !reflect.DeepEqual(got, wantFlags) {
		t.Errorf("flags:\n%v\nwant:\n%v", got, wantFlags)
	}
	wantGrants := map[string][]string{
		"fs":         {"agenthost-plugin-fs=read:" + filepath.Join(dir, "docs") + ",network"},
		"mcp:github": {"mcp:github=asked"},
		"none":       nil,
	}
	if got := values(c.Grants); !reflect.DeepEqual(got, wantGrants) {
		t.Errorf("grants:\n%v\nwant:\n%v", got, wantGrants)
	}
	wantChat := map[string][]string{
		"provider": {"ollama"}, "model": {"qwen3"}, "base-url": {"http://gpu:11434/v1"}, "system": {"be brief"},
		"session-file": {filepath.Join(dir, "session.md")}, "max-turns": {"5"}, "max-tokens": {"0"},
	}
	if got := values(c.Chat); !reflect.DeepEqual(got, wantChat) {
		t.Errorf("chat:\n%v\nwant:\n%v", got, wantChat)
	}
}

// TestConfigErrors: every bad file is refused with the line where it goes
// wrong and what is wrong there.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugintest.WriteFile(t, dir, "bad.env", "A=1\nnot a pair\n")
	cases := map[string]struct{ json, want string }{
		"unknown server key": {`{
  "mcpServers": {
    "github": {
      "comand": "npx"
    }
  }
}`, `agenthost.json:4: mcpServers.github: unknown key "comand" (want command, args, env, envFile, cwd, url, headers, type, prefix, timeout, startupTimeout, grant, disabled, tools, disabledTools, defer, oauth)`},
		"unknown top-level key": {`{"plugin": "x"}`, `agenthost.json:1: unknown key "plugin" (want plugins, roots, enable, disable, deferTools, pluginEnv, logLevel, lock, eager, cacheDir, idleTimeout, allowInsecurePlugins, sandbox, devProfile, profileRead, profileCaches, secrets, approval, audit, grants, chat, mcpServers, permissions)`},
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
		"bad tools glob":       {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"tools\": [\"ok\",\n\"[a\"]}}}", `agenthost.json:2: mcpServers.s.tools: "[a" is not a tool name or a glob over tool names`},
		"empty disabledTools":  {`{"mcpServers": {"s": {"command": "x", "excludeTools": [""]}}}`, `agenthost.json:1: mcpServers.s.excludeTools: "" is not a tool name or a glob over tool names`},
		"defer not a boolean":  {`{"mcpServers": {"s": {"command": "x", "defer": "auto"}}}`, `agenthost.json:1: mcpServers.s.defer: want true or false, got a string`},
		"bad deferTools":       {`{"deferTools": "lots"}`, `agenthost.json:1: deferTools: "lots": want a number of tokens (0: defer whatever their size), auto or off`},
		"deferTools an array":  {`{"deferTools": [1]}`, `agenthost.json:1: deferTools: want a number of tokens, true or false, got an array`},
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

// parseAndRead parses a configuration file and reads its envFiles, as
// loadConfig does for a trusted file.
func parseAndRead(name string, data []byte) (*File, error) {
	c, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	return c, c.readEnvFiles()
}

// TestOptions: the keys a host needs become host.Options as the CLI reads
// them when no flag overrides the file.
func TestOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Parse(filepath.Join(dir, "agenthost.json"), []byte(`{
  "plugins": "bin/plugins",
  "roots": ["src"],
  "lock": "a.lock",
  "eager": true,
  "idleTimeout": "0",
  "sandbox": "require",
  "pluginEnv": ["GOPATH"],
  "devProfile": "off",
  "deferTools": 20000,
  "grants": {"agenthost-plugin-fs": ["read:docs", "network"], "bash": ["exec"]},
  "mcpServers": {"m": {"command": "m-server", "grant": ["network"]}}
}`))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	if c.PluginsDir() != filepath.Join(dir, "bin/plugins") {
		t.Errorf("PluginsDir = %q", c.PluginsDir())
	}
	want := &host.Options{
		Roots:       []string{filepath.Join(dir, "src")},
		LockFile:    filepath.Join(dir, "a.lock"),
		Eager:       true,
		IdleTimeout: -1,
		Sandbox:     host.SandboxRequire,
		PluginEnv:   []string{"GOPATH"},
		Profile:     host.DevProfile{Off: true},
		DeferTokens: 20000,
		Grants: map[string]host.Grant{
			"bash": {Permissions: sdk.Permissions{Exec: true}},
			"fs":   {Permissions: sdk.Permissions{Read: []string{filepath.Join(dir, "docs")}, Network: true}},
		},
		MCPServers: []host.MCPServer{{Name: "m", Command: "m-server", Transport: "stdio", Grant: host.Grant{Permissions: sdk.Permissions{Network: true}}}},
	}
	if !reflect.DeepEqual(opts, want) {
		t.Errorf("Options:\n%+v\nwant:\n%+v", opts, want)
	}
	if opts, err := New().Options(); err != nil || opts.Sandbox != host.SandboxAuto || opts.IdleTimeout != 0 || opts.DeferTokens != 0 {
		t.Errorf("an empty file's options: %+v, %v", opts, err)
	}
	for value, want := range map[string]int{"false": -1, `"off"`: -1, "true": 0, `"auto"`: 0, "0": 1, `"3000"`: 3000} {
		c, err := Parse("agenthost.json", []byte(`{"deferTools": `+value+`}`))
		if err != nil {
			t.Fatalf("deferTools %s: %v", value, err)
		}
		if opts, err := c.Options(); err != nil || opts.DeferTokens != want {
			t.Errorf("deferTools %s: DeferTokens %d (%v), want %d", value, opts.DeferTokens, err, want)
		}
	}
}

// TestParseGrantsAddsUp: grants to one plugin add up, all of what each
// grants kept: unix sockets and limits too.
func TestParseGrantsAddsUp(t *testing.T) {
	t.Parallel()
	got, err := ParseGrants([]string{"fs=read:/a,unix-sockets", "agenthost-plugin-fs=memory:1GiB,processes:10", "fs=network"})
	if err != nil {
		t.Fatal(err)
	}
	_, limits, err := host.ParseGrant("fs=memory:1GiB,processes:10")
	if err != nil {
		t.Fatal(err)
	}
	g := got["fs"]
	if !g.UnixSockets || !g.Network || !slices.Equal(g.Read, []string{"/a"}) || g.Limits != limits.Limits {
		t.Errorf("fs is granted %+v (limits %+v), want read:/a, unix-sockets, network and the limits %+v", g, g.Limits, limits.Limits)
	}
}
