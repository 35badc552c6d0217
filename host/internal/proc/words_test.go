package proc

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// The stderr of servers that failed to start, as users met them: the
// last line misled each time.
var failures = map[string]struct{ stderr, want string }{
	"node-missing-package": {
		stderr: `node:internal/modules/esm/resolve:873
  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);
        ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /srv/server.mjs
    at packageResolve (node:internal/modules/esm/resolve:873:9)
    at moduleResolve (node:internal/modules/esm/resolve:946:18)
    at ModuleJob._link (node:internal/modules/esm/module_job:168:49) {
  code: 'ERR_MODULE_NOT_FOUND'
}

Node.js v20.20.2
`,
		want: "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /srv/server.mjs | code: 'ERR_MODULE_NOT_FOUND'",
	},
	"exec-refused": {
		stderr: "/srv/server.sh: 2: /usr/bin/sleep: Permission denied\n/usr/bin/npx: Success\n",
		want:   "/srv/server.sh: 2: /usr/bin/sleep: Permission denied | /usr/bin/npx: Success",
	},
	"docker": {
		stderr: "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n\nRun 'docker run --help' for more information\n",
		want:   "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
	},
	"npm-cache": {
		stderr: `npm error code EACCES
npm error syscall mkdir
npm error path /home/me/.npm
npm error errno -13
npm error
npm error Your cache folder contains root-owned files, due to a bug in
npm error previous versions of npm which has since been addressed.
npm error
npm error A complete log of this run can be found in: /home/me/.npm/_logs/2026-11-27T10_00_00_000Z-debug-0.log
npm error You can rerun the command with ` + "`--loglevel=verbose`" + ` to see the logs in your terminal
`,
		want: "npm error code EACCES | npm error syscall mkdir | npm error path /home/me/.npm | npm error previous versions of npm which has since been addressed.",
	},
	"python": {
		stderr: `Traceback (most recent call last):
  File "/srv/server.py", line 1, in <module>
    import mcp
ModuleNotFoundError: No module named 'mcp'
`,
		want: "Traceback (most recent call last): | ModuleNotFoundError: No module named 'mcp'",
	},
	"go-panic": {
		stderr: "starting\npanic: no config\n\ngoroutine 1 [running]:\nmain.main()\n\t/srv/main.go:9 +0x25\nexit status 2\n",
		want:   "panic: no config",
	},
	"no-error-line": {
		stderr: "one\ntwo\nthree\nfour\n",
		want:   "two | three | four",
	},
	"json": {
		stderr: `{"@level":"info","@message":"starting"}` + "\n" + `{"@level":"error","@message":"cannot read config.toml","@timestamp":"2026-11-23T10:00:00.123Z"}` + "\n",
		want:   "cannot read config.toml",
	},
}

func TestWordsNameTheCauseNotTheLastLine(t *testing.T) {
	t.Parallel()
	for name, tc := range failures {
		var w Words
		if _, err := w.Write([]byte(tc.stderr)); err != nil {
			t.Fatal(err)
		}
		if got := w.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
		// The same, a byte at a time, and from LogStderr's lines.
		var bytewise Words
		for i := range len(tc.stderr) {
			_, _ = bytewise.Write([]byte{tc.stderr[i]})
		}
		if got := bytewise.String(); got != tc.want {
			t.Errorf("%s, written a byte at a time: %q", name, got)
		}
		var logged Words
		LogStderr(hclog.NewNullLogger(), strings.NewReader(tc.stderr), &logged)
		if got := logged.String(); got != tc.want {
			t.Errorf("%s, from LogStderr: %q", name, got)
		}
	}
}

func TestWordsKeepALastLineWithoutNewline(t *testing.T) {
	t.Parallel()
	var w Words
	_, _ = w.Write([]byte("starting\nError: no tok"))
	_, _ = w.Write([]byte("en"))
	w.flush()
	if got := w.String(); got != "Error: no token" {
		t.Errorf("words = %q", got)
	}
}

// A hostile process cannot forge lines or paint the terminal through its
// last words, nor make them long, whatever it writes.
func TestWordsOfAHostileProcessAreBoundedAndInert(t *testing.T) {
	t.Parallel()
	var w Words
	_, _ = w.Write([]byte("Error: \x1b[31mred\x1b[0m\r\n\u202eevil\nError: fake\n[WARN] forged log line\n"))
	long := strings.Repeat("Error: x", 1<<20)
	_, _ = w.Write([]byte(long))
	_, _ = w.Write([]byte(long + "\n"))
	for range 10000 {
		_, _ = w.Write([]byte("Error: again and again and again\n"))
	}
	got := w.String()
	if strings.ContainsAny(got, "\x1b\r\n\u202e") {
		t.Errorf("words hold a control character: %q", got)
	}
	if !strings.HasPrefix(got, `Error: \x1b[31mred\x1b[0m | Error: fake | Error: xError: x`) || !strings.HasSuffix(got, "… | Error: again and again and again") {
		t.Errorf("words = %q", got)
	}
	if len(got) > maxWords {
		t.Errorf("words are %d bytes", len(got))
	}
	for _, l := range w.Lines() {
		if len(l) > maxKept {
			t.Errorf("a line of %d bytes is kept", len(l))
		}
	}
	if n := len(w.Lines()); n > maxFirst+maxRecent {
		t.Errorf("%d lines are kept", n)
	}
}

// After Mark, what was written before does not explain how the process
// ends: a warning at start is no cause of a crash an hour later.
func TestWordsAfterMarkAreNew(t *testing.T) {
	t.Parallel()
	var w Words
	_, _ = w.Write([]byte("Error: GITHUB_TOKEN is not set; some tools are off\nready\n"))
	w.Mark()
	if got := w.String(); got != "" {
		t.Errorf("words after Mark = %q", got)
	}
	if got := w.Lines(); len(got) != 0 {
		t.Errorf("lines after Mark = %q", got)
	}
	_, _ = w.Write([]byte("fatal: out of disk\n"))
	if got := w.String(); got != "fatal: out of disk" {
		t.Errorf("words = %q", got)
	}
}
