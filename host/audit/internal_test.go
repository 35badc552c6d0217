package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A line that cannot be written (the file failing under it, as on a full
// disk) fails no call; it is said once, and once more when lines are
// written again.
func TestWriteFailureFailsNoCall(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	logs := &lockedBuffer{}
	l, err := Open(path, &Options{Logger: hclog.New(&hclog.LoggerOptions{Output: logs})})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.f.Close() // every write fails from now on

	call := &host.Call{Tool: "echo", Args: json.RawMessage(`{}`)}
	for range 3 {
		res := l.Intercept(context.Background(), call, func(context.Context, *host.Call) host.Result {
			return host.Result{Text: "fine"}
		})
		if res.Text != "fine" || res.IsError {
			t.Errorf("the call's result became %+v", res)
		}
	}
	if n := strings.Count(logs.String(), "cannot be written"); n != 1 {
		t.Errorf("the failure was said %d times:\n%s", n, logs)
	}

	l.mu.Lock()
	l.f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	l.mu.Unlock()
	l.Intercept(context.Background(), call, func(context.Context, *host.Call) host.Result { return host.Result{} })
	if !strings.Contains(logs.String(), "written again") || !strings.Contains(logs.String(), "lost=3") {
		t.Errorf("the recovery was not said with the lines lost:\n%s", logs)
	}
	if data, _ := os.ReadFile(path); bytes.Count(data, []byte("\n")) != 1 {
		t.Errorf("file after recovery:\n%s", data)
	}
}

func TestSecretKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"token": true, "GITHUB_TOKEN": true, "access_token": true, "refreshToken": true,
		"password": true, "Passwd": true, "db-password-file": true, "apiKey": true, "api_key": true,
		"X-API-KEY": true, "xAPIKey": true, "APIKey": true, "apikey": true, "Authorization": true, "auth": true,
		"client_secret": true, "AWS_SECRET_ACCESS_KEY": true, "private_key": true, "privateKeyPem": true,
		"Cookie": true, "set-cookie": true, "session_key": true, "credentials": true, "oauth_token": true,
		"max_tokens": false, "author": false, "authors": false, "key": false, "sort_key": false,
		"tokenizer": false, "path": false, "command": false, "keyword": false, "": false,
	} {
		if got := secretKey(key); got != want {
			t.Errorf("secretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestRedactText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"git status":                              "git status",
		"GITHUB_TOKEN=abc make":                   "GITHUB_TOKEN=[redacted] make",
		"export API_KEY='a b' && go":              "export API_KEY='[redacted]' && go",
		"curl -H 'Authorization: Bearer abc.def'": "curl -H 'Authorization: [redacted]'",
		"Authorization: Basic dXNlcjpwdw==":       "Authorization: [redacted]",
		"bearer abc":                              "bearer [redacted]",
		"mysql --password hunter2 -u me":          "mysql --password [redacted] -u me",
		"mysql --password=hunter2":                "mysql --password=[redacted]",
		"the password is long":                    "the password is long",
		"https://me:pw@host/x":                    "https://me:[redacted]@host/x",
		"url=https://h/?a=1&token=x&b=2":          "url=https://h/?a=1&token=[redacted]&b=2",
		`{"password": "pw", "user": "me"}`:        `{"password": "[redacted]", "user": "me"}`,
		"max_tokens=5 author: Jane":               "max_tokens=5 author: Jane",
		"note: password=":                         "note: password=",
	} {
		if got := redactText(in); got != want {
			t.Errorf("redactText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestBoundArgsNotJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":`, `{} {}`, `nope`} {
		got := boundArgs(json.RawMessage(in))
		if !json.Valid(got) || !strings.Contains(string(got), "not JSON") {
			t.Errorf("boundArgs(%q) = %s", in, got)
		}
	}
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	if got := boundArgs(json.RawMessage(deep)); !json.Valid(got) || !strings.Contains(string(got), "nested too deep") {
		t.Errorf("deep arguments: %s", got)
	}
}
