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

// What a program needs that holds no secret reaches it: its user's name,
// the network's proxy and the certificates it trusts. A proxy's password
// does not, unless the variable is passed through by name.
func TestPluginEnvCarriesUserProxyAndCertificates(t *testing.T) {
	for k, v := range map[string]string{
		"USER":                "someone",
		"LOGNAME":             "someone",
		"https_proxy":         "http://proxy.example:3128",
		"HTTP_PROXY":          "http://someone:hunter2@proxy.example:3128/",
		"ALL_PROXY":           "someone:hunter2@proxy.example:1080",
		"NO_PROXY":            "localhost,.internal",
		"SSL_CERT_FILE":       "/etc/ssl/certs/ca-certificates.crt",
		"NODE_EXTRA_CA_CERTS": "/usr/local/share/ca-certificates/corp.crt",
		"GIT_SSL_CAINFO":      "/etc/ssl/certs/ca-certificates.crt",
		"NPM_TOKEN":           "npm_secret",
	} {
		t.Setenv(k, v)
	}
	env := Env(nil)
	for _, want := range []string{
		"USER=someone", "LOGNAME=someone",
		"https_proxy=http://proxy.example:3128",
		"HTTP_PROXY=http://someone@proxy.example:3128/",
		"ALL_PROXY=someone@proxy.example:1080",
		"NO_PROXY=localhost,.internal",
		"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		"NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/corp.crt",
		"GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("%s is missing from %q", want, env)
		}
	}
	if joined := strings.Join(env, "\n"); strings.Contains(joined, "hunter2") || strings.Contains(joined, "npm_secret") {
		t.Errorf("a secret reaches plugins: %q", env)
	}
	if !slices.Contains(Env([]string{"HTTP_PROXY"}), "HTTP_PROXY=http://someone:hunter2@proxy.example:3128/") {
		t.Error("HTTP_PROXY passed through by name loses its password")
	}
}

func TestWithoutPassword(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@h:1":          "http://u@h:1",
		"http://u@h:1":            "http://u@h:1",
		"http://h:1":              "http://h:1",
		"u:p@h:1":                 "u@h:1",
		"socks5://u:p:q@h:1/x@y":  "socks5://u@h:1/x@y",
		"http://h:1/path?a=b@c:d": "http://h:1/path?a=b@c:d",
		"":                        "",
	} {
		if got := withoutPassword(in); got != want {
			t.Errorf("withoutPassword(%q) = %q, want %q", in, got, want)
		}
	}
}
