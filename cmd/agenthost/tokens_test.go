//go:build tokens

// The token cost of tool titles, output schemas and structured results,
// counted with OpenAI's tokenizers (tiktoken's o200k_base and
// cl100k_base, whose ranks tiktoken-go-loader embeds: nothing is
// downloaded). It is a measurement, left out of make test by its build
// tag:
//
//	go test -tags tokens -run TestTokenCost -v ./cmd/agenthost

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcpserve"
	"github.com/agenthost/agenthost/internal/plugintest"
	"github.com/agenthost/agenthost/internal/servetest"
)

// encodings are the tokenizers counted with: GPT-4o's and GPT-4's.
var encodings = []string{"o200k_base", "cl100k_base"}

type counter []*tiktoken.Tiktoken

func newCounter(t *testing.T) counter {
	t.Helper()
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	var c counter
	for _, name := range encodings {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c = append(c, enc)
	}
	return c
}

// count is the tokens of s in each encoding.
func (c counter) count(s string) []int {
	n := make([]int, len(c))
	for i, enc := range c {
		n[i] = len(enc.Encode(s, nil, nil))
	}
	return n
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTokenCost prints, for tools/list, the tokens every tool costs with
// and without its title and output schema, and for one call of each
// tool with structured results, the tokens of its text and of its
// structuredContent.
func TestTokenCost(t *testing.T) {
	tok := newCounter(t)
	// The built-ins alone.
	dir := t.TempDir()
	for _, name := range []string{"fs", "search", "bash", "session"} {
		plugintest.Install(t, dir, host.PluginPrefix+name, "./plugins/"+name)
	}
	// The workspace is the sdk's source: real files to search and
	// describe.
	root := filepath.Join(plugintest.Root(), "sdk")
	reg := servetest.NewRegistry(t, dir, root, "run_bash", "remove")
	cs := servetest.ConnectInMemory(t, mcpserve.New(reg, nil).Connect, nil)

	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "tools/list, tokens (%s):\n", strings.Join(encodings, " / "))
	fmt.Fprintf(&table, "%-22s %-12s %-12s %-12s %s\n", "tool", "without", "with", "title", "output schema")
	total := map[string][]int{}
	add := func(key string, n []int) {
		if total[key] == nil {
			total[key] = make([]int, len(n))
		}
		for i := range n {
			total[key][i] += n[i]
		}
	}
	for _, tl := range res.Tools {
		bare := *tl
		bare.Title, bare.OutputSchema = "", nil
		titled := bare
		titled.Title = tl.Title
		with, without, withTitle := tok.count(marshal(t, tl)), tok.count(marshal(t, &bare)), tok.count(marshal(t, &titled))
		title, schema := diff(withTitle, without), diff(with, withTitle)
		add("without", without)
		add("with", with)
		add("title", title)
		add("schema", schema)
		fmt.Fprintf(&table, "%-22s %-12s %-12s %-12s %s\n", tl.Name, pair(without), pair(with), plus(title), plus(schema))
	}
	fmt.Fprintf(&table, "%-22s %-12s %-12s %-12s %s\n", fmt.Sprintf("all %d tools", len(res.Tools)),
		pair(total["without"]), pair(total["with"]), plus(total["title"]), plus(total["schema"]))

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"run_bash", map[string]any{"command": "ls -l"}},
		{"file_info", map[string]any{"paths": []string{"tool.go", "typed.go", "structured.go"}}},
		{"search_text", map[string]any{"query": "func New"}},
		{"search_files", map[string]any{"pattern": "**/*_test.go"}},
	}
	fmt.Fprintf(&table, "\none call's answer, tokens (%s):\n", strings.Join(encodings, " / "))
	fmt.Fprintf(&table, "%-44s %-12s %-12s %s\n", "call", "text", "structured", "structured/text")
	for _, c := range calls {
		r := servetest.Call(t, cs, c.tool, c.args)
		if r.IsError || r.StructuredContent == nil {
			t.Fatalf("%s: %+v", c.tool, r)
		}
		text, structured := tok.count(servetest.Text(t, r)), tok.count(marshal(t, r.StructuredContent))
		ratio := make([]string, len(text))
		for i := range text {
			ratio[i] = fmt.Sprintf("%.2f", float64(structured[i])/float64(text[i]))
		}
		fmt.Fprintf(&table, "%-44s %-12s %-12s %s\n", c.tool+" "+marshal(t, c.args), pair(text), pair(structured), strings.Join(ratio, " / "))
	}
	t.Log("\n" + table.String())
	if out := os.Getenv("AGENTHOST_TOKENS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if i := slices.IndexFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Title == "" }); i >= 0 {
		t.Errorf("the built-in %s has no title", res.Tools[i].Name)
	}
}

func diff(a, b []int) []int {
	d := make([]int, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

func pair(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, " / ")
}

func plus(n []int) string {
	s := make([]string, len(n))
	for i, v := range n {
		s[i] = fmt.Sprintf("+%d", v)
	}
	return strings.Join(s, " / ")
}
