package host

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/internal/atomicfile"
)

// LockFileName is the lock file's name in the plugins directory, where it
// is looked for unless Options.LockFile names another.
const LockFileName = "agenthost.lock"

// lockHeader starts every lock file WriteLockFile writes.
const lockHeader = `# agenthost.lock: the SHA-256 of every plugin binary agenthost may run.
# Written by "agenthost plugins lock". While this file exists, a plugin
# binary that it does not list, or whose SHA-256 differs, is refused
# before it is executed.
`

// LockEntry is one plugin binary in a lock file.
type LockEntry struct {
	// Name is the binary's file name, such as "agenthost-plugin-fs".
	Name string
	// SHA256 is the SHA-256 of its content, in lower-case hex.
	SHA256 string
}

// Lock is a lock file as read: the plugin binaries the host may run, by
// file name, with their SHA-256. A nil *Lock is no lock file: it allows
// every binary.
type Lock struct {
	// Path is the lock file's path.
	Path string
	// Entries are its lines, sorted by name.
	Entries []LockEntry

	sums map[string]string // name → hex SHA-256
}

// LockError is a plugin binary that a lock file refuses.
type LockError struct {
	// Binary is the refused binary's path; LockFile the lock file's.
	Binary, LockFile string
	// Got is the binary's SHA-256; Want what the lock file says, or ""
	// when it does not list the binary.
	Got, Want string
}

func (e *LockError) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("%s is not in the lock file %s (its SHA-256 is %s)", e.Binary, e.LockFile, e.Got)
	}
	return fmt.Sprintf("%s: its SHA-256 is %s, the lock file %s says %s", e.Binary, e.Got, e.LockFile, e.Want)
}

// Is makes a changed binary match go-plugin's plugin.ErrChecksumsDoNotMatch.
func (e *LockError) Is(target error) bool {
	return target == plugin.ErrChecksumsDoNotMatch && e.Want != ""
}

// LockFilePath is where the lock file of the plugins directory dir is:
// lockFile if set, else dir/agenthost.lock.
func LockFilePath(dir, lockFile string) string {
	if lockFile != "" {
		return lockFile
	}
	return filepath.Join(dir, LockFileName)
}

// WriteLockFile hashes every plugin binary in dir (those LoadPlugins
// would start) and writes their SHA-256 to the lock file at path, or
// dir/agenthost.lock when path is "", replacing it atomically. It returns
// the entries written, sorted by name. No plugin is executed.
func WriteLockFile(dir, path string) ([]LockEntry, error) {
	paths, err := findPlugins(dir)
	if err != nil {
		return nil, err
	}
	entries := make([]LockEntry, 0, len(paths))
	for _, p := range paths {
		sum, err := fileSHA256(p)
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", p, err)
		}
		entries = append(entries, LockEntry{Name: filepath.Base(p), SHA256: sum})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })

	var buf bytes.Buffer
	buf.WriteString(lockHeader)
	for _, e := range entries {
		fmt.Fprintf(&buf, "sha256:%s  %s\n", e.SHA256, e.Name)
	}
	path = LockFilePath(dir, path)
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("writing the lock file: %w", err)
	}
	return entries, nil
}

// ReadLockFile reads the lock file at path. A missing file is no lock:
// ReadLockFile returns nil and no error. A file that cannot be read or
// parsed is an error, never no lock, so that a damaged lock file does not
// let every binary run.
func ReadLockFile(path string) (*Lock, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lock file: %w", err)
	}
	defer f.Close()
	lock := &Lock{Path: path, sums: map[string]string{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := line, "", false
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			sum, name, ok = line[:i], strings.TrimSpace(line[i:]), true
		}
		hexSum, isSHA := strings.CutPrefix(sum, "sha256:")
		if !ok || name == "" || !isSHA || !isHexSHA256(hexSum) || strings.ContainsAny(name, `/\`) {
			return nil, fmt.Errorf("the lock file %s, line %d: want \"sha256:<64 hex digits>  <file name>\", got %q", path, n, line)
		}
		hexSum = strings.ToLower(hexSum)
		if prev, dup := lock.sums[name]; dup && prev != hexSum {
			return nil, fmt.Errorf("the lock file %s, line %d: %s is listed twice with different hashes", path, n, name)
		}
		lock.sums[name] = hexSum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the lock file %s: %w", path, err)
	}
	for name, sum := range lock.sums {
		lock.Entries = append(lock.Entries, LockEntry{Name: name, SHA256: sum})
	}
	sort.Slice(lock.Entries, func(i, j int) bool { return lock.Entries[i].Name < lock.Entries[j].Name })
	return lock, nil
}

func isHexSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Check hashes the binary at binaryPath and returns a *LockError when the
// lock does not list its file name or lists another SHA-256. A nil lock
// allows everything.
func (l *Lock) Check(binaryPath string) error {
	if l == nil {
		return nil
	}
	got, err := fileSHA256(binaryPath)
	if err != nil {
		return fmt.Errorf("checking %s against the lock file: %w", binaryPath, err)
	}
	return l.CheckSum(binaryPath, got)
}

// CheckSum is Check for a binary whose SHA-256 (hex) is known already,
// such as one a description cache recorded for the binary's unchanged
// stat: it reads no file.
func (l *Lock) CheckSum(binaryPath, sum string) error {
	if l == nil {
		return nil
	}
	sum = strings.ToLower(sum)
	if want := l.sums[filepath.Base(binaryPath)]; sum != want {
		return &LockError{Binary: binaryPath, LockFile: l.Path, Got: sum, Want: want}
	}
	return nil
}

// Lists returns a *LockError when the lock does not list the binary's file
// name; it hashes the binary only then, for the message. A nil lock lists
// everything.
func (l *Lock) Lists(binaryPath string) error {
	if l == nil {
		return nil
	}
	if _, ok := l.sums[filepath.Base(binaryPath)]; ok {
		return nil
	}
	got, err := fileSHA256(binaryPath)
	if err != nil {
		got = "unknown (" + err.Error() + ")"
	}
	return &LockError{Binary: binaryPath, LockFile: l.Path, Got: got}
}

// SecureConfig returns go-plugin's integrity check for the binary at
// binaryPath: its SHA-256 as the lock file records it. A SecureConfig
// holds a running hash, so each check needs a new one. It is an error
// when the lock does not list the binary; a nil lock returns nil, nil.
func (l *Lock) SecureConfig(binaryPath string) (*plugin.SecureConfig, error) {
	if l == nil {
		return nil, nil
	}
	if err := l.Lists(binaryPath); err != nil {
		return nil, err
	}
	sum, err := hex.DecodeString(l.sums[filepath.Base(binaryPath)])
	if err != nil {
		return nil, err // ReadLockFile validated it
	}
	return &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}, nil
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
