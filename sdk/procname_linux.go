package sdk

import (
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nameProcess gives the process the name of its binary in ps and top.
// The host executes the very file it checked, through /proc/self/fd, so
// the kernel names the process after the descriptor's number.
func nameProcess() {
	name := []byte(filepath.Base(os.Args[0]))
	name = append(name[:min(len(name), 15)], 0) // the kernel keeps 15 bytes
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
}
