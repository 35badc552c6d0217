//go:build race

package sandbox

// raceEnabled: the program is built with the race detector, whose
// runtime maps gigabytes of writable shadow memory, which a memory limit
// (RLIMIT_DATA) counts: a stage built so (a test binary) could allocate
// nothing more under the limit it gives its program.
const raceEnabled = true
