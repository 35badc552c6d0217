package host

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// Limits bound each process that a plugin or MCP server runs, and what
// it starts, in its sandbox: a command of run_bash is held to the bash
// plugin's. A zero field is the default (DefaultLimits), Unlimited none.
type Limits struct {
	// Memory is the data each process may hold, in bytes: its heap and
	// private writable mappings; what a runtime only reserves (Go's,
	// V8's, the JVM's large reservations) does not count.
	Memory uint64
	// Processes is how many processes and threads the sandbox may run
	// at once. It holds in a user namespace of the sandbox's own (see
	// agenthost plugins), for a host that is not root.
	Processes uint64
	// FileSize is the largest file a process may write, in bytes.
	FileSize uint64
}

// Unlimited, as a field of Limits, lifts that limit.
const Unlimited = math.MaxUint64

// DefaultLimits are the limits of a plugin or MCP server that no grant
// changes: room for a language server, an npx server or a Go build in
// run_bash, not for a process that takes the machine.
var DefaultLimits = Limits{Memory: 4 << 30, Processes: 2048, FileSize: 8 << 30}

// raise returns l with each field of m that is set and higher.
func (l Limits) raise(m Limits) Limits {
	return Limits{Memory: max(l.Memory, m.Memory), Processes: max(l.Processes, m.Processes), FileSize: max(l.FileSize, m.FileSize)}
}

// or returns l with its zero fields taken from d.
func (l Limits) or(d Limits) Limits {
	pick := func(v, def uint64) uint64 {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{Memory: pick(l.Memory, d.Memory), Processes: pick(l.Processes, d.Processes), FileSize: pick(l.FileSize, d.FileSize)}
}

// sandbox is l as the sandbox sets it: Unlimited is no limit.
func (l Limits) sandbox() sandbox.Limits {
	unset := func(v uint64) uint64 {
		if v == Unlimited {
			return 0
		}
		return v
	}
	return sandbox.Limits{Memory: unset(l.Memory), Processes: unset(l.Processes), FileSize: unset(l.FileSize)}
}

// String says l for a person: "memory 4 GiB a process, 2048 processes,
// files up to 8 GiB".
func (l Limits) String() string {
	show := func(v uint64, size bool) string {
		switch {
		case v == 0 || v == Unlimited:
			return "unlimited"
		case size:
			return FormatSize(v)
		}
		return strconv.FormatUint(v, 10)
	}
	return fmt.Sprintf("memory %s a process, %s processes, files up to %s", show(l.Memory, true), show(l.Processes, false), show(l.FileSize, true))
}

// sizeUnits are the units ParseSize reads, by their factor.
var sizeUnits = []struct {
	name   string
	factor uint64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseSize reads a size as grants write it: a number of bytes, or a
// number followed by KiB, MiB, GiB or TiB ("512MiB", "4GiB"), or
// "unlimited".
func ParseSize(s string) (uint64, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	num, factor := s, uint64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.name); ok {
			num, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || v == 0 || v > math.MaxUint64/factor {
		return 0, fmt.Errorf("%q is not a size (want a number of bytes, or one followed by KiB, MiB, GiB or TiB, or unlimited)", s)
	}
	return v * factor, nil
}

// FormatSize writes a size in the largest unit that divides it.
func FormatSize(v uint64) string {
	for _, u := range sizeUnits {
		if v >= u.factor && v%u.factor == 0 {
			return strconv.FormatUint(v/u.factor, 10) + " " + u.name
		}
	}
	return strconv.FormatUint(v, 10) + " B"
}
