package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMCPDefaultGrant: a server gets read access to the paths its
// configuration names (a script's whole node_modules tree), and a
// launcher what fetching a package takes; nothing else.
func TestMCPDefaultGrant(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "node_modules", "@scope", "server", "dist", "index.js")
	served := filepath.Join(dir, "served")
	for _, d := range []string{filepath.Dir(script), served} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	node := MCPServer{Name: "n", Command: "node", Args: []string{script, served, "--verbose", filepath.Join(dir, "missing")}}
	g := node.defaultGrant()
	if want := []string{filepath.Join(dir, "node_modules"), served}; !slices.Equal(g.Read, want) || g.Network || g.Exec || len(g.Write) != 0 {
		t.Errorf("node: %+v, want read %q", g, want)
	}
	npx := MCPServer{Name: "x", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", served}}
	g = npx.defaultGrant()
	if !g.Network || !g.Exec || !slices.Equal(g.Write, []string{"~/.npm"}) || !slices.Equal(g.Read, []string{served}) {
		t.Errorf("npx: %+v", g)
	}
	if g := (&MCPServer{Name: "h", URL: "http://127.0.0.1:1/mcp"}).defaultGrant(); !slices.Equal(g.Read, nil) || g.Network {
		t.Errorf("a remote server: %+v", g)
	}
}
