//go:build !linux

package mcpserve

import (
	"io"
	"os"
)

// pollableStdin is Linux's alone: elsewhere stdin is read as it is.
func pollableStdin(io.Reader) (*os.File, bool) { return nil, false }
