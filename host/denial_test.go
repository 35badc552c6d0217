package host

import (
	"slices"
	"testing"
)

// What runtimes and tools print when a path is refused them, and what
// denials reads of it.
func TestDenialsReadTheWordsOfEachRuntime(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		lines []string
		want  []denial
	}{
		"node":       {[]string{"EACCES: permission denied, open '/w/a b.txt'"}, []denial{{path: "/w/a b.txt", op: "open"}}},
		"node-mkdir": {[]string{"Error: EACCES: permission denied, mkdir '/w/sub'"}, []denial{{path: "/w/sub", op: "mkdir"}}},
		"node-rename": {[]string{"EACCES: permission denied, rename '/w/x' -> '/w/y'"},
			[]denial{{path: "/w/x", op: "rename"}, {path: "/w/y", op: "rename"}}},
		"node-spawn": {[]string{"Error: spawn /usr/bin/git EACCES"}, []denial{{path: "/usr/bin/git", op: "spawn"}}},
		"go":         {[]string{"open /w/x: permission denied"}, []denial{{path: "/w/x", op: "open"}}},
		"go-exec":    {[]string{"fork/exec /usr/bin/sleep: permission denied"}, []denial{{path: "/usr/bin/sleep", op: "exec"}}},
		"python":     {[]string{"PermissionError: [Errno 13] Permission denied: '/w/x'"}, []denial{{path: "/w/x"}}},
		// The script a shell names its message by is not what was refused.
		"dash":      {[]string{"/srv/server.sh: 2: /usr/bin/sleep: Permission denied"}, []denial{{path: "/usr/bin/sleep"}}},
		"dash-make": {[]string{"/srv/server.sh: 3: cannot create /w/out: Permission denied"}, []denial{{path: "/w/out", op: "creat"}}},
		"coreutils": {[]string{"mkdir: cannot create directory '/w/d': Permission denied"}, []denial{{path: "/w/d", op: "creat"}}},
		"npm": {[]string{"npm error code EACCES", "npm error syscall mkdir", "npm error path /home/me/.npm", "npm error errno -13"},
			[]denial{{path: "/home/me/.npm", op: "mkdir"}}},
		"npm-other": {[]string{"npm error code E404", "npm error path /home/me/x"}, nil},
		"go-socket": {[]string{`dial unix /var/run/docker.sock: socket: operation not permitted`},
			[]denial{{path: "/var/run/docker.sock", socket: true}}},
		"node-socket":  {[]string{"Error: connect EPERM /run/x.sock"}, []denial{{path: "/run/x.sock", socket: true}}},
		"not-a-denial": {[]string{"ENOENT: no such file or directory, open '/w/x'"}, nil},
	}
	for name, tc := range cases {
		if got := denials(tc.lines); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}
