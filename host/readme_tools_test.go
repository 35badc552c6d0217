package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestREADMEToolTable checks the table of built-in tools in docs/tools.md
// against the built plugins: every tool they serve has its row, naming its
// plugin, and the row names every argument of the tool's schema in
// backquotes.
func TestREADMEToolTable(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(plugintest.Root(), "docs", "tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // tool name → the row's cells
	rowRE := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|(.*)\\|$")
	for _, m := range rowRE.FindAllStringSubmatch(string(page), -1) {
		rows[m[1]] = strings.Split(m[2], " | ")
	}

	plugins := []string{"fs", "session", "search", "bash"}
	reg := load(t, pluginDir(t, plugins...), &host.Options{Roots: []string{t.TempDir()}})
	schemas := map[string]host.ChatTool{}
	for _, info := range reg.Tools() {
		if !info.Enabled {
			if err := reg.Enable(info.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range reg.EnabledSchemas() {
		schemas[s.Function.Name] = s
	}
	for _, info := range reg.Tools() {
		cells, ok := rows[info.Name]
		if !ok {
			t.Errorf("docs/tools.md's tool table has no row for %s", info.Name)
			continue
		}
		if want := strings.TrimPrefix(info.Plugin, "agenthost-plugin-"); len(cells) == 0 || strings.TrimSpace(cells[0]) != want {
			t.Errorf("docs/tools.md's row for %s names the plugin %q, want %q", info.Name, cells, want)
		}
		var params struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(schemas[info.Name].Function.Parameters, &params); err != nil {
			t.Fatalf("%s's schema: %v", info.Name, err)
		}
		row := strings.Join(cells, " | ")
		for name := range params.Properties {
			if !strings.Contains(row, "`"+name+"`") {
				t.Errorf("docs/tools.md's row for %s does not name its argument `%s`", info.Name, name)
			}
		}
	}
}
