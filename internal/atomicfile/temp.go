package atomicfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Temporary names are short and fixed in shape, whatever the name they
// stand in for, so a name of any valid length can be written, and a
// sweep recognises them exactly:
//
//	.agenthost-BOOT-PID-START-RANDOM.KIND
//
// BOOT is the first 8 hex digits of the kernel's boot id, PID and START
// the writing process's id and start time (clock ticks since boot), and
// RANDOM 8 base-36 digits; KIND is tmp for a write, move for a copy.
// Anything else is never touched. parseTempName recognises the shape
// by hand: a regexp compiled at start-up would cost every process that
// links this package half a millisecond.

// StaleAge is how old a temporary file of a process that is gone must be
// before Sweep removes it: a process in another PID namespace sharing the
// directory looks gone, and its write under way must be left alone.
const StaleAge = 10 * time.Minute

// TempName returns a new temporary name for this process: kind is "tmp"
// or "move".
func TempName(kind string) string {
	id := self()
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var r [8]byte
	for i := range r {
		r[i] = digits[rand.N(len(digits))]
	}
	return ".agenthost-" + id.boot + "-" + strconv.Itoa(id.pid) + "-" + strconv.FormatUint(id.start, 10) + "-" + string(r[:]) + "." + kind
}

// IsTempName reports whether name has the exact shape of a temporary
// name of this package.
func IsTempName(name string) bool {
	_, ok := parseTempName(name)
	return ok
}

// tempFields are the parts of a temporary name that identify its writer.
type tempFields struct {
	boot, pid, start string
}

// parseTempName splits a name of the shape
// ^\.agenthost-[0-9a-f]{8}-[1-9][0-9]{0,9}-[0-9]{1,20}-[0-9a-z]{8}\.(tmp|move)$
// into its fields, and reports whether it has that shape.
func parseTempName(name string) (tempFields, bool) {
	const prefix = ".agenthost-"
	var f tempFields
	if len(name) < len(prefix) || name[:len(prefix)] != prefix {
		return f, false
	}
	rest := name[len(prefix):]
	field := func(min, max int, ok func(byte) bool) (string, bool) {
		i := 0
		for i < len(rest) && i < max && ok(rest[i]) {
			i++
		}
		if i < min || i >= len(rest) {
			return "", false
		}
		v := rest[:i]
		rest = rest[i:]
		return v, true
	}
	hex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	base36 := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' }
	sep := func(c byte) bool {
		if rest[0] != c {
			return false
		}
		rest = rest[1:]
		return true
	}
	var ok bool
	if f.boot, ok = field(8, 8, hex); !ok || !sep('-') {
		return f, false
	}
	if f.pid, ok = field(1, 10, digit); !ok || f.pid[0] == '0' || !sep('-') {
		return f, false
	}
	if f.start, ok = field(1, 20, digit); !ok || !sep('-') {
		return f, false
	}
	if _, ok = field(8, 8, base36); !ok || !sep('.') {
		return f, false
	}
	if rest != "tmp" && rest != "move" {
		return f, false
	}
	return f, true
}

// createTemp creates a new temporary file in dir of root, readable and
// writable by its owner only until it is given its final mode.
func createTemp(root *os.Root, dir, kind string) (*os.File, string, error) {
	var err error
	for range 100 {
		name := filepath.Join(dir, TempName(kind))
		var f *os.File
		f, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return nil, "", err
}

// procID identifies a process across PID reuse and reboots.
type procID struct {
	boot  string // 8 hex digits, or "00000000" when unknown
	pid   int
	start uint64 // 0 when unknown
}

var (
	selfOnce sync.Once
	selfID   procID
)

// self is this process's identity, read once.
func self() procID {
	selfOnce.Do(func() {
		selfID = procID{boot: bootID(), pid: os.Getpid(), start: startTime(os.Getpid())}
	})
	return selfID
}

// gone reports whether the process that made a temporary name is
// certainly gone: another boot, or no process of that id and start time.
func gone(name string) bool {
	t, ok := parseTempName(name)
	if !ok {
		return false
	}
	me := self()
	boot, pid := t.boot, t.pid
	start, err := strconv.ParseUint(t.start, 10, 64)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	if boot != me.boot && boot != unknownBoot && me.boot != unknownBoot {
		return true
	}
	if n == me.pid && start == me.start {
		return false // ours, under way
	}
	return !running(n, start)
}

const unknownBoot = "00000000"

var (
	sweptMu sync.Mutex
	swept   = map[string]bool{} // directories swept by this process
)

// Sweep removes the temporary files and copies that processes now gone
// left in dir of root (a SIGKILL or a crash mid-write), once per
// directory per process: entries whose name has the exact shape of
// TempName, whose process is gone (see above) and that were last
// modified StaleAge ago or more. It never removes anything else, and
// reports nothing: it is housekeeping.
func Sweep(root *os.Root, dir string) {
	key := sweepKey(root, dir)
	if key == "" {
		return
	}
	sweptMu.Lock()
	done := swept[key]
	swept[key] = true
	sweptMu.Unlock()
	if done {
		return
	}
	SweepNow(root, dir, time.Now().Add(-StaleAge))
}

// SweepNow is Sweep without the once-per-directory rule, removing what
// was last modified before cutoff. It returns the names removed.
func SweepNow(root *os.Root, dir string, cutoff time.Time) []string {
	d, err := root.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	var removed []string
	for {
		names, err := d.Readdirnames(1024)
		for _, name := range names {
			if !IsTempName(name) || !gone(name) {
				continue
			}
			p := filepath.Join(dir, name)
			info, err := root.Lstat(p)
			if err != nil || info.ModTime().After(cutoff) {
				continue
			}
			if filepath.Ext(name) == ".tmp" && !info.Mode().IsRegular() {
				continue
			}
			if root.RemoveAll(p) == nil {
				removed = append(removed, name)
			}
		}
		if err != nil || len(names) == 0 {
			return removed
		}
	}
}
