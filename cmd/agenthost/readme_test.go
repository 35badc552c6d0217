package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// TestREADMEExamples runs the "$ bin/agenthost ..." lines of README.md
// and of docs/cli.md and docs/permissions.md as written, README's first, in order, from a
// directory holding bin/agenthost, bin/plugins and a copy of README.md,
// and compares what each printed (stdout and stderr) with the lines that
// follow it there.
func TestREADMEExamples(t *testing.T) {
	t.Setenv("AGENTHOST_PLUGINS", "")
	root := plugintest.Root()
	type example struct{ page, line, want string }
	var examples []example
	for _, page := range []struct {
		name string
		min  int
	}{{"README.md", 1}, {"docs/cli.md", 4}, {"docs/permissions.md", 2}} {
		text, err := os.ReadFile(filepath.Join(root, page.name))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, block := range strings.Split(string(text), "```sh\n")[1:] {
			block, _, _ = strings.Cut(block, "```")
			for _, part := range strings.Split("\n"+block, "\n$ ")[1:] {
				line, want, _ := strings.Cut(part, "\n")
				examples = append(examples, example{page.name, line, want})
				n++
			}
		}
		if n < page.min {
			t.Fatalf("found %d examples in %s, want %d or more", n, page.name, page.min)
		}
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(filepath.Join(bin, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.Install(t, bin, "agenthost", "./cmd/agenthost")
	for _, name := range []string{"fs", "search", "session"} {
		plugintest.Install(t, filepath.Join(bin, "plugins"), host.PluginPrefix+name, "./plugins/"+name)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ex := range examples {
		args, err := shellWords(ex.line)
		if err != nil || len(args) == 0 || args[0] != "bin/agenthost" {
			t.Fatalf("%s example %q: not a bin/agenthost command line (%v)", ex.page, ex.line, err)
		}
		cmd := exec.Command(filepath.Join(dir, args[0]), args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run()
		if strings.TrimRight(out.String(), "\n") != strings.TrimRight(ex.want, "\n") {
			t.Errorf("$ %s\nprinted:\n%s\n%s says:\n%s", ex.line, out.String(), ex.page, ex.want)
		}
	}
}

// shellWords splits a command line as sh does for the forms the docs use:
// words separated by spaces, single-quoted text taken as it is.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, os.ErrInvalid
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
