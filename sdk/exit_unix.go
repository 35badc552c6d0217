//go:build unix

package sdk

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agenthost/agenthost/internal/wire"
)

// exitWithHost makes SIGTERM take the plugin's children down with it. The
// host starts each plugin as the leader of its own process group and, on
// Linux, asks the kernel to send it SIGTERM when the host dies, however it
// dies; on that signal the plugin leaves, killing its whole group, so a
// process a tool started does not outlive the host either.
func exitWithHost() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		leave(128 + int(syscall.SIGTERM))
	}()
}

// leave ends the plugin with status code, and its process group with it:
// once its host has gone (it closed the connection, or died), nothing the
// plugin started has a host to answer to. (A host that asks the plugin to
// shut down kills the group itself.) A
// plugin that made a socket of its own (for a host before protocol 1.5)
// removes the socket's directory, the host's to remove, which a dead host
// cannot.
func leave(code int) {
	if dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR"); dir != "" && os.Getenv(wire.ConnEnv) == "" {
		removeSocketDir(dir)
	}
	if pid := os.Getpid(); syscall.Getpgrp() == pid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	os.Exit(code)
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
