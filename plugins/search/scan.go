package main

import (
	"bytes"
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/internal/workspace"
)

// textSearch is one search_text call.
type textSearch struct {
	m          *matcher
	include    *includeFilter
	context    int
	limit      int
	coll       *collector
	unreadable atomic.Int64
	tooLarge   atomic.Int64
	noEnd      atomic.Int64 // files of unknown size that went on past maxGeneratedSize
	moved      atomic.Int64 // files left out: no longer inside the root after they were read

	mu      sync.Mutex
	workers []*textWorker
}

// textWorker is a worker's reusable state.
type textWorker struct {
	buf   []byte
	spans []span
}

// span is a matching line: its number and its bounds in the buffer.
type span struct {
	num        int
	start, end int
}

func (s *textSearch) newWorker() *textWorker {
	w := &textWorker{buf: getBuffer()}
	s.mu.Lock()
	s.workers = append(s.workers, w)
	s.mu.Unlock()
	return w
}

// release gives the workers' buffers back.
func (s *textSearch) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		putBuffer(w.buf)
		w.buf = nil
	}
	s.workers = nil
}

// buffers keeps read buffers between calls, so that a search does not
// grow new ones to the size of the larger files again.
var buffers struct {
	sync.Mutex
	free [][]byte
}

const keepBuffers = 8

func getBuffer() []byte {
	buffers.Lock()
	defer buffers.Unlock()
	if n := len(buffers.free); n > 0 {
		b := buffers.free[n-1]
		buffers.free = buffers.free[:n-1]
		return b
	}
	return make([]byte, 0, readBufferSize)
}

func putBuffer(b []byte) {
	if cap(b) > keepBufferSize {
		return
	}
	buffers.Lock()
	defer buffers.Unlock()
	if len(buffers.free) < keepBuffers {
		buffers.free = append(buffers.free, b[:0])
	}
}

// windowedReads lets visit read large files a window at a time (see
// readCandidate); tests turn it off to compare.
var windowedReads = true

// visit searches a file the walk found.
func (s *textSearch) visit(w *textWorker, e *entry) {
	if e.typ != 0 && e.typ&fs.ModeSymlink == 0 {
		return // a directory, a device, a pipe, a socket
	}
	if s.include != nil && !s.include.match(e) {
		return
	}
	if e.dir.start.kernel && drainedOnRead[e.name] {
		return
	}
	f, err := e.open()
	if err != nil {
		// A symbolic link that leaves the root, dangles or names a
		// directory is no file to search.
		if e.typ&fs.ModeSymlink == 0 {
			s.unreadable.Add(1)
		}
		return
	}
	use := func(content []byte) {
		r := s.search(w, content, func() string { return displayPath(e.dir.start.rootPath, e.rel()) })
		if r.matches == 0 || bytes.IndexByte(content, 0) >= 0 {
			return // no match, or binary
		}
		if !e.dir.start.place.holds(f) {
			s.moved.Add(1)
			return
		}
		s.coll.add(r)
	}
	if s.m.lineLocal && windowedReads {
		// A regular file where reads fill what they can needs no read
		// to tell its end.
		shortEnds := e.typ == 0 && e.dir.wholeReads
		w.buf, err = readCandidate(f, w.buf, shortEnds, s.m.any, use)
	} else {
		w.buf, err = readWith(f, w.buf, use)
	}
	f.close()
	switch {
	case errors.Is(err, errBinary):
	case errors.Is(err, errTooLarge):
		s.tooLarge.Add(1)
	case errors.Is(err, errNoEnd):
		s.noEnd.Add(1)
	case err != nil && e.typ&fs.ModeSymlink == 0:
		s.unreadable.Add(1)
	}
}

// explicitFile searches a file given in paths. It reports whether the file
// is binary, and so was skipped.
func (s *textSearch) explicitFile(w *textWorker, p workspace.Path) (binary bool, err error) {
	f, err := openInRoot(p.Root, p.Rel)
	if err != nil {
		return false, pathError(p.Arg, err)
	}
	defer f.close()
	place := newPlace(p.Root)
	w.buf, err = readWith(f, w.buf, func(content []byte) {
		if bytes.IndexByte(content, 0) >= 0 {
			binary = true
			return
		}
		r := s.search(w, content, p.Display)
		if r.matches > 0 && !place.holds(f) {
			s.moved.Add(1)
			return
		}
		s.coll.add(r)
	})
	switch {
	case errors.Is(err, errTooLarge):
		s.tooLarge.Add(1)
		return false, nil
	case errors.Is(err, errNoEnd):
		s.noEnd.Add(1)
		return false, nil
	case err != nil:
		return false, pathError(p.Arg, err)
	}
	return binary, nil
}

// search finds the matching lines of buf, a file's content. key names
// the file; it is asked for only when there is a match.
func (s *textSearch) search(w *textWorker, buf []byte, key func() string) fileResult {
	var r fileResult
	spans := w.spans[:0]
	store := false
	line, pos := 1, 0
	// Keep one span more than can be shown: the context after the last
	// shown match stops before it.
	keep := s.limit + 1
	s.m.eachLine(buf, func(start, end int) bool {
		if r.matches == 0 {
			r.key = key()
			store = s.coll.wants(r.key)
		}
		r.matches++
		if store && len(spans) < keep {
			line += bytes.Count(buf[pos:start], newline)
			pos = start
			spans = append(spans, span{line, start, end})
		}
		return true
	})
	w.spans = spans
	if len(spans) == 0 {
		return r
	}
	next := 0 // the line of the first match not shown, if known
	if len(spans) > s.limit {
		next = spans[s.limit].num
		spans = spans[:s.limit]
	}
	r.lines, r.stored, r.size = s.withContext(buf, spans, next, len(r.key))
	return r
}

var newline = []byte{'\n'}

// withContext returns the matching lines with s.context lines before and
// after each; the context after the last one stops before line next,
// unless next is 0. It stops after the match that brings the lines to
// maxOutputBytes (counting keyLen bytes of path on each), and returns how
// many matches it took and about how many bytes the lines make.
func (s *textSearch) withContext(buf []byte, spans []span, next, keyLen int) (lines []outLine, stored, size int) {
	c := s.context
	lines = make([]outLine, 0, min(len(spans)*(1+2*c), 1024))
	last := 0 // the last line added
	from := 0 // lines[from:] are not counted in size yet
	count := func() {
		for _, l := range lines[from:] {
			size += len(l.text) + keyLen + 16
		}
		from = len(lines)
	}
	for i, sp := range spans {
		if count(); size >= maxOutputBytes {
			break
		}
		stored++
		if c > 0 {
			first := max(sp.num-c, last+1)
			at := len(lines)
			start := sp.start
			for n := sp.num - 1; n >= first; n-- {
				end := start - 1
				start = bytes.LastIndexByte(buf[:end], '\n') + 1
				lines = append(lines, outLine{num: n, text: lineText(buf[start:end])})
			}
			reverse(lines[at:])
		}
		lines = append(lines, outLine{num: sp.num, text: lineText(buf[sp.start:sp.end]), match: true})
		last = sp.num
		if c == 0 {
			continue
		}
		stop := sp.num + c
		if i+1 < len(spans) {
			stop = min(stop, spans[i+1].num-1)
		} else if next > 0 {
			stop = min(stop, next-1)
		}
		for n, start := sp.num+1, sp.end+1; n <= stop && start < len(buf); n++ {
			end := len(buf)
			if j := bytes.IndexByte(buf[start:], '\n'); j >= 0 {
				end = start + j
			}
			lines = append(lines, outLine{num: n, text: lineText(buf[start:end])})
			last = n
			start = end + 1
		}
	}
	count()
	return lines, stored, size
}

func reverse(lines []outLine) {
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
}
