package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// TestMCPServerEnvironment: a server gets what programs need of the
// host's environment that holds no secret — its user, language, proxy
// and certificates, a proxy's password taken out — and no secret;
// it may read the certificate file its variables name, and nothing
// beside it.
func TestMCPServerEnvironment(t *testing.T) {
	// Not parallel: it sets the host's environment.
	certs := t.TempDir()
	ca, beside := filepath.Join(certs, "corp-ca.pem"), filepath.Join(certs, "private.key")
	for _, f := range []string{ca, beside} {
		if err := os.WriteFile(f, []byte("-----BEGIN "+filepath.Base(f)+"-----\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	passed := map[string]string{
		"USER":                "ada",
		"LOGNAME":             "ada",
		"LANG":                "en_GB.UTF-8",
		"LC_TIME":             "en_DK.UTF-8",
		"TZ":                  "Europe/London",
		"https_proxy":         "http://proxy.internal:3128",
		"HTTP_PROXY":          "http://ada@proxy.internal:3128",
		"NO_PROXY":            "localhost,.internal",
		"NODE_EXTRA_CA_CERTS": ca,
		"SSL_CERT_FILE":       ca,
		"REQUESTS_CA_BUNDLE":  ca,
	}
	for k, v := range passed {
		t.Setenv(k, v)
	}
	// The proxy's password, and the secrets.
	t.Setenv("HTTP_PROXY", "http://ada:pr0xy-pa55@proxy.internal:3128")
	secrets := map[string]string{
		"GITHUB_TOKEN":          "ghp_must-not-leak",
		"AWS_SECRET_ACCESS_KEY": "aws-must-not-leak",
		"OPENAI_API_KEY":        "sk-must-not-leak",
		"STRIPE_KEY":            "stripe-must-not-leak",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}

	ev := everything(t)
	mcp := hostileMCP(t, "hostile")
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, ev, mcp)
	var env map[string]string
	if err := json.Unmarshal([]byte(call(t, reg, "get-env", `{}`)), &env); err != nil {
		t.Fatal(err)
	}
	for k, want := range passed {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	for k, v := range env {
		if _, secret := secrets[k]; secret || strings.Contains(v, "must-not-leak") || strings.Contains(v, "pr0xy-pa55") {
			t.Errorf("%s=%s reaches the server", k, v)
		}
	}

	// The certificates are readable; the file beside them is not.
	if got := call(t, reg, "read", `{"path":`+quote(ca)+`}`); !strings.Contains(got, "corp-ca.pem") {
		t.Errorf("reading the CA bundle = %q", got)
	}
	if got := reg.Execute(t.Context(), "read", []byte(`{"path":`+quote(beside)+`}`)); !host.IsError(got) || !strings.Contains(got, "permission denied") {
		t.Errorf("reading the file beside it = %q, want it refused", got)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestMCPBrowserServerSandbox: a server that runs a browser
// (chrome-devtools-mcp, by the package its arguments name) writes its
// profile and reads the user's browsers, which it may not change, in its
// sandbox.
func TestMCPBrowserServerSandbox(t *testing.T) {
	// Not parallel: it sets the home directory.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("PUPPETEER_CACHE_DIR", "")
	chrome := filepath.Join(home, ".cache", "puppeteer", "chrome", "linux", "chrome")
	if err := os.MkdirAll(filepath.Dir(chrome), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chrome, []byte("a browser"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := hostileMCP(t, "devtools")
	srv.Args = []string{"chrome-devtools-mcp@latest"}
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache, Roots: []string{t.TempDir()}}, srv)
	profile := filepath.Join(home, ".cache", "chrome-devtools-mcp", "Default")
	if got := call(t, reg, "sleep", `{"millis":0,"started":`+quote(profile)+`}`); got != "slept" {
		t.Errorf("writing its profile = %q", got)
	}
	if got := call(t, reg, "read", `{"path":`+quote(chrome)+`}`); got != "a browser" {
		t.Errorf("reading the user's browser = %q", got)
	}
	planted := filepath.Join(filepath.Dir(chrome), "planted")
	if got := reg.Execute(t.Context(), "sleep", []byte(`{"millis":0,"started":`+quote(planted)+`}`)); !host.IsError(got) {
		t.Errorf("writing beside the user's browser = %q, want it refused", got)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Error("the server changed the user's browsers")
	}
}

// A server asked to stop as it asks for its roots (server-everything
// asks 350 ms into its session, and then waits for the answer that the
// closed session cannot give) is sent SIGTERM half a second after its
// stdin closed, as MCP's stdio transport says, rather than sitting out
// the time a plugin has to exit.
func TestMCPServerStopsPromptlyMidRequest(t *testing.T) {
	t.Parallel()
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, everything(t))
	if got := call(t, reg, "echo", `{"message":"hi"}`); got != "Echo: hi" {
		t.Fatalf("echo = %q", got)
	}
	start := time.Now()
	reg.Close()
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("closing took %v", elapsed)
	}
}

// A tool a server adds while it runs (notifications/tools/list_changed)
// whose name another server's tool holds is registered with the
// server's name as a prefix, as at load.
func TestMCPToolAddedLaterIsRenamedWhenTaken(t *testing.T) {
	t.Parallel()
	// No description cache: the servers' lists change.
	reg := loadMCP(t, &host.Options{CacheDir: host.NoCache}, hostileMCP(t, "a"), hostileMCP(t, "b"))
	call(t, reg, "grow", `{}`)
	eventually(t, "a's new tool is registered", func() bool { return reg.HasTool("grown") })
	call(t, reg, "b_grow", `{}`)
	eventually(t, "b's new tool is registered", func() bool { return reg.HasTool("b_grown") })
	if got := call(t, reg, "b_grown", `{}`); got != "grown" {
		t.Errorf("b_grown = %q", got)
	}
	if rep := report(t, reg, "b"); !slices.Contains(rep.Renamed, "grown as b_grown") || len(rep.Refused) > 0 {
		t.Errorf("b: renamed %q, refused %q", rep.Renamed, rep.Refused)
	}
}
