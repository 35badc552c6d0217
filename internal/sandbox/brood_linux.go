package sandbox

import (
	"syscall"

	"github.com/agenthost/agenthost/internal/sandbox/stage"
)

// Brood is every process beneath the calling process (see stage.Brood).
type Brood = stage.Brood

// NewBrood returns the brood of the calling process whose leader is the
// child leader (see stage.NewBrood).
func NewBrood(leader int, onLeader func(syscall.WaitStatus)) *Brood {
	return stage.NewBrood(leader, onLeader)
}

// Parent returns the parent of process pid, as /proc/PID/stat says, and
// whether it could be read.
func Parent(pid int) (int, bool) { return stage.Parent(pid) }
