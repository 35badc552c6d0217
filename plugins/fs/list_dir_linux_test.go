package main

import (
	"io/fs"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDtypeBits(t *testing.T) {
	t.Parallel()
	tests := map[uint8]fs.FileMode{
		unix.DT_REG:  0,
		unix.DT_DIR:  fs.ModeDir,
		unix.DT_LNK:  fs.ModeSymlink,
		unix.DT_FIFO: fs.ModeNamedPipe,
		unix.DT_SOCK: fs.ModeSocket,
		unix.DT_CHR:  fs.ModeDevice | fs.ModeCharDevice,
		unix.DT_BLK:  fs.ModeDevice,
	}
	for dt, want := range tests {
		if got, ok := dtypeBits(dt); !ok || got != want {
			t.Errorf("dtypeBits(%d) = %v, %v; want %v, true", dt, got, ok, want)
		}
	}
	// An unknown type is stat'ed.
	if _, ok := dtypeBits(unix.DT_UNKNOWN); ok {
		t.Error("dtypeBits(DT_UNKNOWN) is known")
	}
}
