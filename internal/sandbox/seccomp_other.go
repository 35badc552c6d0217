//go:build !linux || !(amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

var errNoFilter = fmt.Errorf("%w: the seccomp filter is not available on %s/%s", errors.ErrUnsupported, runtime.GOOS, runtime.GOARCH)

// Program returns an error: the filter exists for linux/amd64 and
// linux/arm64 only.
func (f Filter) Program() ([]bpf.Instruction, error) { return nil, errNoFilter }

// InstallFilter returns an error: the filter exists for linux/amd64 and
// linux/arm64 only.
func InstallFilter(f Filter) error { return errNoFilter }

// SeccompSupport returns an error: the filter exists for linux/amd64 and
// linux/arm64 only.
func SeccompSupport() error { return errNoFilter }

func (f Filter) raw() ([]byte, error) { return nil, errNoFilter }
