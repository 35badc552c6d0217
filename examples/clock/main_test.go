package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sdktest"
)

// layout is how current_time writes the time.
const layout = "Monday 2006-01-02 15:04:05 MST (-07:00)"

// The clock answers what a model reads, in the zone asked for. The time
// itself moves on; the zone's name and offset, in zones without summer
// time, do not.
func TestCurrentTime(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, plugin, sdktest.Options{})
	for args, zone := range map[string]string{
		`{}`:                            "UTC (+00:00)",
		`{"timezone":"UTC"}`:            "UTC (+00:00)",
		`{"timezone":"Asia/Tokyo"}`:     "JST (+09:00)",
		`{"timezone":"Asia/Kolkata"}`:   "IST (+05:30)",
		`{"timezone":"America/Bogota"}`: "-05 (-05:00)",
	} {
		got := h.Call("current_time", args)
		if !strings.HasSuffix(got, zone) {
			t.Errorf("current_time %s = %q, want it to end in %q", args, got, zone)
		}
		if _, err := time.Parse(layout, got); err != nil {
			t.Errorf("current_time %s = %q: %v", args, got, err)
		}
	}
}

// Each failure is the text the model reads: the tool's own error, and the
// arguments its schema refuses.
func TestCurrentTimeFailures(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, plugin, sdktest.Options{})
	for args, want := range map[string]string{
		`{"timezone":"Mars/Olympus"}`: `Error executing current_time: unknown time zone "Mars/Olympus"`,
		`{"timezone":9}`:              `Error executing current_time: invalid arguments: timezone: type: 9 has type "integer", want "string"`,
		`{"zone":"Europe/Paris"}`:     `Error executing current_time: invalid arguments: unexpected additional properties ["zone"]`,
	} {
		if got := h.Call("current_time", args); got != want {
			t.Errorf("current_time %s = %q, want %q", args, got, want)
		}
	}
	if got, want := h.Call("current_date", `{}`), "Error: tool not found: current_date"; got != want {
		t.Errorf("a tool the clock does not serve: %q, want %q", got, want)
	}
}

// Built and loaded as the host loads it, the clock runs in the sandbox it
// asked for, which lets it read no file: its zones are compiled in.
func TestBinary(t *testing.T) {
	t.Parallel()
	h := sdktest.Binary(t, sdktest.Build(t, "."), sdktest.Options{})
	if got := h.Call("current_time", `{"timezone":"Asia/Tokyo"}`); !strings.HasSuffix(got, "JST (+09:00)") {
		t.Errorf("current_time in Tokyo = %q", got)
	}
	info := h.Tools()[0]
	if info.Plugin != "agenthost-plugin-clock" || !info.Enabled || !info.Annotations.ReadOnly {
		t.Errorf("the host lists the clock as %+v", info)
	}
}
