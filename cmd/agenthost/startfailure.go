package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// printStartFailure prints, for agenthost plugins, an MCP server that
// failed to start and is remembered so (host.StartFailure): why, when,
// and when it is tried again; it reports whether err was one.
func printStartFailure(w io.Writer, path string, err error) bool {
	f, ok := errors.AsType[*host.StartFailure](err)
	if !ok {
		return false
	}
	now := time.Now()
	state := "failed to start"
	if f.Remembered {
		state = "not started: it failed to start before"
	}
	times := "once"
	if f.Failures > 1 {
		times = fmt.Sprintf("%d times in a row", f.Failures)
	}
	fmt.Fprintf(w, "%s\n  %s: %s\n", path, state, textsafe.Name(f.Reason))
	fmt.Fprintf(w, "  failed: %s (%s ago), %s\n", clock(f.At, now), now.Sub(f.At).Round(time.Second), times)
	fmt.Fprintf(w, "  next try: %s (in %s), or now: agenthost --eager plugins (or any command with --eager)\n",
		clock(f.RetryAt, now), max(f.RetryAt.Sub(now).Round(time.Second), 0))
	return true
}

// clock is t on the local clock: the time of day, with the date when it
// is not today.
func clock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}
