//go:build linux && !amd64 && !arm64

package stage

// sysSeccomp: the host assembles no filter here (see package sandbox's
// SeccompSupport).
const sysSeccomp = -1
