package sandbox

import "golang.org/x/sys/unix"

// native is amd64: x32's system calls share its audit arch, with the x32
// bit set in their numbers; and it has three system calls of its own to
// deny, which reach the hardware (I/O ports) or load a library the old
// way (uselib, a.out).
var native = arch{
	audit:  unix.AUDIT_ARCH_X86_64,
	x32:    true,
	denied: []uint32{unix.SYS_USELIB, unix.SYS_IOPL, unix.SYS_IOPERM},
}
