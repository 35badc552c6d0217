package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// A run_bash command runs under the limits of the bash plugin's sandbox,
// which grants change; one that runs into a limit fails, and the answer
// names the limit and the grant that raises it.
func TestRunBashLimits(t *testing.T) {
	t.Parallel()
	_, g, err := host.ParseGrant("bash=file-size:1MiB,memory:256MiB,processes:400")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	reg := load(t, pluginDir(t, "bash"), &host.Options{Roots: []string{root}, Grants: map[string]host.Grant{"bash": g}})
	if err := reg.Enable("run_bash"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		command, stderr string
		exit            int
	}{
		"a file past the limit": {
			command: "head -c 2000000 /dev/zero > big",
			stderr:  "[the command ran into the file size limit of its sandbox, 1 MiB: a retry will fail the same way; the user can raise it with --grant bash=file-size:SIZE]",
			exit:    153,
		},
		"memory past the limit": {
			command: "/usr/bin/python3 -c 'x = bytearray(512 << 20)'",
			stderr:  "[the command ran into the memory limit of its sandbox, 256 MiB a process: a retry will fail the same way; the user can raise it with --grant bash=memory:SIZE]",
			exit:    1,
		},
		"processes past the limit": {
			command: "/usr/bin/python3 -c 'import threading, time\nfor _ in range(600): threading.Thread(target=time.sleep, args=(5,), daemon=True).start()'",
			stderr:  "[the command ran into the process limit of its sandbox, 400 processes and threads: a retry will fail the same way; the user can raise it with --grant bash=processes:N]",
			exit:    1,
		},
		"within the limits": {command: "head -c 100000 /dev/zero > small && /usr/bin/python3 -c 'x = bytearray(64 << 20)'"},
	} {
		t.Run(name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"command": tc.command})
			var out struct {
				Stderr   string `json:"stderr"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(call(t, reg, "run_bash", string(args))), &out); err != nil {
				t.Fatal(err)
			}
			if out.ExitCode != tc.exit || !strings.HasSuffix(out.Stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr ending %q", out.ExitCode, out.Stderr, tc.exit, tc.stderr)
			}
		})
	}
}
