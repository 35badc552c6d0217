package host

import (
	"errors"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// execPath is the path the launch executes, and the files the process
// inherits for it.
//
// A binary is executed as /proc/self/fd/N, N being the host's descriptor
// of it: the kernel executes the very file that was checked, and the
// descriptor, which is close-on-exec, does not reach the plugin.
//
// A script's interpreter opens the script by the name the kernel gives it,
// once the exec has closed the host's descriptors. So under a lock a
// script is handed over as the plugin's descriptor 3 and executed as
// /proc/self/fd/3, and its interpreter reads the file that was hashed;
// the script keeps that read-only descriptor, and its $0 is
// /proc/self/fd/3. Without a lock nothing of a script's content is
// checked, and it is executed by its path, as usual.
func (b *openedBinary) execPath(locked bool) (string, []*os.File, error) {
	if !procFD() {
		if locked {
			return "", nil, errors.New("cannot execute the file that was checked against the lock: /proc is not mounted")
		}
		return b.path, nil, nil
	}
	if b.script {
		if !locked {
			return b.path, nil, nil
		}
		return "/proc/self/fd/3", []*os.File{b.file}, nil
	}
	fd := int(b.file.Fd())
	if fd < 3 {
		// The child's stdio takes 0 to 2 before the exec.
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return "", nil, err
		}
		b.file.Close()
		b.file = os.NewFile(uintptr(dup), b.path)
		fd = dup
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil, nil
}

// procFD reports whether /proc/self/fd can be used.
var procFD = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})
