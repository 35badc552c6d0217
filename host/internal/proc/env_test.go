package proc

import (
	"slices"
	"strings"
	"testing"
)

func TestPluginEnvIsAnAllowList(t *testing.T) {
	for k, v := range map[string]string{
		"PATH":                  "/usr/bin:/bin",
		"HOME":                  "/home/someone",
		"LANG":                  "en_GB.UTF-8",
		"LC_ALL":                "C.UTF-8",
		"LC_CTYPE":              "C.UTF-8",
		"TZ":                    "Europe/Paris",
		"TERM":                  "xterm",
		"OPENAI_API_KEY":        "sk-secret",
		"ANTHROPIC_API_KEY":     "sk-ant-secret",
		"AWS_SECRET_ACCESS_KEY": "aws-secret",
		"AWS_ACCESS_KEY_ID":     "AKIA",
		"GITHUB_TOKEN":          "ghp_secret",
		"LCX":                   "not a locale variable",
		"PATHX":                 "not PATH",
		"MY_TOOL_CONFIG":        "wanted",
		"OTHER_CONFIG":          "not wanted",
	} {
		t.Setenv(k, v)
	}
	env := Env([]string{"MY_TOOL_CONFIG", "NOT_SET_AT_ALL"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "MY_TOOL_CONFIG"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s is missing", k)
		}
	}
	if got["LC_ALL"] != "C.UTF-8" || got["MY_TOOL_CONFIG"] != "wanted" {
		t.Errorf("values changed: %v", got)
	}
	for k := range got {
		if !slices.Contains(pluginEnvAllowed, k) && !strings.HasPrefix(k, "LC_") && k != "MY_TOOL_CONFIG" {
			t.Errorf("%s reaches plugins", k)
		}
	}
	if _, ok := got["NOT_SET_AT_ALL"]; ok {
		t.Error("a pass-through variable that is not set was invented")
	}
}

func TestPluginEnvPassThroughOfASecretIsDeliberate(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	if slices.Contains(Env(nil), "OPENAI_API_KEY=sk-secret") {
		t.Error("OPENAI_API_KEY reaches plugins without --plugin-env")
	}
	if !slices.Contains(Env([]string{"OPENAI_API_KEY"}), "OPENAI_API_KEY=sk-secret") {
		t.Error("--plugin-env OPENAI_API_KEY does not pass it through")
	}
}
