// Package stage is the first process of a sandbox started with
// Policy.Isolate (package sandbox): the host's own executable again
// (/proc/self/exe), which this package's init recognises by Arg and Env,
// and runs as the stage. The package imports little, so that its init
// runs before almost any other package of the program is initialised:
// a stage starts in about a millisecond, whatever the program around it
// links in.
//
// The host starts the stage in new namespaces (a user namespace in which
// it keeps, for its set-up only, the capabilities to mount and to
// configure a network interface; a PID namespace, of which it is the
// first process; a mount namespace; and without the network, a network
// namespace), and it:
//
//  1. reads the program's description (Spec) from descriptor SpecFD;
//  2. mounts a /proc of its own PID namespace, so that the program sees
//     no other process, covers /etc's secrets, and brings up the
//     loopback interface of its own network namespace;
//  3. sets the limits (SetLimits), which the program inherits;
//  4. adds the rules beneath its /proc to the Landlock ruleset the host
//     built (descriptor RulesetFD), enters it, drops every capability,
//     installs the system call filter the host assembled, and starts
//     the program from that thread;
//  5. reports on descriptor ReportFD that the program runs, or why it
//     does not;
//  6. reaps what ends beneath it, passes on the signals that ask the
//     program to stop, and when the program has ended, reports its wait
//     status and exits. A PID namespace dies with its first process:
//     the kernel kills whatever the program left behind, whatever
//     session or group it moved to.
//
// The host gives the stage a parent-death signal, SIGKILL: a host that
// dies takes its sandboxes with it. Where the kernel allows no user
// namespace to an unprivileged process, the stage runs without
// namespaces as a child subreaper: what the program leaves behind is its
// child then, and it kills all of it when the program ends or the host
// dies (its parent-death signal is SIGTERM then, which it handles).
package stage
