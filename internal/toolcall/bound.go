package toolcall

import (
	"strconv"
	"unicode/utf8"
)

// MaxMessage bounds the message of a failed call as the model reads it
// ("Error executing NAME: MESSAGE"): a tool's error, a panic, an argument
// check. What is longer is cut (see Bound).
const MaxMessage = 4 << 10

// MaxName bounds a tool name that an answer repeats (a tool that is not
// found, a call that did not run): the name is the model's, of any length.
const MaxName = 256

// Bound returns msg when it is at most max bytes long. A longer msg is cut
// to its first max bytes or fewer, on a UTF-8 boundary, followed by a
// marker that says how many bytes were cut: "... [N bytes cut]".
func Bound(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	keep := cutPoint(msg, max)
	return msg[:keep] + "... [" + strconv.Itoa(len(msg)-keep) + " bytes cut]"
}

// MaxQuoted bounds a value or name that an argument-check error quotes
// back, such as an unknown property.
const MaxQuoted = 64

// Quote is strconv.Quote of s, or of its first MaxQuoted bytes (on a UTF-8
// boundary) followed by "…" and its length when s is longer:
// "aaaa…" (50000000 bytes). Escapes (\x86, \u2028) make a quote up to
// four times as long as what it quotes, so s is cut shorter still where
// its quote would pass twice MaxQuoted.
func Quote(s string) string {
	keep := len(s)
	if keep > MaxQuoted {
		keep = cutPoint(s, MaxQuoted)
	}
	for keep > 0 && len(strconv.Quote(s[:keep])) > 2*MaxQuoted {
		keep = cutPoint(s, keep-1)
	}
	if keep == len(s) {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]+"…") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// cutPoint is where to cut s to at most n < len(s) bytes without
// splitting a rune: n, or the start of the rune that straddles n.
func cutPoint(s string, n int) int {
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if _, size := utf8.DecodeRuneInString(s[i:]); i+size > n && i < n {
				return i
			}
			return n
		}
	}
	return n
}
