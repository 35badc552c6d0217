//go:build unix

package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/textsafe"
)

// WriteErr says what went wrong with a write of p through atomicfile, in
// the tool's words, saying in every case whether anything was written.
// An escape is the outside error, any other file system failure "P: what
// went wrong"; the call's own end (cancellation, deadline) passes
// through.
func WriteErr(p Path, err error) error {
	name := textsafe.Name(p.Arg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, atomicfile.ErrChanged):
		return fmt.Errorf("%s changed while it was being edited (another program wrote it meanwhile): nothing was written; read it again and redo the change", name)
	case errors.Is(err, atomicfile.ErrOwner):
		return fmt.Errorf("%s: %v: it belongs to another user, and only root outside the sandbox can give a file back to another user, so nothing was written", name, err)
	case errors.Is(err, atomicfile.ErrXattr):
		return fmt.Errorf("%s: %v: nothing was written", name, err)
	case errors.Is(err, atomicfile.ErrNoTime):
		return fmt.Errorf("%s: %v, so nothing was written; give the call more time", name, err)
	case errors.Is(err, atomicfile.ErrNotDurable):
		return fmt.Errorf("%s was written, but syncing its directory to disk failed (%s): the change may not survive a power cut", name, Reason(err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return p.Err(err)
}
