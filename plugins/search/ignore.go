package main

import (
	"strings"
	"unicode/utf8"
)

// ignoreFileNames are the files whose patterns exclude paths from a walk,
// in rising precedence: in one directory, a .ignore pattern beats a
// .gitignore one, as in ripgrep.
var ignoreFileNames = [...]string{".gitignore", ".ignore"}

// gitExclude is a repository's own exclude file, below the directory that
// holds .git. Its patterns apply as that directory's, below its
// .gitignore's in precedence, as in git and ripgrep.
var gitExclude = [...]string{".git", "info", "exclude"}

// ignoreRule is one pattern line of a .gitignore file (gitignore(5)).
type ignoreRule struct {
	pattern  string // the glob, without "!", the leading "/" and the trailing "/"
	negate   bool   // "!pattern": re-includes what an earlier pattern excluded
	dirOnly  bool   // "pattern/": matches directories only
	anchored bool   // the pattern has a "/": it matches the path relative to its directory, not the name
}

// ignoreList is the ignore rules of one directory, linked to those of the
// directories above it. It is immutable: the walk shares it between
// goroutines.
type ignoreList struct {
	dir    string // slash-separated, relative to the workspace root; "" for the root
	m      *ignoreMatcher
	parent *ignoreList
}

// withRules returns the list for dir: l, extended with the rules parsed
// from the given ignore files' contents when there are any.
func (l *ignoreList) withRules(dir string, contents ...[]byte) *ignoreList {
	var rules []ignoreRule
	for _, c := range contents {
		rules = append(rules, parseIgnore(c)...)
	}
	if len(rules) == 0 {
		return l
	}
	return &ignoreList{dir: dir, m: compileIgnore(rules), parent: l}
}

// ignored reports whether the entry at rel (slash-separated, relative to
// the workspace root) is excluded: the last matching rule of the deepest
// ignore file that has one decides.
func (l *ignoreList) ignored(rel, name string, isDir bool) bool {
	for ; l != nil; l = l.parent {
		sub := rel
		if l.dir != "" {
			if !strings.HasPrefix(rel, l.dir+"/") {
				continue
			}
			sub = rel[len(l.dir)+1:]
		}
		if i := l.m.last(sub, name, isDir); i >= 0 {
			return !l.m.rules[i].negate
		}
	}
	return false
}

// parseIgnore parses the lines of a .gitignore file.
func parseIgnore(content []byte) []ignoreRule {
	var rules []ignoreRule
	text := string(content)
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if r, ok := parseIgnoreLine(line); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

// parseIgnoreLine parses one line; ok is false for blank lines and
// comments.
func parseIgnoreLine(line string) (r ignoreRule, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.HasPrefix(line, "/") {
		r.anchored = true
		line = line[1:]
	} else if strings.Contains(line, "/") {
		r.anchored = true
	}
	if line == "" {
		return r, false
	}
	r.pattern = line
	return r, true
}

// trimTrailingSpaces removes trailing spaces that a backslash does not
// escape.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		// Count the backslashes before this space: an odd number escapes it.
		bs := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// wildmatch reports whether name matches a gitignore glob: "*" and "?"
// never match "/", "[...]" is a character class ("[!...]" or "[^...]"
// negated, POSIX "[:alpha:]" classes inside), "\" escapes, and "**" as a
// whole path segment matches any number of directories.
func wildmatch(pattern, name string) bool {
	return wildmatchAt(pattern, 0, name)
}

// wildmatchAt matches pattern[pi:] against name; pi tells whether a "**"
// there starts a path segment.
func wildmatchAt(pattern string, pi int, name string) bool {
	for pi < len(pattern) {
		switch c := pattern[pi]; c {
		case '*':
			stars := pi
			for pi < len(pattern) && pattern[pi] == '*' {
				pi++
			}
			if pi-stars >= 2 && (stars == 0 || pattern[stars-1] == '/') {
				if pi == len(pattern) {
					// A trailing "**": everything below.
					return true
				}
				if pattern[pi] == '/' {
					// "**/": zero or more directories.
					for {
						if wildmatchAt(pattern, pi+1, name) {
							return true
						}
						i := strings.IndexByte(name, '/')
						if i < 0 {
							return false
						}
						name = name[i+1:]
					}
				}
				// "**x" is not a segment: the stars are one star.
			}
			if pi == len(pattern) {
				return !strings.Contains(name, "/")
			}
			for i := 0; i <= len(name); i++ {
				if wildmatchAt(pattern, pi, name[i:]) {
					return true
				}
				if i < len(name) && name[i] == '/' {
					return false
				}
			}
			return false
		case '?':
			if name == "" || name[0] == '/' {
				return false
			}
			_, n := utf8.DecodeRuneInString(name)
			pi, name = pi+1, name[n:]
		case '[':
			if name == "" || name[0] == '/' {
				return false
			}
			r, n := utf8.DecodeRuneInString(name)
			matched, plen, ok := matchClass(pattern[pi:], r)
			if !ok {
				// An unterminated class: "[" is itself.
				if name[0] != '[' {
					return false
				}
				pi, name = pi+1, name[1:]
				continue
			}
			if !matched {
				return false
			}
			pi, name = pi+plen, name[n:]
		case '\\':
			if pi+1 == len(pattern) {
				// A trailing backslash matches nothing.
				return false
			}
			if name == "" || name[0] != pattern[pi+1] {
				return false
			}
			pi, name = pi+2, name[1:]
		default:
			if name == "" || name[0] != c {
				return false
			}
			pi, name = pi+1, name[1:]
		}
	}
	return name == ""
}

// matchClass matches r against the class that pattern starts with ("[").
// It returns the length of the class in pattern; ok is false when the
// class is not terminated.
func matchClass(pattern string, r rune) (matched bool, length int, ok bool) {
	i := 1
	negate := false
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(pattern) {
		if pattern[i] == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		if strings.HasPrefix(pattern[i:], "[:") {
			if end := strings.Index(pattern[i+2:], ":]"); end >= 0 {
				if posixClass(pattern[i+2:i+2+end], r) {
					matched = true
				}
				i += 2 + end + 2
				continue
			}
		}
		lo, n := classChar(pattern[i:])
		if n == 0 {
			return false, 0, false
		}
		i += n
		hi := lo
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			hi, n = classChar(pattern[i+1:])
			if n == 0 {
				return false, 0, false
			}
			i += 1 + n
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return false, 0, false
}

// classChar decodes one, possibly escaped, character of a class.
func classChar(s string) (rune, int) {
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0
		}
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, n + 1
	}
	return utf8.DecodeRuneInString(s)
}

func posixClass(name string, r rune) bool {
	isUpper := 'A' <= r && r <= 'Z'
	isLower := 'a' <= r && r <= 'z'
	isDigit := '0' <= r && r <= '9'
	switch name {
	case "alnum":
		return isUpper || isLower || isDigit
	case "alpha":
		return isUpper || isLower
	case "digit":
		return isDigit
	case "lower":
		return isLower
	case "upper":
		return isUpper
	case "xdigit":
		return isDigit || ('a' <= r && r <= 'f') || ('A' <= r && r <= 'F')
	case "space":
		return r == ' ' || ('\t' <= r && r <= '\r')
	case "blank":
		return r == ' ' || r == '\t'
	case "punct":
		return r > ' ' && r < 0x7f && !isUpper && !isLower && !isDigit
	case "cntrl":
		return r < ' ' || r == 0x7f
	case "graph":
		return r > ' ' && r < 0x7f
	case "print":
		return r >= ' ' && r < 0x7f
	}
	return false
}
