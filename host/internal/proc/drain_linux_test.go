//go:build linux

package proc

import (
	"os"
	"testing"
)

// unread sees what a pipe holds that has not been read: the last words of
// a plugin that the host has not got to when the plugin exits, which are
// read before the pipe is closed.
func TestUnreadSeesOutputLeftInAPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if unread(r) {
		t.Error("an empty pipe holds unread output")
	}
	if _, err := w.Write([]byte("Error: last words\n")); err != nil {
		t.Fatal(err)
	}
	if !unread(r) {
		t.Error("a pipe holding a line holds no unread output")
	}
	buf := make([]byte, 64)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	if unread(r) {
		t.Error("a pipe read to its end holds unread output")
	}
}
