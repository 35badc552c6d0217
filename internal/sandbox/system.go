package sandbox

import (
	"bufio"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// programDirs hold programs and their shared libraries.
var programDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/nix/store"}

// System returns the rules a program needs to run and nothing more: read
// access to the directories of shared libraries and programs, to /etc
// (name service, time zones, certificates) but its secrets (see
// etcSecrets), and to the harmless devices
// (/dev/null, which may be written too, /dev/zero, /dev/full,
// /dev/random, /dev/urandom), and to /proc, which runtimes read of
// themselves (/proc/self). Neither the home directory nor /tmp is among
// them. In /proc, what could serve an attack on another process — its
// memory, environment, open files — is guarded by the kernel's ptrace
// check, which Landlock answers no for any process outside the sandbox.
//
// With programs, the program directories may be executed too: that is
// what running other programs takes. Without it, a process may execute
// only the files that rules name (see Interpreters).
func System(programs bool) []Rule {
	dirAccess := Read
	if programs {
		dirAccess |= Execute
	}
	var rules []Rule
	for _, d := range programDirs {
		rules = append(rules, Rule{Path: d, Access: dirAccess})
	}
	rules = append(rules,
		Rule{Path: "/etc", Access: Read},
		Rule{Path: "/dev/null", Access: Read | Write},
		Rule{Path: "/dev/full", Access: Read | Write},
		Rule{Path: "/dev/zero", Access: Read},
		Rule{Path: "/dev/random", Access: Read},
		Rule{Path: "/dev/urandom", Access: Read},
		Rule{Path: "/proc", Access: Read},
	)
	return rules
}

// Interpreters returns what the kernel runs, besides f itself, to execute
// the program in f: the dynamic loader an ELF binary names, or the
// interpreter a "#!" script names (with its own loader, and the program
// "/usr/bin/env NAME" finds in path). A sandboxed process needs Execute on
// them to start at all. f is read with ReadAt, so its offset does not
// move.
func Interpreters(f *os.File, path string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(r io.ReaderAt, depth int)
	add := func(p string, depth int) {
		if p == "" || seen[p] || depth > 3 {
			return
		}
		seen[p] = true
		out = append(out, p)
		if g, err := os.Open(p); err == nil {
			visit(g, depth+1)
			g.Close()
		}
	}
	visit = func(r io.ReaderAt, depth int) {
		head := make([]byte, 256)
		n, _ := r.ReadAt(head, 0)
		head = head[:n]
		if strings.HasPrefix(string(head), "#!") {
			line, _, _ := strings.Cut(string(head[2:]), "\n")
			fields := strings.Fields(line)
			if len(fields) == 0 {
				return
			}
			add(fields[0], depth)
			if filepath.Base(fields[0]) == "env" && len(fields) > 1 && !strings.HasPrefix(fields[1], "-") {
				if found, err := lookPath(fields[1], path); err == nil {
					add(found, depth)
				}
			}
			return
		}
		e, err := elf.NewFile(r)
		if err != nil {
			return
		}
		for _, prog := range e.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			s, err := io.ReadAll(bufio.NewReader(prog.Open()))
			if err == nil {
				add(strings.TrimRight(string(s), "\x00"), depth)
			}
		}
	}
	visit(f, 0)
	return out
}

// lookPath finds name in the directories of pathList (a PATH value), as
// env would.
func lookPath(name, pathList string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// etcSecrets are the files and directories of /etc that hold secrets:
// password hashes, sudo's rules, private keys, stored credentials. A
// process that may read them (a host running as root: no capability is
// needed to read a file root owns) is given /etc but them; ssh's host
// keys are found by etcSecretCandidates.
var etcSecrets = []string{
	"shadow", "shadow-", "gshadow", "gshadow-",
	"sudoers", "sudoers.d",
	"ssl/private",
	"security/opasswd",
	"krb5.keytab",
	"NetworkManager/system-connections",
	"wpa_supplicant",
	"ppp/chap-secrets", "ppp/pap-secrets",
	"credstore", "credstore.encrypted",
	"libvirt/secrets",
	"wireguard",
}

// etcSecretCandidates are the paths of etcSecrets, and the private ssh
// host keys this system has.
func etcSecretCandidates() []string {
	paths, _ := filepath.Glob("/etc/ssh/ssh_host_*_key")
	for _, rel := range etcSecrets {
		paths = append(paths, filepath.Join("/etc", rel))
	}
	return paths
}

// A rule that lets a process read /etc (System's) lets it read all of
// /etc but its secrets: where the process could read them (a host running
// as root needs no capability to read a file root owns), a sandbox with a
// mount namespace of its own (Policy.Isolate) covers each with an empty
// file or directory (maskEtcSecrets); one without gets a read rule for
// every other entry of /etc instead of one for /etc (etcRules).

// etcSecretPaths are the secrets of this system's /etc that the calling
// process could read, worked out once per process; none for an ordinary
// user.
var etcSecretPaths = sync.OnceValue(func() []string {
	var readable []string
	for _, p := range etcSecretCandidates() {
		if unix.Faccessat(unix.AT_FDCWD, p, unix.R_OK, unix.AT_EACCESS) == nil {
			readable = append(readable, p)
		}
	}
	return readable
})

// etcRules are the read rules of /etc but its secrets (see
// withoutSecrets): every entry that is no secret and holds none, in the
// directories that hold one every other entry, and the names of all.
// They are worked out once per process.
var etcRules = sync.OnceValue(func() []Rule {
	return newSecretSet(etcSecretCandidates()).rulesBeneath("/etc", Read)
})
