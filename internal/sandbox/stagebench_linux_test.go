package sandbox

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// BenchmarkStartIsolated measures starting and waiting for /bin/true in
// an isolated sandbox (the stage), against Start without isolation.
func BenchmarkStartIsolated(b *testing.B) {
	if err := NamespaceSupport(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    Policy
	}{
		{"thread", Policy{}},
		{"isolated", Policy{Isolate: true}},
		{"isolated-network", Policy{Isolate: true, Network: true}},
		{"isolated-limits", Policy{Isolate: true, Limits: Limits{Memory: 1 << 32, Processes: 2048, FileSize: 1 << 33}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f, err := os.Open("/bin/true")
				if err != nil {
					b.Fatal(err)
				}
				p := c.p
				p.Rules = append(System(false), Rule{Path: "/bin/true", File: f, Access: Read | Execute})
				p.Allow(Read|Execute, Interpreters(f, "")...)
				cmd := exec.Command("/bin/true")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				proc, err := Start(cmd, &p)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
				if err := proc.Wait(); err != nil {
					b.Fatal(err)
				}
				proc.Release()
			}
		})
	}
}
