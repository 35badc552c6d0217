package host_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// What a plugin writes to its stderr reaches the host's log line by line:
// hclog's JSON format with its level, message and fields, whatever the
// precision of its timestamp (Node's and Python's loggers write
// milliseconds, Go's microseconds), and other lines by their [LEVEL]
// prefix, or at debug level.
func TestPluginLogLinesKeepTheirLevels(t *testing.T) {
	t.Parallel()
	reg, _, logs := loadBare(t, "bare")
	const name = "agenthost-plugin-bare.agenthost-plugin-bare: "
	cases := []struct{ line, want string }{
		{
			`{"@level":"warn","@message":"written by node","@timestamp":"2026-11-23T10:00:00.123Z","@module":"node"}`,
			"[WARN]  " + name + "written by node: @module=node timestamp=2026-11-23T10:00:00.123Z\n",
		},
		{
			`{"@level":"error","@message":"written by python","@timestamp":"2026-11-23T10:00:00.123+00:00","attempt":3}`,
			"[ERROR] " + name + "written by python: attempt=3 timestamp=2026-11-23T10:00:00.123Z\n",
		},
		{
			`{"@level":"info","@message":"whole seconds","@timestamp":"2026-11-23T10:00:00Z"}`,
			"[INFO]  " + name + "whole seconds: timestamp=2026-11-23T10:00:00.000Z\n",
		},
		{
			`{"@level":"debug","@message":"written by go","@timestamp":"2026-11-23T10:00:00.123456Z"}`,
			"[DEBUG] " + name + "written by go: timestamp=2026-11-23T10:00:00.123Z\n",
		},
		{
			`{"@level":"WARNING","@message":"python's level name, and its own time","@timestamp":"2026-11-23 10:00:00,123"}`,
			"[WARN]  " + name + `python's level name, and its own time: timestamp="2026-11-23 10:00:00,123"` + "\n",
		},
		{
			// go-plugin's own reader took "@message" for a string, and
			// crashed the host on this line.
			`{"@level":"error","@message":42}`,
			"[ERROR] " + name + "42\n",
		},
		{
			`{"@message":"no level"}`,
			"[DEBUG] " + name + `{"@message":"no level"}` + "\n",
		},
		{"[WARN] a text line", "[WARN]  " + name + "[WARN] a text line\n"},
		{"plain text", "[DEBUG] " + name + "plain text\n"},
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	args, err := json.Marshal(map[string]any{"lines": lines})
	if err != nil {
		t.Fatal(err)
	}
	call(t, reg, "bare_log", string(args))
	for _, c := range cases {
		eventually(t, "the host logs "+c.line, func() bool { return strings.Contains(logs.String(), c.want) })
	}
}
