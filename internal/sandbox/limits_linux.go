package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// SetLimits sets l on the calling process, whose children inherit it;
// ownUserNS says the process runs in a user namespace of its own,
// without which Processes is not set (see Limits). A limit lower than
// one already in force is kept; one higher is lowered to the hard limit
// in force, which an unprivileged process cannot raise.
func SetLimits(l Limits, ownUserNS bool) error { return setLimitsOf(0, l, ownUserNS) }

// setLimitsOf sets l on process pid (0: the calling one), as SetLimits
// does.
func setLimitsOf(pid int, l Limits, ownUserNS bool) error {
	set := func(resource int, what string, v uint64) error {
		if v == 0 {
			return nil
		}
		var cur unix.Rlimit
		if err := unix.Prlimit(pid, resource, nil, &cur); err != nil {
			return fmt.Errorf("reading the %s limit: %w", what, err)
		}
		v = min(v, cur.Max)
		if err := unix.Prlimit(pid, resource, &unix.Rlimit{Cur: v, Max: v}, nil); err != nil {
			return fmt.Errorf("setting the %s limit: %w", what, err)
		}
		return nil
	}
	if err := set(unix.RLIMIT_DATA, "memory", l.Memory); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_FSIZE, "file size", l.FileSize); err != nil {
		return err
	}
	if ownUserNS {
		return set(unix.RLIMIT_NPROC, "process", l.Processes)
	}
	return nil
}
