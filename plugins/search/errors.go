package main

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/agenthost/agenthost/internal/textsafe"
	"github.com/agenthost/agenthost/internal/workspace"
)

// pathError says what is wrong with a path the call named (arg, as the
// call gave it), from the error of an operation on it: in the tools'
// words, never with the system call or the root-relative name that the
// error came with.
func pathError(arg string, err error) error {
	if err == nil {
		return nil
	}
	if workspace.IsEscape(err) || errors.Is(err, workspace.ErrOutside) {
		return workspace.OutsideError(arg)
	}
	name := textsafe.Name(arg)
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file or directory", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", name)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: too many levels of symbolic links (a link that leads to itself?)", name)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, errNotDir):
		return fmt.Errorf("%s: a part of the path is not a directory", name)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%s: the path or a name in it is too long", name)
	case errors.Is(err, errNotRegular):
		return fmt.Errorf("%s is not a file or a directory", name)
	case errors.Is(err, errTooLarge):
		return fmt.Errorf("%s is larger than %d MiB", name, maxFileSize>>20)
	case errors.As(err, &errno):
		return fmt.Errorf("%s: %s", name, errno.Error())
	}
	return fmt.Errorf("%s cannot be read", name)
}
