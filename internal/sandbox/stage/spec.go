package stage

import (
	"encoding/binary"
	"errors"
	"math"
)

// The stage's descriptors, as the host gives them.
const (
	SpecFD    = 3 // the Spec, to its end
	ReportFD  = 4 // the stage's reports (see ReportStarted)
	RulesetFD = 5 // the Landlock ruleset the program enters
	// FirstFile is the first of the program's descriptors beyond 0, 1
	// and 2 (Spec.Files of them, which the program gets at 3 and
	// after), followed by the program's file when Spec.Exec is set.
	FirstFile = 6
)

// The stage's reports on ReportFD.
const (
	ReportStarted = 's' // the program runs
	ReportFailed  = 'e' // then: a byte saying what failed, the errno (4 bytes little-endian, 0 for none) and the message, to the end
	ReportExited  = 'x' // then: the program's wait status, 4 bytes little-endian

	// What failed, after ReportFailed.
	FailedWalls   = 'w' // setting up the namespaces
	FailedProgram = 'p' // starting the program, or anything else
)

// Spec is what the host tells the stage of the program to start.
type Spec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	// Files is how many descriptors the program gets beyond 0, 1 and 2
	// (see FirstFile).
	Files int
	// Exec: the program is executed through the descriptor after its
	// files, the stage's own of the file the host opened and checked,
	// whatever Path names by then.
	Exec bool
	// Namespaces: the stage was started in namespaces of its own, and
	// sets them up; PrivateNetwork: a network namespace among them.
	Namespaces     bool
	PrivateNetwork bool
	// Probe: set the namespaces up, report, and exit, starting nothing.
	Probe  bool
	Limits Limits
	// Filter is the system call filter, as the kernel takes it: struct
	// sock_filter after struct sock_filter, in the machine's byte order.
	// Empty: none.
	Filter []byte
	// EtcSecrets are the files and directories of /etc the stage covers
	// in its mount namespace.
	EtcSecrets []string
	// ProcRules are the Landlock rules beneath /proc, which the stage
	// adds to the ruleset once its own /proc is mounted.
	ProcRules []ProcRule
}

// Limits are the resource limits of the stage's program (see package
// sandbox's Limits). Zero is no limit.
type Limits struct {
	Memory    uint64
	Processes uint64
	FileSize  uint64
}

// ProcRule is a Landlock rule on a path beneath /proc: the rights it
// gives on a directory, and on a file.
type ProcRule struct {
	Path       string
	DirRights  uint64
	FileRights uint64
}

// Spec's flags, as encoded.
const (
	flagExec = 1 << iota
	flagNamespaces
	flagPrivateNetwork
	flagProbe
)

// MarshalBinary encodes s: each string and list with its length before
// it, each number in eight bytes, little-endian.
func (s *Spec) MarshalBinary() ([]byte, error) {
	var b []byte
	u := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	str := func(v string) { u(uint64(len(v))); b = append(b, v...) }
	strs := func(v []string) {
		u(uint64(len(v)))
		for _, x := range v {
			str(x)
		}
	}
	var flags uint64
	set := func(bit uint64, on bool) {
		if on {
			flags |= bit
		}
	}
	set(flagExec, s.Exec)
	set(flagNamespaces, s.Namespaces)
	set(flagPrivateNetwork, s.PrivateNetwork)
	set(flagProbe, s.Probe)
	str(s.Path)
	strs(s.Args)
	strs(s.Env)
	str(s.Dir)
	u(uint64(s.Files))
	u(flags)
	u(s.Limits.Memory)
	u(s.Limits.Processes)
	u(s.Limits.FileSize)
	str(string(s.Filter))
	strs(s.EtcSecrets)
	u(uint64(len(s.ProcRules)))
	for _, r := range s.ProcRules {
		str(r.Path)
		u(r.DirRights)
		u(r.FileRights)
	}
	return b, nil
}

var errMalformed = errors.New("a malformed description of the program")

// UnmarshalBinary decodes what MarshalBinary encoded.
func (s *Spec) UnmarshalBinary(b []byte) error {
	bad := false
	u := func() uint64 {
		if len(b) < 8 {
			bad = true
			return 0
		}
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v
	}
	str := func() string {
		n := u()
		if n > uint64(len(b)) {
			bad = true
			return ""
		}
		v := string(b[:n])
		b = b[n:]
		return v
	}
	count := func() int {
		// Each element takes eight bytes at least.
		n := u()
		if n > uint64(len(b))/8 {
			bad = true
			return 0
		}
		return int(n)
	}
	strs := func() []string {
		n := count()
		if n == 0 {
			return nil
		}
		v := make([]string, n)
		for i := range v {
			v[i] = str()
		}
		return v
	}
	*s = Spec{}
	s.Path = str()
	s.Args = strs()
	s.Env = strs()
	s.Dir = str()
	files := u()
	flags := u()
	s.Exec = flags&flagExec != 0
	s.Namespaces = flags&flagNamespaces != 0
	s.PrivateNetwork = flags&flagPrivateNetwork != 0
	s.Probe = flags&flagProbe != 0
	s.Limits.Memory = u()
	s.Limits.Processes = u()
	s.Limits.FileSize = u()
	if f := str(); f != "" {
		s.Filter = []byte(f)
	}
	s.EtcSecrets = strs()
	if n := count(); n > 0 {
		s.ProcRules = make([]ProcRule, n)
		for i := range s.ProcRules {
			s.ProcRules[i] = ProcRule{Path: str(), DirRights: u(), FileRights: u()}
		}
	}
	if bad || len(b) != 0 || files > math.MaxInt32 {
		return errMalformed
	}
	s.Files = int(files)
	return nil
}
