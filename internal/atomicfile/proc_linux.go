package atomicfile

import (
	"os"
	"strconv"
	"strings"
)

// bootID is the first 8 hex digits of this boot's id.
func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.ReplaceAll(strings.TrimSpace(string(data)), "-", "")
	if err != nil || len(id) < 8 {
		return unknownBoot
	}
	return strings.ToLower(id[:8])
}

// startTime is a process's start time in clock ticks since boot, 0 when
// it cannot be read.
func startTime(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. starttime is field 22; the state
	// after ") " is field 3.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// running reports whether a process of that id and start time runs.
func running(pid int, start uint64) bool {
	if _, err := os.Stat("/proc/self"); err != nil {
		return true // no /proc: cannot tell, so assume it runs
	}
	now := startTime(pid)
	if now == 0 {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return err == nil
	}
	return start == 0 || now == start
}
