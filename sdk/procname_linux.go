package sdk

import (
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/wire"
)

// A plugin started by a host is named in init, which runs on the main
// thread: the name ps and top show is the main thread's, and PR_SET_NAME
// renames only the calling thread, which in Serve, after init, may be
// another. A program that merely imports the sdk (a host) is left alone.
func init() {
	if os.Getenv(wire.CookieKey) == wire.CookieValue {
		nameProcess()
	}
}

// nameProcess gives the calling thread, the main one, the name of its
// binary in ps and top. The host executes the very file it checked,
// through /proc/self/fd, so the kernel names the process after the
// descriptor's number.
func nameProcess() {
	name := []byte(filepath.Base(os.Args[0]))
	name = append(name[:min(len(name), 15)], 0) // the kernel keeps 15 bytes
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
}
