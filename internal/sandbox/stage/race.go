//go:build race

package stage

// RaceEnabled: the program is built with the race detector, whose
// runtime maps gigabytes of writable shadow memory, which a memory limit
// (RLIMIT_DATA) counts: a stage built so (a test binary) could allocate
// nothing more under the limit it gives its program, which it sets on
// the program alone, once it runs.
const RaceEnabled = true
