package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// streamLimit is how many bytes of each stream run_bash returns: the
// first half and the last half of anything longer, around a marker.
const streamLimit = 50_000

// capture is an io.Writer that keeps the head and the tail of everything
// written to it in bounded memory: the first len(head) bytes, and the
// last len(ring) bytes in a ring buffer. Until more than
// cap(head)+len(ring) bytes have arrived nothing is lost.
type capture struct {
	head  []byte // the first bytes, up to cap(head)
	ring  []byte // the latest bytes after the head, circularly
	pos   int    // where the next byte goes in ring
	full  bool   // ring has wrapped: ring[pos:] is older than ring[:pos]
	total int64  // bytes written in all
}

// newCapture returns a capture keeping headSize bytes at the start and
// tailSize bytes at the end.
func newCapture(headSize, tailSize int) *capture {
	return &capture{head: make([]byte, 0, headSize), ring: make([]byte, tailSize)}
}

// Write keeps what it must of p. It never fails.
func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := cap(c.head) - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(c.ring) == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= len(c.ring) {
		copy(c.ring, p[len(p)-len(c.ring):])
		c.pos, c.full = 0, true
		return n, nil
	}
	k := copy(c.ring[c.pos:], p)
	if k < len(p) {
		copy(c.ring, p[k:])
		c.full = true
	}
	c.pos = (c.pos + len(p)) % len(c.ring)
	if c.pos == 0 && k == len(p) {
		// The write ended exactly at the end of the ring.
		c.full = true
	}
	return n, nil
}

// tail returns the bytes after the head, oldest first.
func (c *capture) tail() []byte {
	if !c.full {
		return c.ring[:c.pos]
	}
	t := make([]byte, 0, len(c.ring))
	t = append(t, c.ring[c.pos:]...)
	return append(t, c.ring[:c.pos]...)
}

// String returns what was written as valid UTF-8 (U+FFFD for bytes that
// are not), with "[... N bytes omitted ...]" between head and tail when
// bytes were dropped. The cut falls on character boundaries, and N
// counts exactly the bytes left out.
func (c *capture) String() string {
	head, tail := c.head, c.tail()
	kept := int64(len(head) + len(tail))
	if kept == c.total {
		return strings.ToValidUTF8(string(head)+string(tail), "\uFFFD")
	}
	head = head[:runeCut(head)]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	omitted := c.total - int64(len(head)+len(tail))
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(string(head), "\uFFFD"))
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes omitted ...]\n", omitted)
	b.WriteString(strings.ToValidUTF8(string(tail), "\uFFFD"))
	return b.String()
}

// runeCut returns the length of b without a character cut short at its
// end.
func runeCut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
