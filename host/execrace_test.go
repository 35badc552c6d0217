package host

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// execRaceLaunches is how many launches TestLockedLaunchRunsWhatWasHashed
// makes while the binary is being swapped.
const execRaceLaunches = 150

// A binary swapped for an unlisted one between the lock check and the exec
// never runs: the host hashes the file it opened and executes that very
// file. Another process renames an unlisted script over the plugin, and
// back, in a tight loop, while the host launches it again and again; the
// unlisted script leaves a line in a file each time it runs.
func TestLockedLaunchRunsWhatWasHashed(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	ran := filepath.Join(stage, "RAN")
	listed := filepath.Join(stage, "listed")
	unlisted := filepath.Join(stage, "unlisted")
	writeExec(t, listed, "#!/bin/sh\nexit 0\n")
	writeExec(t, unlisted, "#!/bin/sh\necho ran >> "+ran+"\n")
	bin := filepath.Join(dir, PluginPrefix+"swap")
	if err := os.Link(listed, bin); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLockFile(dir, ""); err != nil {
		t.Fatal(err)
	}
	lock, err := ReadLockFile(filepath.Join(dir, LockFileName))
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var swaps int
	var wg sync.WaitGroup
	wg.Go(func() {
		tmp := filepath.Join(dir, ".swap")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := listed
			if i%2 == 1 {
				src = unlisted
			}
			// rename of a hard link to the file it replaces does nothing
			// and leaves tmp: remove it first.
			os.Remove(tmp)
			if os.Link(src, tmp) == nil && os.Rename(tmp, bin) == nil {
				swaps++
			}
		}
	})
	p := newToolSource(pluginKind{}, bin, hclog.NewNullLogger(), 5*time.Second, 0)
	p.lock = lock
	var refused int
	for range execRaceLaunches {
		inst, err := p.launch()
		if err == nil {
			inst.Stop(true)
		}
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			refused++
		}
	}
	close(stop)
	wg.Wait()

	data, _ := os.ReadFile(ran)
	runs := bytes.Count(data, []byte("ran\n"))
	t.Logf("%d launches during %d swaps: %d refused by the lock, %d ran the unlisted script", execRaceLaunches, swaps, refused, runs)
	if runs > 0 {
		t.Errorf("the unlisted script ran %d times in %d launches", runs, execRaceLaunches)
	}
}
