package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// A plugin whose handshake line is wrong is skipped with a reason that
// quotes the line (bounded) and names what is wrong in it, whatever the
// plugin does next. Each case is a script that prints the line and
// sleeps, one that exits with last words that say why, or a file that
// cannot be executed at all.
func TestBadHandshakeLinesAreNamed(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	cases := map[string]struct {
		stdout, stderr string
		file           string // the whole file, instead of a script
		want           string
	}{
		"fields": {
			stdout: "1|1|unix|/tmp/x",
			want:   `bad handshake line "1|1|unix|/tmp/x": it has 4 fields; want CORE|APP|NETWORK|ADDRESS|grpc`,
		},
		"two-fields": {
			stdout: "1|1",
			want:   `bad handshake line "1|1": it has 2 fields; want CORE|APP|NETWORK|ADDRESS|grpc`,
		},
		"core": {
			stdout: "2|1|unix|/tmp/x|grpc",
			want:   `bad handshake line "2|1|unix|/tmp/x|grpc": its core protocol version (field 1) is "2"; want 1`,
		},
		"app": {
			stdout: "1|one|unix|/tmp/x|grpc",
			want:   `bad handshake line "1|one|unix|/tmp/x|grpc": its protocol version (field 2) is "one"; want 1`,
		},
		"version": {
			stdout: "1|2|unix|/tmp/x|grpc",
			want:   "it speaks another protocol version: Plugin version: 2, Client versions: [1]",
		},
		"network": {
			stdout: "1|1|udp|/tmp/x|grpc",
			want:   `bad handshake line "1|1|udp|/tmp/x|grpc": its network type (field 3) is "udp"; want unix`,
		},
		"protocol": {
			stdout: "1|1|unix|/tmp/x|netrpc",
			want:   `bad handshake line "1|1|unix|/tmp/x|netrpc": its protocol (field 5) is "netrpc"; want grpc`,
		},
		"tls": {
			stdout: "1|1|unix|/tmp/x|grpc|" + strings.Repeat("A", 64),
			want:   `bad handshake line "1|1|unix|/tmp/x|grpc|` + strings.Repeat("A", 64) + `": it offers a TLS certificate (field 6), but the host uses no TLS: leave the field empty`,
		},
		"another descriptor": {
			stdout: "1|1|unix|fd:7|grpc",
			want:   `bad handshake line "1|1|unix|fd:7|grpc": its address (field 4) "fd:7" is not the connection the host passed`,
		},
		"relative": {
			stdout: "1|1|unix|plugin.sock|grpc",
			want:   `bad handshake line "1|1|unix|plugin.sock|grpc": its address (field 4) "plugin.sock" is not an absolute path`,
		},
		"missing": {
			stdout: "1|1|unix|/nonexistent-agenthost-dir/plugin.sock|grpc",
			want:   `bad handshake line "1|1|unix|/nonexistent-agenthost-dir/plugin.sock|grpc": its socket (field 4) does not exist: a plugin listens before it prints the line`,
		},
		"not-socket": {
			stdout: "1|1|unix|/|grpc",
			want:   `bad handshake line "1|1|unix|/|grpc": its address (field 4) "/" is not a unix socket`,
		},
		"tcp": {
			stdout: "1|1|tcp|localhost|grpc",
			want:   `bad handshake line "1|1|tcp|localhost|grpc": its address (field 4) "localhost" is not IP:PORT`,
		},
		"long": {
			stdout: long,
			want:   `it is not an agenthost plugin: its first line of output is longer than 4096 bytes: "` + long[:200] + `…" (4096 bytes)`,
		},
		"cookie": {
			// What go-plugin's server says, and exits, when the cookie is
			// not the one it was built with.
			stderr: "This binary is a plugin. These are not meant to be executed directly.\nPlease execute the program that consumes these plugins, which will\nload any plugins automatically",
			want:   `it exited during start-up (exit status 1): it refused the handshake cookie AGENTHOST_PLUGIN=d1f4a7c2-tool-binary (go-plugin's "This binary is a plugin. These are not meant to be executed directly."): it is a plugin of another program, or expects another cookie`,
		},
		"json-error": {
			// Last words in hclog's JSON format, as another language writes it.
			stderr: `{"@level":"error","@message":"cannot read config.toml","@timestamp":"2026-11-23T10:00:00.123Z"}`,
			want:   "it exited during start-up (exit status 1): cannot read config.toml",
		},
		"no-shebang": {
			file: "echo '1|1|unix|/tmp/x|grpc'\n",
			want: "it cannot be executed: it is neither a program for this system nor a script starting with #!",
		},
		"no-interpreter": {
			file: "#!/nonexistent-agenthost-dir/node\n",
			want: "it cannot be executed: the interpreter its #! line names, or the loader it needs, does not exist",
		},
	}
	dir := t.TempDir()
	grants := map[string]host.Grant{}
	for name, tc := range cases {
		script := "#!/bin/sh\n"
		if tc.stdout != "" {
			script += "printf '%s\\n' '" + tc.stdout + "'\nexec sleep 60\n"
			grants[name] = execGrant(name)[name]
		}
		if tc.stderr != "" {
			script += "printf '%s\\n' '" + tc.stderr + "' >&2\nexit 1\n"
		}
		if tc.file != "" {
			script = tc.file
		}
		if err := os.WriteFile(filepath.Join(dir, host.PluginPrefix+name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reg := load(t, dir, &host.Options{Grants: grants})
	for _, r := range reg.Plugins() {
		name := strings.TrimPrefix(filepath.Base(r.Path), host.PluginPrefix)
		tc, ok := cases[name]
		switch {
		case !ok:
			t.Errorf("a report of %s", r.Path)
		case r.Err == nil:
			t.Errorf("%s loaded", name)
		case r.Err.Error() != tc.want:
			t.Errorf("%s skipped because\n%q\nwant %q", name, r.Err, tc.want)
		}
	}
	if n := len(reg.Plugins()); n != len(cases) {
		t.Errorf("%d reports for %d plugins", n, len(cases))
	}
}
