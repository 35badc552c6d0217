package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// openedBinary is a plugin binary opened for one launch. What the launch
// checks — who may write it, its SHA-256 against the lock — is read from
// this one open file, and on Linux the process executes this very file
// (see execPath), not whatever the path names by then: a binary renamed
// over the plugin between the check and the exec never runs.
type openedBinary struct {
	path   string
	file   *os.File
	script bool // it starts with "#!"
}

// openBinary opens the plugin binary at path and checks it: a regular
// file that no one but the user and root can write (unless allowInsecure),
// whose SHA-256 the lock lists under its name (when lock is not nil). The
// caller closes it once the process has started.
func openBinary(path string, lock *Lock, allowInsecure bool) (*openedBinary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b := &openedBinary{path: path, file: f}
	if err := b.check(lock, allowInsecure); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

func (b *openedBinary) check(lock *Lock, allowInsecure bool) error {
	info, err := b.file.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errors.New("it is not a regular file")
	}
	if err := checkOpenedBinary(b.path, info); err != nil && !allowInsecure {
		return err
	}
	if lock != nil {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(b.file, 0, math.MaxInt64)); err != nil {
			return fmt.Errorf("checking %s against the lock file: %w", b.path, err)
		}
		if err := lock.CheckSum(b.path, hex.EncodeToString(h.Sum(nil))); err != nil {
			return err
		}
	}
	b.script = isScript(b.file)
	return nil
}

// isScript reports whether the file f starts with "#!": a script, which
// the kernel runs with the interpreter that line names.
func isScript(f io.ReaderAt) bool {
	var magic [2]byte
	n, _ := f.ReadAt(magic[:], 0)
	return n == len(magic) && string(magic[:]) == "#!"
}

func (b *openedBinary) close() {
	if b != nil {
		b.file.Close()
	}
}
