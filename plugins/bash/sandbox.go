package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"

	"github.com/agenthost/agenthost/internal/sandbox"
)

// commandSandbox is what one command may do: the call's workspace roots,
// and what the host granted the plugin (AGENTHOST_SANDBOX), read, written
// and executed; the network only when granted. It is nil when the host
// runs the plugin unconfined (--sandbox off, or a kernel without
// Landlock).
type commandSandbox struct {
	Roots          []string
	Read           []string
	Write          []string
	List           []string
	Secrets        []string
	Network        bool
	UnixSockets    bool
	PrivateNetwork bool
}

// grantedSandbox is what the host told the plugin of its own sandbox, or
// nil when it runs unconfined.
var grantedSandbox = sync.OnceValues(func() (*commandSandbox, error) {
	v := os.Getenv(sandbox.Env)
	if v == "" {
		return nil, nil
	}
	var perms sandbox.Granted
	if err := json.Unmarshal([]byte(v), &perms); err != nil {
		return nil, fmt.Errorf("reading the plugin's sandbox from %s: %w", sandbox.Env, err)
	}
	return &commandSandbox{
		Read: perms.Read, Write: perms.Write, List: perms.List, Secrets: perms.Secrets,
		Network: perms.Network, UnixSockets: perms.UnixSockets, PrivateNetwork: !perms.Network && onlyLoopback(),
	}, nil
})

// onlyLoopback reports whether the plugin's network has no interface but
// loopback ones: a network namespace of its sandbox's own, which its
// commands share and from which nothing leaves.
func onlyLoopback() bool {
	ifaces, err := net.Interfaces()
	if err != nil || len(ifaces) == 0 {
		return false
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
	}
	return true
}

// sandboxFor is the sandbox of a command run with these workspace roots.
func sandboxFor(roots []string) (*commandSandbox, error) {
	granted, err := grantedSandbox()
	if granted == nil || err != nil {
		return nil, err
	}
	sb := *granted
	sb.Roots = roots
	return &sb, nil
}

// policy is the policy of the command: the system readable and its
// programs executable, the roots and the granted write paths (the
// temporary directory and the workspace's caches among them) read,
// written and executable, the granted read paths (the development
// profile's among them) read and executable, the names of the listed
// directories, and nothing of the secrets; the network, unix sockets and
// the plugin's own network namespace as the plugin's. Nothing of the
// plugin's own (its connection, its binary) is in it. The command runs
// in the plugin's namespaces and under its limits, which it inherits.
func (sb *commandSandbox) policy() *sandbox.Policy {
	p := &sandbox.Policy{Rules: sandbox.System(true), Network: sb.Network, UnixSockets: sb.UnixSockets, PrivateNetwork: sb.PrivateNetwork, Secrets: sb.Secrets}
	p.Allow(sandbox.Read|sandbox.Write|sandbox.Execute, sb.Roots...)
	p.Allow(sandbox.Read|sandbox.Write|sandbox.Execute, sb.Write...)
	p.Allow(sandbox.Read|sandbox.Execute, sb.Read...)
	p.Allow(sandbox.List, sb.List...)
	return p
}

// startCommand starts a command's shell, cmd, inside sb (nil: as the
// plugin itself runs). It is the one place a shell is started: on Linux
// in the command's watchdog process (see watchdogMain), elsewhere in the
// plugin.
//
// On Linux, cmd.SysProcAttr asks for a parent-death signal (Pdeathsig),
// which the kernel sends when the thread that started the shell ends: the
// locked thread sandbox.Start starts it from is kept until the process
// exits (release is never called), and the watchdog exits as soon as the
// shell and everything it started are gone.
func startCommand(cmd *exec.Cmd, sb *commandSandbox) error {
	if sb == nil {
		return cmd.Start()
	}
	_, err := sandbox.Start(cmd, sb.policy())
	if err != nil {
		return fmt.Errorf("confining the command: %w", err)
	}
	return nil
}
