package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/internal/workspace"
)

// A walk visits the entries below directories in parallel. It opens its
// first directory through the workspace's os.Root, and everything below
// by a single name relative to the open directory that holds it, refusing
// symbolic links (a dirHandle: openat with O_NOFOLLOW on Linux, os.Root
// elsewhere). So nothing it opens lies outside the workspace root,
// whatever symbolic links happen meanwhile, and it cannot loop; what
// another process moves out of the root while the walk holds it open is
// checked after use (see place). A symbolic link to a file is read only
// through the workspace's os.Root, which follows it only while it stays
// inside. Every file is opened without blocking and read only if it is a
// regular file. The walk skips ".git", hidden entries unless asked, what
// the .gitignore, .ignore and .git/info/exclude files of the directories
// on the way (and above the start, up to the workspace root) exclude,
// and the kernel file systems mounted below the start (see
// kernelFileSystems).

// walkStart is a directory a walk starts in.
type walkStart struct {
	ws       *os.Root // the workspace root the directory is in
	rootPath string   // ws's path
	rel      string   // the directory, slash-separated, relative to ws; "" for ws itself
	baseRel  string   // the directory relative to the base that visitors match against; "" for the base
	arg      string   // the directory as the call named it, for messages

	// Set by walk:
	place  place           // where ws is, to check what the walk reads
	skip   map[string]bool // the mount points of kernel file systems below the start, relative to ws
	kernel bool            // the start is in a kernel file system
	// wholeReads tells whether the start is in one of the
	// wholeReadFileSystems, and mounts whether each mount point below it
	// (relative to ws) is.
	wholeReads bool
	mounts     map[string]bool
}

// walkReport is what a walk left out.
type walkReport struct {
	// skipped are the mount points of kernel file systems that the walk
	// did not descend into, as the tools report paths, sorted.
	skipped []string
}

// walkOptions say what a walk skips and where it stops.
type walkOptions struct {
	// hidden includes entries whose names start with ".". ".git" is
	// skipped always.
	hidden bool
	// maxDepth stops the walk maxDepth levels below the start: 1 visits
	// the start directory's entries only. 0 means no limit.
	maxDepth int
	// portable walks with os.Root handles even where a faster way exists.
	portable bool
}

// entry is a directory entry the walk visits.
type entry struct {
	dir  *dirNode
	name string
	typ  fs.FileMode // the type bits: fs.ModeDir, fs.ModeSymlink, 0 for a regular file
}

// rel is the entry's path relative to the workspace root, slash-separated.
func (e *entry) rel() string { return workspace.JoinRel(e.dir.rel, e.name) }

// baseRel is the entry's path relative to the walk's base.
func (e *entry) baseRel() string { return workspace.JoinRel(e.dir.baseRel, e.name) }

// open opens a file entry for reading. A regular file is opened in its
// directory; a symbolic link is followed only while it stays inside the
// workspace root, and only to a regular file.
func (e *entry) open() (file, error) {
	if e.typ&fs.ModeSymlink == 0 {
		return e.dir.h.openFile(e.name)
	}
	return openInRoot(e.dir.start.ws, filepath.FromSlash(e.rel()))
}

// dirNode is an open directory of a walk. It is closed when the last task
// that needs it is done.
type dirNode struct {
	h       dirHandle
	start   *walkStart
	rel     string
	baseRel string
	depth   int // 0 for the start
	ignores *ignoreList
	refs    atomic.Int32
	// wholeReads tells whether the directory is in one of the
	// wholeReadFileSystems.
	wholeReads bool
}

func (d *dirNode) acquire() { d.refs.Add(1) }

func (d *dirNode) release() {
	if d.refs.Add(-1) == 0 {
		d.h.close()
	}
}

// task is a unit of a walk's work: a directory to open and list (parent
// and name), or files of an open directory to visit (dir and files).
type task struct {
	parent *dirNode
	name   string
	start  *walkStart // with h: a start directory
	h      dirHandle
	dir    *dirNode
	files  []entry
}

// filesPerTask is how many files of one directory a task visits; the rest
// go to other workers.
const filesPerTask = 64

// walk visits the entries below the starts with a few goroutines, each
// with its own state from newState. Visits run concurrently, in no
// particular order. It returns ctx's error if ctx ended before the walk
// did; the visits may then be incomplete. An error opening a start is in
// the words of the tools, naming the start as the call did.
func walk[S any](ctx context.Context, starts []*walkStart, opts walkOptions, newState func() S, visit func(S, *entry)) (walkReport, error) {
	w := &walker[S]{opts: opts, visit: visit}
	w.cond = sync.NewCond(&w.mu)
	stop := context.AfterFunc(ctx, func() {
		w.stopped.Store(true)
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()

	var handles []dirHandle
	closeAll := func() {
		for _, h := range handles {
			h.close()
		}
	}
	var mounts map[string]string
	places := map[*os.Root]place{}
	for i, s := range starts {
		h, err := openStartDir(s.ws, filepath.FromSlash(nonEmpty(s.rel)), opts.portable)
		if err != nil {
			closeAll()
			return walkReport{}, pathError(s.arg, err)
		}
		handles = append(handles, h)
		if _, ok := places[s.ws]; !ok {
			places[s.ws] = newPlace(s.ws)
		}
		s.place = places[s.ws]
		if i == 0 {
			mounts = currentMounts()
		}
		s.skip, s.kernel, s.wholeReads, s.mounts = nil, false, false, nil
		if dir, ok := h.realPath(); ok {
			fsType := fileSystemOf(mounts, dir)
			s.kernel = kernelFileSystems[fsType]
			s.wholeReads = wholeReadFileSystems[fsType]
			for rel, fsType := range mountsBelow(mounts, dir) {
				if s.mounts == nil {
					s.mounts = map[string]bool{}
				}
				s.mounts[workspace.JoinRel(s.rel, rel)] = wholeReadFileSystems[fsType]
				if kernelFileSystems[fsType] {
					if s.skip == nil {
						s.skip = map[string]bool{}
					}
					s.skip[workspace.JoinRel(s.rel, rel)] = true
				}
			}
		}
	}
	for i, s := range starts {
		w.push(task{start: s, h: handles[i]})
	}

	var wg sync.WaitGroup
	for range defaultWorkers() {
		wg.Go(func() { w.work(newState()) })
	}
	wg.Wait()
	slices.SortFunc(w.skipped, comparePaths)
	return walkReport{skipped: slices.Compact(w.skipped)}, ctx.Err()
}

// defaultWorkers is the walk's parallelism: a worker more than there are
// CPUs, so that one waiting on the disk does not leave a CPU idle.
func defaultWorkers() int {
	return runtime.GOMAXPROCS(0) + 1
}

func nonEmpty(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

type walker[S any] struct {
	opts    walkOptions
	visit   func(S, *entry)
	stopped atomic.Bool

	mu      sync.Mutex
	cond    *sync.Cond
	tasks   []task
	pending int      // tasks queued or running
	skipped []string // see walkReport
}

func (w *walker[S]) push(t task) {
	w.mu.Lock()
	w.tasks = append(w.tasks, t)
	w.pending++
	w.mu.Unlock()
	w.cond.Signal()
}

// pop returns the newest task, waiting while others may still add some;
// ok is false when the walk is over.
func (w *walker[S]) pop() (t task, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.tasks) == 0 && w.pending > 0 {
		w.cond.Wait()
	}
	if len(w.tasks) == 0 {
		return task{}, false
	}
	t = w.tasks[len(w.tasks)-1]
	w.tasks[len(w.tasks)-1] = task{}
	w.tasks = w.tasks[:len(w.tasks)-1]
	return t, true
}

func (w *walker[S]) done() {
	w.mu.Lock()
	w.pending--
	last := w.pending == 0
	w.mu.Unlock()
	if last {
		w.cond.Broadcast()
	}
}

func (w *walker[S]) work(state S) {
	for {
		t, ok := w.pop()
		if !ok {
			return
		}
		switch {
		case w.stopped.Load():
			w.drop(t)
		case t.dir != nil:
			w.visitFiles(state, t.dir, t.files)
			t.dir.release()
		case t.start != nil:
			d := &dirNode{h: t.h, start: t.start, rel: t.start.rel, baseRel: t.start.baseRel, wholeReads: t.start.wholeReads}
			w.list(state, d, w.startIgnores(t.start))
		default:
			h, err := t.parent.h.openDir(t.name)
			if err == nil {
				p := t.parent
				d := &dirNode{h: h, start: p.start, rel: workspace.JoinRel(p.rel, t.name), baseRel: workspace.JoinRel(p.baseRel, t.name), depth: p.depth + 1, wholeReads: p.wholeReads}
				if whole, ok := p.start.mounts[d.rel]; ok {
					d.wholeReads = whole
				}
				w.list(state, d, p.ignores)
			}
			t.parent.release()
		}
		w.done()
	}
}

// drop releases what a task holds without doing it.
func (w *walker[S]) drop(t task) {
	switch {
	case t.dir != nil:
		t.dir.release()
	case t.start != nil:
		t.h.close()
	default:
		t.parent.release()
	}
}

// startIgnores reads the ignore files of the directories above a start,
// from the workspace root down.
func (w *walker[S]) startIgnores(s *walkStart) *ignoreList {
	var list *ignoreList
	if s.rel == "" {
		return nil
	}
	dirs := []string{""}
	for i := 0; i < len(s.rel); i++ {
		if s.rel[i] == '/' {
			dirs = append(dirs, s.rel[:i])
		}
	}
	for _, d := range dirs {
		var contents [][]byte
		if data, err := readInRoot(s.ws, filepath.Join(filepath.FromSlash(d), filepath.Join(gitExclude[:]...))); err == nil {
			contents = append(contents, data)
		}
		for _, name := range ignoreFileNames {
			if data, err := readInRoot(s.ws, filepath.FromSlash(workspace.JoinRel(d, name))); err == nil {
				contents = append(contents, data)
			}
		}
		list = list.withRules(d, contents...)
	}
	return list
}

// list reads d, a directory just opened, queues its subdirectories and
// its files, and visits the first files itself; ignores are the ignore
// rules of the directories above.
func (w *walker[S]) list(state S, d *dirNode, ignores *ignoreList) {
	h, start, rel, depth := d.h, d.start, d.rel, d.depth
	d.refs.Store(1)
	defer d.release()

	ents, err := h.readDir()
	if err != nil && len(ents) == 0 {
		return
	}

	var contents [][]byte
	for _, e := range ents {
		if e.name == gitExclude[0] && e.typ.IsDir() {
			if data, err := readBelow(h, gitExclude[:]); err == nil {
				contents = append(contents, data)
			}
			break
		}
	}
	for _, name := range ignoreFileNames {
		for _, e := range ents {
			if e.name == name && !e.typ.IsDir() {
				if data, err := readIn(h, name); err == nil {
					contents = append(contents, data)
				}
				break
			}
		}
	}
	d.ignores = ignores.withRules(rel, contents...)

	descend := w.opts.maxDepth == 0 || depth+1 < w.opts.maxDepth
	files := make([]entry, 0, len(ents))
	for _, de := range ents {
		name := de.name
		if name == ".git" || (!w.opts.hidden && strings.HasPrefix(name, ".")) {
			continue
		}
		typ := de.typ
		isDir := typ.IsDir()
		if d.ignores != nil && d.ignores.ignored(workspace.JoinRel(rel, name), name, isDir) {
			continue
		}
		if !isDir {
			files = append(files, entry{dir: d, name: name, typ: typ})
			continue
		}
		e := entry{dir: d, name: name, typ: typ}
		w.visit(state, &e)
		if start.skip != nil && start.skip[workspace.JoinRel(rel, name)] {
			w.skip(start, workspace.JoinRel(rel, name))
			continue
		}
		if descend {
			d.acquire()
			w.push(task{parent: d, name: name})
		}
	}
	for len(files) > filesPerTask {
		n := len(files) - filesPerTask
		d.acquire()
		w.push(task{dir: d, files: files[n:]})
		files = files[:n]
	}
	w.visitFiles(state, d, files)
}

// skip records a kernel file system's mount point not descended into.
func (w *walker[S]) skip(start *walkStart, rel string) {
	w.mu.Lock()
	w.skipped = append(w.skipped, displayPath(start.rootPath, rel))
	w.mu.Unlock()
}

// readIn reads the file name of directory h, for use after it is closed.
func readIn(h dirHandle, name string) ([]byte, error) {
	f, err := h.openFile(name)
	if err != nil {
		return nil, err
	}
	defer f.close()
	return readSmall(f)
}

func (w *walker[S]) visitFiles(state S, d *dirNode, files []entry) {
	for i := range files {
		if w.stopped.Load() {
			return
		}
		w.visit(state, &files[i])
	}
}
