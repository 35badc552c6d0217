package sandbox

import "golang.org/x/sys/unix"

// native is arm64, whose system call table (the generic one) has every
// system call deniedSyscalls names and none of amd64's own. 32-bit ARM
// programs, where the kernel runs them, have an audit arch of their own.
var native = arch{audit: unix.AUDIT_ARCH_AARCH64}
