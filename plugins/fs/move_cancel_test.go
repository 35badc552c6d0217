package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/internal/workspace"
)

// countdownCtx is a context that reports itself cancelled from its n-th
// Err call on: a cancel arriving at a chosen point of a copy.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// A move by copy cancelled at any point removes its partial copy and
// leaves the source as it was; once it gets past the last check it
// completes. Every point where it checks is tried.
func TestMoveByCopyCancelled(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3<<20+5) // several copy chunks
	for n := int64(0); ; n++ {
		root := t.TempDir()
		mustWrite(t, filepath.Join(root, "src/a.txt"), "a")
		mustWrite(t, filepath.Join(root, "src/sub/big.bin"), big)
		mustSymlink(t, "a.txt", filepath.Join(root, "src/link"))
		mustWrite(t, filepath.Join(root, "out/keep.txt"), "k")
		w, err := workspace.Open([]string{root})
		if err != nil {
			t.Fatal(err)
		}
		src, _ := w.Resolve("src")
		dst, _ := w.Resolve("out/moved")
		ctx := &countdownCtx{Context: t.Context()}
		ctx.n.Store(n)
		err = moveByCopy(ctx, src, dst, false)
		w.Close()
		if err == nil {
			checkFiles(t, root, map[string]string{"out/moved/a.txt": "a", "out/moved/sub/big.bin": big, "src": ""})
			checkNoTemp(t, filepath.Join(root, "out"))
			if n < 3 {
				t.Errorf("the move completed with a cancel at check %d", n)
			}
			return
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel at check %d: %v, want context.Canceled", n, err)
		}
		checkFiles(t, root, map[string]string{"src/a.txt": "a", "src/sub/big.bin": big, "out/moved": "", "out/keep.txt": "k"})
		if target, err := os.Readlink(filepath.Join(root, "src/link")); err != nil || target != "a.txt" {
			t.Errorf("cancel at check %d: the source link is %q, %v", n, target, err)
		}
		checkNoTemp(t, filepath.Join(root, "out"))
		if n > 100 {
			t.Fatal("the move never completes")
		}
	}
}
