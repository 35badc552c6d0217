package proc

import (
	"os"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// pluginEnvAllowed are the variables of the host's environment that every
// plugin and MCP server gets: what a program needs to find programs and
// files, its user, language and time zone, the network's proxy and the
// certificates it trusts. None of them holds a secret (a proxy's password
// is taken out: see proxyVars). LC_* variables are allowed too (see
// AllowedEnv).
var pluginEnvAllowed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TZ", "SHELL", "TERM",
	// The proxy, as curl, Node, Python, Go and git read it.
	"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
	"no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY",
	// The certificates to trust, where a network's own authority is added.
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
}

// proxyVars are the variables whose value is a proxy's URL, which may
// carry a user and a password (http://user:password@proxy:3128). The
// password is a secret: it is taken out of the value a process gets
// unless the variable is passed through by name.
var proxyVars = []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}

// Env is the environment a plugin starts with: the variables of the
// host's environment on the allow-list (PATH, HOME, USER, LOGNAME, LANG,
// every LC_*, TMPDIR, TZ, SHELL, TERM, the proxy variables and the
// certificate variables: see CertVars) and those named in passThrough
// (Options.PluginEnv), in the host's order. A proxy URL's password is
// taken out (http://user@proxy:3128 remains), unless passThrough names
// the variable. Nothing else of the host's environment — model API keys,
// cloud credentials, tokens — reaches a plugin. go-plugin adds its own
// variables to these.
func Env(passThrough []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if name == sandbox.Env {
			continue // the host's word alone
		}
		if slices.Contains(passThrough, name) {
			env = append(env, kv)
			continue
		}
		if !AllowedEnv(name) {
			continue
		}
		if slices.Contains(proxyVars, name) {
			kv = name + "=" + withoutPassword(value)
		}
		env = append(env, kv)
	}
	return env
}

// AllowedEnv reports whether the variable name is on the allow-list.
func AllowedEnv(name string) bool {
	return slices.Contains(pluginEnvAllowed, name) || strings.HasPrefix(name, "LC_")
}

// CertVars are the variables of the allow-list that name a file or a
// directory of certificates, which a process that gets them must be able
// to read.
var CertVars = []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"}

// withoutPassword is a proxy's URL, with or without a scheme, without the
// password of its user information: "http://user:secret@proxy:3128"
// becomes "http://user@proxy:3128". Anything else is returned as it is.
func withoutPassword(v string) string {
	scheme, rest := "", v
	if i := strings.Index(v, "://"); i >= 0 {
		scheme, rest = v[:i+3], v[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return v
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return v
	}
	return scheme + user + "@" + rest[at+1:]
}
