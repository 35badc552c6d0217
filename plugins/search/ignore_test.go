package main

import "testing"

func TestWildmatch(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		pattern, name string
		want          bool
	}{
		"literal":                    {"a.txt", "a.txt", true},
		"literal differs":            {"a.txt", "b.txt", false},
		"star":                       {"*.go", "main.go", true},
		"star matches empty":         {"*.go", ".go", true},
		"star stops at slash":        {"*.go", "a/main.go", false},
		"star in the middle":         {"a*z", "abcz", true},
		"two stars":                  {"a*b*c", "axxbyyc", true},
		"two stars fail":             {"a*b*c", "axxbyy", false},
		"question":                   {"a?c", "abc", true},
		"question is one char":       {"a?c", "ac", false},
		"question is one rune":       {"a?c", "aéc", true},
		"question not slash":         {"a?c", "a/c", false},
		"class":                      {"[ab].txt", "b.txt", true},
		"class miss":                 {"[ab].txt", "c.txt", false},
		"range":                      {"x[0-9]", "x7", true},
		"negated class":              {"x[!0-9]", "x7", false},
		"caret negation":             {"x[^0-9]", "xa", true},
		"bracket first in class":     {"[]a]", "]", true},
		"posix class":                {"[[:digit:]]x", "5x", true},
		"posix class miss":           {"[[:upper:]]x", "ax", false},
		"unterminated class":         {"[ab", "[ab", true},
		"escaped star":               {`a\*`, "a*", true},
		"escaped star is literal":    {`a\*`, "ab", false},
		"escaped hash":               {`\#x`, "#x", true},
		"leading double star":        {"**/x", "a/b/x", true},
		"leading double star zero":   {"**/x", "x", true},
		"middle double star":         {"a/**/b", "a/x/y/b", true},
		"middle double star zero":    {"a/**/b", "a/b", true},
		"middle double star no":      {"a/**/b", "ab", false},
		"trailing double star":       {"a/**", "a/x/y", true},
		"trailing double star self":  {"a/**", "a", false},
		"double star not a segment":  {"a**b", "axxb", true},
		"double star not a segment2": {"a**b", "ax/xb", false},
		"path":                       {"doc/*.md", "doc/a.md", true},
		"path too deep":              {"doc/*.md", "doc/x/a.md", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := wildmatch(tc.pattern, tc.name); got != tc.want {
				t.Errorf("wildmatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
			}
		})
	}
}

func TestParseIgnoreLine(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		line string
		want ignoreRule
		ok   bool
	}{
		"plain":              {"*.log", ignoreRule{pattern: "*.log"}, true},
		"blank":              {"   ", ignoreRule{}, false},
		"comment":            {"# x", ignoreRule{}, false},
		"escaped hash":       {`\#x`, ignoreRule{pattern: "#x"}, true},
		"negation":           {"!keep", ignoreRule{pattern: "keep", negate: true}, true},
		"escaped bang":       {`\!x`, ignoreRule{pattern: "!x"}, true},
		"directory":          {"build/", ignoreRule{pattern: "build", dirOnly: true}, true},
		"anchored":           {"/build", ignoreRule{pattern: "build", anchored: true}, true},
		"slash inside":       {"a/b", ignoreRule{pattern: "a/b", anchored: true}, true},
		"trailing spaces":    {"a.txt  ", ignoreRule{pattern: "a.txt"}, true},
		"escaped space":      {`a\ `, ignoreRule{pattern: `a\ `}, true},
		"CR":                 {"a.txt\r", ignoreRule{pattern: "a.txt"}, true},
		"anchored directory": {"/out/", ignoreRule{pattern: "out", anchored: true, dirOnly: true}, true},
		"only a slash":       {"/", ignoreRule{}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseIgnoreLine(tc.line)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("parseIgnoreLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIgnoreList(t *testing.T) {
	t.Parallel()
	var root *ignoreList
	root = root.withRules("", []byte("*.log\n!important.log\n/top.txt\nbuild/\ndocs/**/tmp\n"))
	sub := root.withRules("sub", []byte("!*.log\nlocal\n"))
	tests := map[string]struct {
		list  *ignoreList
		rel   string
		isDir bool
		want  bool
	}{
		"pattern":                 {root, "a.log", false, true},
		"pattern deep":            {root, "x/y/a.log", false, true},
		"negated":                 {root, "important.log", false, false},
		"anchored":                {root, "top.txt", false, true},
		"anchored not deep":       {root, "x/top.txt", false, false},
		"directory only":          {root, "x/build", true, true},
		"directory only, a file":  {root, "x/build", false, false},
		"double star":             {root, "docs/a/b/tmp", true, true},
		"double star zero":        {root, "docs/tmp", false, true},
		"not matched":             {root, "a.txt", false, false},
		"deeper file wins":        {sub, "sub/a.log", false, false},
		"deeper file applies":     {sub, "sub/x/local", false, true},
		"deeper file only below":  {sub, "other/local", false, false},
		"root rules still apply":  {sub, "sub/top.txt", false, false},
		"root rules below sub":    {sub, "sub/build", true, true},
		"sibling prefix":          {sub, "subway/local", false, false},
		"no rules":                {nil, "a.log", false, false},
		"no rules added is reuse": {root.withRules("x"), "a.log", false, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			name := tc.rel
			if i := lastSlash(tc.rel); i >= 0 {
				name = tc.rel[i+1:]
			}
			if got := tc.list.ignored(tc.rel, name, tc.isDir); got != tc.want {
				t.Errorf("ignored(%q, dir %v) = %v, want %v", tc.rel, tc.isDir, got, tc.want)
			}
		})
	}
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
