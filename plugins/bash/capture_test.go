package main

import (
	"strings"
	"testing"
)

func TestCapture(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		head, tail int
		writes     []string
		want       string
	}{
		"nothing":                 {4, 4, nil, ""},
		"short":                   {4, 4, []string{"abc"}, "abc"},
		"exactly the limit":       {4, 4, []string{"abcdefgh"}, "abcdefgh"},
		"limit in pieces":         {4, 4, []string{"ab", "cde", "fgh"}, "abcdefgh"},
		"one over":                {4, 4, []string{"abcdefghi"}, "abcd\n[... 1 bytes omitted ...]\nfghi"},
		"long, one write":         {4, 4, []string{"0123456789abcdef"}, "0123\n[... 8 bytes omitted ...]\ncdef"},
		"long, byte by byte":      {4, 4, strings.Split("0123456789abcdef", ""), "0123\n[... 8 bytes omitted ...]\ncdef"},
		"long, odd pieces":        {4, 4, []string{"012", "3456", "789ab", "c", "def"}, "0123\n[... 8 bytes omitted ...]\ncdef"},
		"write ends at ring end":  {2, 3, []string{"ab", "cde", "fgh"}, "ab\n[... 3 bytes omitted ...]\nfgh"},
		"head ends with newline":  {4, 4, []string{"abc\nXXXXXwxyz"}, "abc\n[... 5 bytes omitted ...]\nwxyz"},
		"no tail kept":            {4, 0, []string{"abcdefgh"}, "abcd\n[... 4 bytes omitted ...]\n"},
		"invalid UTF-8":           {4, 4, []string{"a\xffb"}, "a\uFFFDb"},
		"rune split across write": {8, 8, []string{"\xe2\x82", "\xac"}, "€"},
		// "€" is 3 bytes: a head or tail that would cut one in two
		// leaves the whole character out, and counts its bytes.
		"head cuts a rune": {4, 4, []string{"abc€", "123456789"}, "abc\n[... 8 bytes omitted ...]\n6789"},
		"tail cuts a rune": {4, 4, []string{"abcd123456€xy"}, "abcd\n[... 9 bytes omitted ...]\nxy"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCapture(tc.head, tc.tail)
			total := 0
			for _, w := range tc.writes {
				n, err := c.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				total += n
			}
			if got := c.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if c.total != int64(total) {
				t.Errorf("total %d, want %d", c.total, total)
			}
		})
	}
}

// A capture holds no more than its head and tail, however much is
// written.
func TestCaptureBoundedMemory(t *testing.T) {
	t.Parallel()
	c := newCapture(streamLimit/2, streamLimit/2)
	chunk := []byte(strings.Repeat("x", 32<<10))
	for range 1000 { // 32 MB
		c.Write(chunk)
	}
	if cap(c.head) != streamLimit/2 || len(c.ring) != streamLimit/2 {
		t.Errorf("head %d and ring %d bytes, want %d each", cap(c.head), len(c.ring), streamLimit/2)
	}
	if s := c.String(); !strings.Contains(s, "[... 32718000 bytes omitted ...]") {
		t.Errorf("marker missing from %q", s[streamLimit/2-10:streamLimit/2+40])
	}
}
