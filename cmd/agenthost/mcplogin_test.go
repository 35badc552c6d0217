package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/oauthtest"
)

// oauthUser is a user of a remote MCP server that asks for an OAuth
// login: the built agenthost, a configuration that names the server, a
// configuration directory of its own for the tokens, and $BROWSER set to
// a script that writes down the URL it is given, for the test to play
// the browser.
type oauthUser struct {
	*mcpUser
	as               *oauthtest.Server
	configDir, shown string
	browser          string
}

func newOAuthUser(t *testing.T) *oauthUser {
	u := &oauthUser{mcpUser: newMCPUser(t), as: oauthtest.New(t, oauthtest.Options{Scopes: []string{"mcp:tools"}})}
	u.configDir = t.TempDir()
	u.shown = filepath.Join(t.TempDir(), "shown")
	u.browser = filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(u.browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > \""+u.shown+".tmp\" && mv \""+u.shown+".tmp\" \""+u.shown+"\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	u.writeConfig(t, fmt.Sprintf(`{"mcpServers": {"tracker": {"type": "http", "url": %q}}}`, u.as.URL))
	return u
}

// agenthost runs agenthost with the user's environment and extra
// variables.
func (u *oauthUser) agenthost(t *testing.T, extra []string, args ...string) result {
	t.Helper()
	cmd := u.command(t, args...)
	cmd.Env = agenthostEnv(append([]string{"XDG_CONFIG_HOME=" + u.configDir, "BROWSER=" + u.browser}, extra...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("agenthost %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// playBrowser waits for the URL the browser script writes down, and
// follows it as the user's browser would.
func (u *oauthUser) playBrowser(t *testing.T) <-chan error {
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if data, err := os.ReadFile(u.shown); err == nil {
				os.Remove(u.shown)
				done <- oauthtest.Browse(string(data))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		done <- errors.New("the browser was never opened")
	}()
	return done
}

// A user's story: a call to a server that asks for a login says to run
// agenthost mcp login; the login opens $BROWSER on the authorization page
// and stores the token, 0600, under the user's configuration directory;
// calls then work; logout removes the token, and calls say to log in
// again. No output quotes the token.
func TestMCPLogin(t *testing.T) {
	u := newOAuthUser(t)

	r := u.agenthost(t, nil, "call", "whoami", "{}")
	if r.code == 0 || !strings.Contains(r.stderr, "run `agenthost mcp login tracker`") {
		t.Fatalf("a call before the login: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(u.shown); err == nil {
		t.Fatal("a call opened the browser")
	}

	browsed := u.playBrowser(t)
	r = u.agenthost(t, nil, "mcp", "login", "tracker")
	if err := <-browsed; err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || !strings.Contains(r.stdout, "logged in to tracker; its OAuth token is stored in ") || !strings.Contains(r.stderr, "Opened the authorization page of tracker in the browser") {
		t.Fatalf("login: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(u.configDir, "agenthost", "tokens", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v; want one", files)
	}
	if info, err := os.Stat(files[0]); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v, %v; want 0600", info.Mode(), err)
	}
	if !strings.Contains(r.stdout, files[0]) || !strings.Contains(r.stdout, "scopes: mcp:tools") {
		t.Errorf("login says %q; want the file and the scopes", r.stdout)
	}
	outputs := r.stdout + r.stderr

	r = u.agenthost(t, nil, "call", "whoami", "{}")
	if r.code != 0 || !strings.Contains(r.stdout, "an authorized client") {
		t.Fatalf("a call after the login: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	outputs += r.stdout + r.stderr

	r = u.agenthost(t, nil, "mcp", "logout", "tracker")
	if r.code != 0 || !strings.Contains(r.stdout, "logged out of tracker") {
		t.Fatalf("logout: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(files[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token file is still there: %v", err)
	}
	r = u.agenthost(t, nil, "call", "whoami", "{}")
	if r.code == 0 || !strings.Contains(r.stderr, "agenthost mcp login tracker") {
		t.Fatalf("a call after the logout: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	outputs += r.stdout + r.stderr
	if regexp.MustCompile(`(access|refresh)-\d`).MatchString(outputs) {
		t.Errorf("an output quotes a token:\n%s", outputs)
	}
}

// Without a browser the URL is printed; a login nobody completes ends at
// its --timeout and stores nothing; a name the configuration does not
// have, or a server over stdio, is refused.
func TestMCPLoginRefusals(t *testing.T) {
	u := newOAuthUser(t)
	start := time.Now()
	r := u.agenthost(t, nil, "mcp", "login", "tracker", "--no-browser", "--timeout", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "To log in to tracker, open this URL in a browser:") || !strings.Contains(r.stderr, u.as.AS.URL+"/authorize?") ||
		!strings.Contains(r.stderr, "the browser did not come back within 1s; nothing was stored for tracker") {
		t.Fatalf("login without a browser: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the login took %s; want about its 1s timeout", time.Since(start))
	}
	if _, err := os.Stat(u.shown); err == nil {
		t.Error("--no-browser opened the browser")
	}
	if files, _ := filepath.Glob(filepath.Join(u.configDir, "agenthost", "tokens", "*.json")); len(files) != 0 {
		t.Errorf("token files %v after a login that did not complete", files)
	}

	r = u.agenthost(t, nil, "mcp", "login", "nosuch")
	if r.code != 2 || !strings.Contains(r.stderr, "the configuration names no MCP server nosuch (it names tracker)") {
		t.Errorf("login to an unknown name: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	u.writeConfig(t, `{"mcpServers": {"local": {"command": "true"}}}`)
	r = u.agenthost(t, nil, "mcp", "logout", "local")
	if r.code != 1 || !strings.Contains(r.stderr, "local is a stdio server: OAuth is for servers over HTTP") {
		t.Errorf("logout of a stdio server: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = u.agenthost(t, nil, "mcp", "whatever")
	if r.code != 2 || !strings.Contains(r.stderr, "mcp takes no arguments but login NAME or logout NAME") {
		t.Errorf("mcp with an argument: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// The token is renewed by the commands that use it before it expires: a
// login with a token that lives a second, then calls past half its life.
func TestMCPLoginRenews(t *testing.T) {
	u := newOAuthUser(t)
	u.as = oauthtest.New(t, oauthtest.Options{ExpiresIn: time.Second})
	u.writeConfig(t, fmt.Sprintf(`{"mcpServers": {"tracker": {"url": %q}}}`, u.as.URL))
	browsed := u.playBrowser(t)
	if r := u.agenthost(t, nil, "mcp", "login", "tracker"); r.code != 0 {
		t.Fatalf("login: %s", r.stderr)
	}
	if err := <-browsed; err != nil {
		t.Fatal(err)
	}
	// Past half its life: the call renews it first.
	time.Sleep(600 * time.Millisecond)
	for range 2 {
		if r := u.agenthost(t, nil, "call", "whoami", "{}"); r.code != 0 {
			t.Fatalf("call: %s", r.stderr)
		}
	}
	if _, _, _, refreshes := u.as.Counts(); refreshes == 0 {
		t.Error("no refresh")
	}
	for _, seen := range u.as.Seen() {
		if seen == "access-3" {
			t.Error("the token past half its life was sent")
		}
	}
}

// A server that asks for more scopes during a call (403
// insufficient_scope) fails the call with the command to run; the login
// then asks for them, and the call works.
func TestMCPLoginStepUp(t *testing.T) {
	u := newOAuthUser(t)
	u.as = oauthtest.New(t, oauthtest.Options{Scopes: []string{"issues:read"}, CallScopes: []string{"issues:write"}})
	u.writeConfig(t, fmt.Sprintf(`{"mcpServers": {"tracker": {"url": %q}}}`, u.as.URL))
	login := func() {
		t.Helper()
		browsed := u.playBrowser(t)
		if r := u.agenthost(t, nil, "mcp", "login", "tracker"); r.code != 0 {
			t.Fatalf("login: %s", r.stderr)
		}
		if err := <-browsed; err != nil {
			t.Fatal(err)
		}
	}
	login()
	r := u.agenthost(t, nil, "call", "whoami", "{}")
	if r.code == 0 || !strings.Contains(r.stderr, "tracker asks for more than its OAuth token grants (scope issues:read issues:write): run `agenthost mcp login tracker` to grant it") {
		t.Fatalf("a call that needs more scopes: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	login()
	if got := strings.Fields(u.as.Authorizations()[1].Get("scope")); len(got) != 2 {
		t.Errorf("the second login asked for %q; want issues:read and issues:write", got)
	}
	if r := u.agenthost(t, nil, "call", "whoami", "{}"); r.code != 0 {
		t.Fatalf("the call after the second login: %s", r.stderr)
	}
}
