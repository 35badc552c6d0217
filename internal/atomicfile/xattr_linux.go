package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// copyXattrs gives dst every extended attribute of src (ACLs and
// security labels among them). A file system without them has none to
// copy.
func copyXattrs(src, dst *os.File) error {
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	size, err := unix.Flistxattr(sfd, nil)
	if errors.Is(err, unix.ENOTSUP) || size == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	list := make([]byte, size)
	if size, err = unix.Flistxattr(sfd, list); err != nil {
		return err
	}
	for _, name := range bytes.Split(list[:size], []byte{0}) {
		if len(name) == 0 {
			continue
		}
		attr := string(name)
		n, err := unix.Fgetxattr(sfd, attr, nil)
		if err != nil {
			return fmt.Errorf("reading the extended attribute %s: %w", attr, err)
		}
		val := make([]byte, n)
		if n, err = unix.Fgetxattr(sfd, attr, val); err != nil {
			return fmt.Errorf("reading the extended attribute %s: %w", attr, err)
		}
		if err := unix.Fsetxattr(dfd, attr, val[:n], 0); err != nil {
			return fmt.Errorf("%w: the extended attribute %s: %w", ErrXattr, attr, err)
		}
	}
	return nil
}
