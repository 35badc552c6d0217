package main

import "golang.org/x/sys/unix"

// closeInheritedOnExec marks every descriptor beyond stdio that the
// process inherited close-on-exec: a descriptor its parent left open
// (a shell's 7<secret) reaches no plugin, MCP server or command. (Each
// sandbox's first process does the same for what it is given.)
func closeInheritedOnExec() {
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
