//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-plugin"
)

// exitWithHost makes SIGTERM take the plugin's children down with it. The
// host starts each plugin as the leader of its own process group and, on
// Linux, asks the kernel to send it SIGTERM when the host dies, however it
// dies; on that signal the plugin removes its socket's directory and kills
// its whole group, so a process a tool started does not outlive the host
// either.
func exitWithHost() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		// The directory of the plugin's socket is the host's to remove,
		// but a dead host cannot.
		if dir := os.Getenv(plugin.EnvUnixSocketDir); dir != "" {
			removeSocketDir(dir)
		}
		if pid := os.Getpid(); syscall.Getpgrp() == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		os.Exit(128 + int(syscall.SIGTERM))
	}()
}

// removeSocketDir removes the socket directory dir, which holds only the
// plugin's sockets, by its path: the plugin's sandbox lets it remove what
// dir holds, and dir itself, but not list or open dir's parent, which
// os.RemoveAll would.
func removeSocketDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	_ = syscall.Rmdir(dir)
}
