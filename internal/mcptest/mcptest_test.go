package mcptest

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestServersAreInstalled(t *testing.T) {
	dir := Dir(t)
	if !filepath.IsAbs(dir) || filepath.Base(dir) != "mcp-servers" {
		t.Errorf("Dir = %s", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		t.Error(err)
	}
	node, args := Everything(t)
	if node != Node(t) || len(args) != 2 || args[1] != "stdio" {
		t.Errorf("Everything = %s %q", node, args)
	}
	_, args = Filesystem(t, "/a", "/b")
	if len(args) != 3 || !slices.Equal(args[1:], []string{"/a", "/b"}) || !strings.HasSuffix(args[0], filepath.FromSlash("server-filesystem/dist/index.js")) {
		t.Errorf("Filesystem = %q", args)
	}
}

func TestEverythingHTTP(t *testing.T) {
	var url string
	t.Run("start", func(t *testing.T) {
		url = EverythingHTTP(t)
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			t.Errorf("url = %s", url)
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a GET without a session: %s, want 400", resp.Status)
		}
	})
	// The server is gone with the test that started it.
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("the server still answers after its test: %s", resp.Status)
	}
}
