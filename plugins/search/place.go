package main

import (
	"os"
	"runtime"
	"strings"
	"sync"
)

// A walk reaches everything below its start through descriptors, and a
// descriptor follows what it is open on: a directory that another process
// moves out of the workspace root while the walk holds it open can still
// be listed, and its files read, through the descriptor. So the searches
// check where what they report is after they used it, and leave out (and
// count) what is not inside the root then:
//
//   - search_text checks each file that matched after it read it, while
//     it is still open, by asking the kernel for the descriptor's current
//     path (the link /proc/self/fd/N, which follows renames). A file
//     removed since is left out, wherever it was: the kernel names a
//     removed file by where it would be now, not where it was.
//   - search_files checks the names it is about to report, after the
//     walk, by resolving each from the root down without following any
//     symbolic link or "..": a name listed while its directory was out of
//     the root is not there.
//
// So what a search reports was inside the root after it was read or
// listed. What checking after use cannot see: content that another
// process wrote into a file while its directory was out, and took away
// again before moving the directory back; such a process can as well
// write the file inside. Where the kernel cannot say (no /proc), nothing
// is checked; a search under "/" needs no check.
type place struct {
	// root is the workspace root's path as the kernel names it; "" when
	// nothing is checked.
	root string
}

// newPlace returns the place checker of the workspace root ws.
func newPlace(ws *os.Root) place {
	f, err := ws.Open(".")
	if err != nil {
		return place{}
	}
	defer f.Close()
	path, ok := osFile{f}.realPath()
	if !ok || path == "/" {
		return place{}
	}
	return place{root: path}
}

// inside reports whether path, a path the kernel gave for a descriptor,
// is inside the root.
func (p place) inside(path string) bool {
	if p.root == "" {
		return true
	}
	return path == p.root || (strings.HasPrefix(path, p.root) && path[len(p.root)] == '/')
}

// keepInside returns the paths (rel gives each one's path relative to ws)
// that name something inside ws now, resolved from ws down without
// following symbolic links or "..". It reuses the paths' array. Each
// path is resolved on its own, in one system call; the paths are split
// between a few goroutines, one a CPU.
func keepInside[T any](ws *os.Root, paths []T, rel func(T) string) []T {
	inside := make([]bool, len(paths))
	parts := min(runtime.GOMAXPROCS(0), (len(paths)+keepChunk-1)/keepChunk)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := k*len(paths)/parts, (k+1)*len(paths)/parts
		check := func() {
			b := openBeneath(ws)
			defer b.close()
			for i := lo; i < hi; i++ {
				inside[i] = b.exists(rel(paths[i]))
			}
		}
		if k == parts-1 {
			check()
		} else {
			wg.Go(check)
		}
	}
	wg.Wait()
	kept := paths[:0]
	for i, p := range paths {
		if inside[i] {
			kept = append(kept, p)
		}
	}
	clear(paths[len(kept):])
	return kept
}

// keepChunk is the fewest paths keepInside gives a goroutine of its own.
const keepChunk = 256

// holds reports whether what h is open on is inside the root now; h is a
// file or a dirHandle.
func (p place) holds(h interface{ realPath() (string, bool) }) bool {
	if p.root == "" {
		return true
	}
	path, ok := h.realPath()
	return ok && p.inside(path)
}
