package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestConfigKeys: every key that stands for a flag names one.
func TestConfigKeys(t *testing.T) {
	t.Parallel()
	global := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	(&globals{}).register(global)
	chat := flag.NewFlagSet("agenthost chat", flag.ContinueOnError)
	chatCommand().flags(chat)
	for _, fs := range []struct {
		set  *flag.FlagSet
		keys []config.Key
	}{{global, config.GlobalKeys()}, {chat, config.ChatKeys()}} {
		for _, k := range fs.keys {
			if fs.set.Lookup(k.Flag) == nil {
				t.Errorf("%s: %s has no flag -%s", k.Name, fs.set.Name(), k.Flag)
			}
		}
	}
	// The chat block's provider names what chat knows.
	if got := slices.Sorted(maps.Keys(providerDefaults)); !slices.Equal(got, slices.Sorted(slices.Values(config.Providers))) {
		t.Errorf("chat knows the providers %v, the configuration file %v", got, config.Providers)
	}
}

// TestLoadConfig: where the configuration is read from, and how the
// project's file lays over the user's.
func TestLoadConfig(t *testing.T) {
	user, project := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", user)
	t.Chdir(project)
	userFile := plugintest.WriteFile(t, user, "agenthost/config.json", `{
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
	plugintest.WriteFile(t, project, "agenthost.json", `{
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
		if got := c.Flags[flag].Values; !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	if got, want := c.Grants["fs"].Values, []string{"agenthost-plugin-fs=exec"}; !slices.Equal(got, want) {
		t.Errorf("fs grants = %q, want %q", got, want)
	}
	if got := c.Grants["session"].Values; len(got) != 1 {
		t.Errorf("the user's session grant is lost: %q", got)
	}
	if c.Chat["model"].Values[0] != "project-model" || c.Chat["system"].Values[0] != "user prompt" {
		t.Errorf("chat: %v", c.Chat)
	}
	want := []host.MCPServer{
		{Name: "both", URL: "https://project.example.com", Transport: "http"},
		{Name: "project", Command: "project-server", Transport: "stdio"},
		{Name: "user", Command: filepath.Join(userDir, "user-server"), Transport: "stdio"},
	}
	if got := c.MCPServers(); !reflect.DeepEqual(got, want) {
		t.Errorf("servers:\n%+v\nwant:\n%+v", got, want)
	}

	// --config FILE reads that file alone; --config - reads none.
	other := plugintest.WriteFile(t, t.TempDir(), "other.json", `{"lock": "other.lock"}`)
	if c, err = loadConfig(other, true); err != nil {
		t.Fatal(err)
	}
	if len(c.Flags) != 1 || len(c.Servers) != 0 || c.Flags["lock"].Values[0] != filepath.Join(filepath.Dir(other), "other.lock") {
		t.Errorf("--config %s: %+v", other, c)
	}
	if c, err = loadConfig("-", true); err != nil || len(c.Flags)+len(c.Chat)+len(c.Grants)+len(c.Servers) != 0 {
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
	if c, err = loadConfig("", false); err != nil || len(c.Flags) != 0 {
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
	plugintest.WriteFile(t, project, "agenthost.json", `{"plugins": "`+fromFile+`", "lock": "project.lock"}`)
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

	plugintest.WriteFile(t, project, "agenthost.json", "{\n  \"mcpServers\": {\"github\": {\"comand\": \"npx\"}}\n}")
	r := runCLI(t, "", "plugins", "lock")
	want := `agenthost: agenthost.json:2: mcpServers.github: unknown key "comand" (want command, args, env, envFile, cwd, url, headers, type, prefix, timeout, startupTimeout, grant, disabled, tools, disabledTools, defer, oauth)` + "\n"
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
	cfg := plugintest.WriteFile(t, t.TempDir(), "agenthost.json", `{
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

	bad := plugintest.WriteFile(t, t.TempDir(), "agenthost.json", "{\"plugins\": \""+dir+"\",\n \"enable\": [\"nope\"]}")
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
	cfg := plugintest.WriteFile(t, t.TempDir(), "agenthost.json", `{
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
	plugintest.WriteFile(t, project, "agenthost.json", `{"lock": "a.lock"}`)
	if err := run(t.Context(), []string{"trust"}, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig("", false); err != nil {
		t.Fatalf("a trusted file: %v", err)
	}
	// A change, however small, needs trust again.
	plugintest.WriteFile(t, project, "agenthost.json", `{"lock": "b.lock"}`)
	_, err := loadConfig("", false)
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "not trusted") {
		t.Fatalf("a changed file: %v", err)
	}
	if err := run(t.Context(), []string{"tools"}, nil, io.Discard, io.Discard); err == nil || exitCode(err, io.Discard) != 2 {
		t.Errorf("a command with an untrusted project file: %v", err)
	}
	if c, err := loadConfig("agenthost.json", true); err != nil || c.Flags["lock"].Values[0] != filepath.Join(project, "b.lock") {
		t.Errorf("--config agenthost.json: %v", err)
	}
	// A file that would be refused is not trusted.
	plugintest.WriteFile(t, project, "agenthost.json", `{"lok": 1}`)
	if err := run(t.Context(), []string{"trust"}, nil, io.Discard, io.Discard); err == nil {
		t.Error("agenthost trust took a bad file")
	}
}
