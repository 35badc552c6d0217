package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A command line is checked as a shell reads it: every simple command it
// runs is found (in lists, pipelines, subshells, blocks, loops,
// functions, command and process substitutions, here-documents, and the
// scripts of eval and sh -c) and rendered as one line of words, quotes
// removed, for the rules' patterns to match. A part that cannot be known
// before it runs (a parameter expansion, a substitution's output, a
// glob) is rendered as dynamic, which only a pattern's * matches.

// dynamic stands for a part of a word that is known only when it runs.
const dynamic = "\x00"

// command is one simple command of a command line.
type command struct {
	// line is the command's words, separated by spaces; a word holding a
	// space is quoted, so that it cannot pass for two.
	line string
	// writes: its output goes to a file (>, >>, &>, >|), which a rule
	// that allows the command does not allow.
	writes bool
	// opaque: it runs code that cannot be read before it runs (eval of
	// a dynamic text, a shell given a script that is not a literal).
	opaque bool
}

// wrappers run the command their arguments name: the rules match that
// command. extraArgs: the command gets arguments of the wrapper's
// choosing (xargs), which only a pattern ending in * allows.
var wrappers = map[string]struct {
	// flags are options that take a value (skipped with it).
	flags     []string
	extraArgs bool
}{
	"env":     {flags: []string{"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}},
	"command": {},
	"exec":    {flags: []string{"-a"}},
	"nohup":   {},
	"time":    {},
	"nice":    {flags: []string{"-n", "--adjustment"}},
	"timeout": {flags: []string{"-s", "--signal", "-k", "--kill-after"}},
	"xargs":   {flags: []string{"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args", "--max-procs"}, extraArgs: true},
}

// shells run the script that -c gives them.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// systemDirs hold the programs that a rule naming a program by its base
// name also matches by absolute path (/usr/bin/git for git). A program
// elsewhere (./git, /tmp/git) is matched by the path as written.
var systemDirs = map[string]bool{"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true}

// maxDepth bounds eval and sh -c inside one another.
const maxDepth = 8

// commands parses line as bash does and returns every simple command it
// runs. A line that does not parse is an error: nothing of it is allowed.
func commands(line string) ([]command, error) {
	var out []command
	err := collect(line, 0, &out)
	return out, err
}

func collect(src string, depth int, out *[]command) error {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return err
	}
	var werr error
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok || werr != nil {
			return werr == nil
		}
		writes := false
		for _, r := range st.Redirs {
			if writesFile(r) {
				writes = true
			}
		}
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			if writes {
				// A redirection alone (> file) writes the file.
				*out = append(*out, command{line: ">", writes: true})
			}
			return true
		}
		words := make([]string, len(call.Args))
		for i, w := range call.Args {
			words[i] = wordText(w)
		}
		c, keep, err := simple(words, depth, out)
		if err != nil {
			werr = err
			return false
		}
		if keep || writes {
			c.writes = c.writes || writes
			*out = append(*out, c)
		}
		return true
	})
	return werr
}

// simple renders one simple command, unwrapping the wrappers before it
// and reading the scripts of eval and sh -c, whose commands it adds to
// out instead (keep is false then: the script's commands are what runs).
func simple(words []string, depth int, out *[]command) (c command, keep bool, err error) {
	extra := false
	for len(words) > 0 {
		w, ok := wrappers[words[0]]
		if !ok {
			break
		}
		rest := words[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			flag := rest[0]
			rest = rest[1:]
			if flag == "--" {
				break
			}
			for _, f := range w.flags {
				if flag == f && len(rest) > 0 {
					rest = rest[1:]
				}
			}
		}
		if words[0] == "env" {
			for len(rest) > 0 && strings.Contains(rest[0], "=") {
				rest = rest[1:]
			}
		}
		if words[0] == "timeout" && len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		if len(rest) == 0 {
			break // the wrapper alone: it is the command
		}
		extra = extra || w.extraArgs
		words = rest
	}
	words[0] = program(words[0])
	if script, ok := scriptOf(words); ok {
		if depth >= maxDepth || strings.Contains(script, dynamic) {
			return command{line: render(words), opaque: true}, true, nil
		}
		return command{}, false, collect(script, depth+1, out)
	}
	if extra {
		words = append(words, dynamic)
	}
	return command{line: render(words)}, true, nil
}

// scriptOf is the script that eval or a shell's -c runs.
func scriptOf(words []string) (string, bool) {
	switch {
	case words[0] == "eval" && len(words) > 1:
		return strings.Join(words[1:], " "), true
	case shells[words[0]]:
		for i := 1; i < len(words)-1; i++ {
			if words[i] == "-c" || (strings.HasPrefix(words[i], "-") && !strings.HasPrefix(words[i], "--") && strings.HasSuffix(words[i], "c")) {
				return words[i+1], true
			}
		}
	}
	return "", false
}

// program is how a rule sees a command's program: an absolute path in a
// system directory by its base name.
func program(p string) string {
	if path.IsAbs(p) && systemDirs[path.Dir(path.Clean(p))] {
		return path.Base(p)
	}
	return p
}

// render joins words with spaces, quoting a word that holds one.
func render(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w == "" || strings.ContainsAny(w, " \t\n") {
			b.WriteString(syntaxQuote(w))
		} else {
			b.WriteString(w)
		}
	}
	return b.String()
}

func syntaxQuote(w string) string {
	q, err := syntax.Quote(w, syntax.LangBash)
	if err != nil {
		return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return q
}

// wordText is a word with its quotes removed; what is known only when it
// runs is dynamic.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		partText(&b, part)
	}
	return b.String()
}

func partText(b *strings.Builder, part syntax.WordPart) {
	switch p := part.(type) {
	case *syntax.Lit:
		v := p.Value
		if strings.ContainsAny(v, "*?[") {
			// A glob, expanded to names known only when it runs.
			b.WriteString(dynamic)
			return
		}
		b.WriteString(unescape(v))
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			partText(b, q)
		}
	default:
		b.WriteString(dynamic)
	}
}

// unescape removes the backslashes of an unquoted literal.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// writesFile reports whether r sends output to a file (not /dev/null,
// not another descriptor).
func writesFile(r *syntax.Redirect) bool {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
		return r.Word == nil || wordText(r.Word) != "/dev/null"
	}
	return false
}
