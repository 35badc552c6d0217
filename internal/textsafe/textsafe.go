// Package textsafe prints names that came from a file system, a plugin or a
// user so that they cannot forge output: a name holding a newline, a
// carriage return, an ANSI escape, a bidirectional override or bytes that
// are not UTF-8 is shown in Go's quoted form instead of raw.
//
// Most names are printed unchanged:
//
//	textsafe.Name("main.go")        // main.go
//	textsafe.Name("a\nb.txt")       // "a\nb.txt"
//	textsafe.Name("\x1b[31mred")    // "\x1b[31mred"
//	textsafe.Name("bad\xffname")    // "bad\xffname"
package textsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name returns s unchanged when it is safe to print on a line of its own
// or inside a line: valid UTF-8 without control characters (C0, DEL, C1),
// line or paragraph separators or bidirectional formatting characters, and
// not starting with a double quote. Otherwise it returns strconv.Quote(s):
// a double-quoted Go string literal in which every such character is an
// escape, so the result is one line of printable text that names s
// exactly. A name that starts with a double quote is quoted too, so a
// quoted form can never be mistaken for a raw name.
func Name(s string) string {
	if NeedsQuoting(s) {
		return strconv.Quote(s)
	}
	return s
}

// IsEnvName reports whether name can name an environment variable: a
// letter or _, then letters, digits and _.
func IsEnvName(name string) bool {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// NeedsQuoting reports whether Name would quote s.
func NeedsQuoting(s string) bool {
	if len(s) > 0 && s[0] == '"' {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports whether a non-ASCII rune can break a line or reorder
// what a reader sees.
func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r): // C1 controls, U+0080..U+009F
		return true
	case r == '\u2028' || r == '\u2029': // line and paragraph separators
		return true
	case r == '\u061c' || r == '\u200e' || r == '\u200f': // bidi marks
		return true
	case r >= '\u202a' && r <= '\u202e': // bidi embeddings and overrides
		return true
	case r >= '\u2066' && r <= '\u2069': // bidi isolates
		return true
	case r == '\ufeff': // byte order mark, invisible
		return true
	}
	return false
}

// Line shows s, text from a model or a tool, on one line that cannot
// break, move the cursor or reorder what is read: control characters,
// line and paragraph separators, bidirectional formatting and bytes that
// are not UTF-8 are shown escaped (\x1b, \u202e); a tab becomes tab. It
// is cut after max bytes with "…".
func Line(s string, max int, tab string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(tab)
		case r != '"' && NeedsQuoting(string(r)):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
