package mcpserve

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/agenthost/internal/poll"
)

// TestPollableStdin checks that a pipe in blocking mode, as clients hand
// stdin over, is opened anew for the poller, that the pipe itself stays
// in blocking mode, and that the new file reads the pipe to its end and
// ends a read under way when closed.
func TestPollableStdin(t *testing.T) {
	stdin, w := blockingPipe(t)
	if err := stdin.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a pipe in blocking mode takes a read deadline (%v): the test's premise is wrong", err)
	}

	f, ok := pollableStdin(stdin)
	if !ok {
		t.Fatal("pollableStdin refused a pipe")
	}
	defer f.Close()
	if err := f.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Errorf("the pipe opened anew is not read through the poller: %v", err)
	}
	if flags, err := unix.FcntlInt(stdin.Fd(), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Errorf("stdin's flags are %#x (%v): it was switched to non-blocking mode", flags, err)
	}

	if _, err := w.WriteString("line one\nline two\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, err := io.ReadAll(f)
	if err != nil || string(data) != "line one\nline two\n" {
		t.Errorf("read %q, %v; want both lines, then the end", data, err)
	}

	// Closing the file ends a read under way, which closing stdin
	// through io.NopCloser never did.
	blocking, _ := blockingPipe(t)
	g, ok := pollableStdin(blocking)
	if !ok {
		t.Fatal("pollableStdin refused a pipe")
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.Read(make([]byte, 1))
		done <- err
	}()
	poll.Eventually(t, 5*time.Second, "the read waits in the poller", func() error {
		for _, g := range goroutines("TestPollableStdin") {
			if strings.Contains(g, "[IO wait") {
				return nil
			}
		}
		return errors.New("no read waits")
	})
	g.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("a read under way ended with %v, want %v", err, os.ErrClosed)
	}
}

// blockingPipe returns a pipe in blocking mode, as a client hands stdin
// over, closed when the test ends.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	return r, w
}

// TestPollableStdinOthers checks that what is not a pipe is read as it
// is.
func TestPollableStdinOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, r := range []io.Reader{file, strings.NewReader("{}\n")} {
		if f, ok := pollableStdin(r); ok {
			f.Close()
			t.Errorf("pollableStdin took %T, which is not a pipe", r)
		}
	}
}
