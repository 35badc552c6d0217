package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/workspace"
)

// TestSwapRace swaps ws/d between a directory and a link outside, as
// fast as it can, while the tools use paths under it: whatever each call
// answers, nothing outside is read or written.
func TestSwapRace(t *testing.T) {
	t.Parallel()
	c := newConfined(t)
	mustWrite(t, filepath.Join(c.root, "d", "secret.txt"), "inside d")
	// Two names, exchanged atomically: d and dl, one the directory, the
	// other the link.
	mustSymlink(t, c.outside, filepath.Join(c.root, "dl"))
	d, dl := filepath.Join(c.root, "d"), filepath.Join(c.root, "dl")
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dl, unix.RENAME_EXCHANGE); err != nil {
		t.Skip("no RENAME_EXCHANGE here:", err)
	}
	before := c.snapshot(t)

	stop := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dl, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
		}
	})
	outcomes := map[string]int{}
	var mu sync.Mutex
	note := func(name string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			outcomes[name+" ok"]++
		case errors.Is(err, workspace.ErrOutside):
			outcomes[name+" refused"]++
		default:
			outcomes[name+" other error"]++
		}
	}
	var workers sync.WaitGroup
	deadline := time.Now().Add(300 * time.Millisecond)
	calls := map[string]func(i int) (string, error){
		"write_file": func(i int) (string, error) {
			return call(t, c.root, writeFile, map[string]any{"path": "d/planted.txt", "content": "x"})
		},
		"read_file": func(i int) (string, error) {
			return call(t, c.root, readFile, map[string]any{"path": "d/secret.txt"})
		},
		"list_dir": func(i int) (string, error) {
			return call(t, c.root, listDir, map[string]any{"path": "d"})
		},
		"edit_file": func(i int) (string, error) {
			return call(t, c.root, editFile, map[string]any{"path": "d/secret.txt", "old_string": "SENTINEL", "new_string": "x"})
		},
		"remove": func(i int) (string, error) {
			return call(t, c.root, remove, map[string]any{"path": "d/secret.txt"})
		},
		"mkdir": func(i int) (string, error) {
			return call(t, c.root, mkdir, map[string]any{"path": "d/newdir"})
		},
		"move": func(i int) (string, error) {
			return call(t, c.root, move, map[string]any{"source": "d/secret.txt", "destination": fmt.Sprintf("taken/%d", i)})
		},
	}
	for name, f := range calls {
		workers.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				got, err := f(i)
				if strings.Contains(got, "SENTINEL") {
					t.Errorf("%s read outside: %q", name, got)
				}
				note(name, err)
			}
		})
	}
	workers.Wait()
	close(stop)
	swapper.Wait()
	t.Logf("outcomes: %v", outcomes)
	if after := c.snapshot(t); !maps.Equal(before, after) {
		t.Errorf("outside the root changed:\nbefore %v\nafter  %v", before, after)
	}
	// Whatever was moved out of d came from inside.
	taken, _ := filepath.Glob(filepath.Join(c.root, "taken", "*"))
	for _, p := range taken {
		if got := readString(t, p); got != "inside d" {
			t.Errorf("%s holds %q", p, got)
		}
	}
}
